"""Savepoints where production keeps them: a real S3-compatible store (S3Proxy on 127.0.0.1), the Flink cluster
writing its checkpoints and savepoints there through its S3 filesystem plugin, and splitaudit reading `s3://`
directly (`inspect`, `audit`, the `flink_savepoint` data source) with the same results as from a downloaded
copy; the hostile-input rules hold for objects as for files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

from splitaudit.audit.checks.findings import DOUBLE_ASSIGNMENT
from splitaudit.progress import Progress
from splitaudit.savepoint.fileio import s3_filesystem
from splitaudit_lab.scenario.restore import ScenarioSettings, pipeline_jar, run_restore_scenario
from splitaudit_lab.scenario.results import ScenarioReport
from splitaudit_lab.stack.object_store import ObjectStore
from splitaudit_lab.stack.stack import Stack
from tests.unit.conftest import fixture

pytestmark = pytest.mark.integration

SETTINGS = ScenarioSettings(partitions=4, records=2_000, parallelism=2)
PER_PARTITION = 2 * SETTINGS.records // SETTINGS.partitions  # offsets 0..499 in each partition
FILE_BACKED = "1.20.3-savepoint-native-files-snappy"  # a savepoint with state files beside _metadata


@pytest.fixture(scope="module")
def s3_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with Stack(tmp_path_factory.mktemp("s3-stack"), object_store=True).running(Progress()) as running:
        yield running


@pytest.fixture(scope="module")
def store(s3_stack: Stack) -> Iterator[ObjectStore]:
    """The stack's store, with the standard AWS variables pointing this process (and its children) at it."""
    store = s3_stack.store
    assert store is not None
    with pytest.MonkeyPatch.context() as patch:
        for name in ("AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
            patch.delenv(name, raising=False)
        for name, value in store.environment().items():
            patch.setenv(name, value)
        yield store


@pytest.fixture(scope="module")
def stock(s3_stack: Stack, store: ObjectStore, tmp_path_factory: pytest.TempPathFactory) -> ScenarioReport:
    run_dir = tmp_path_factory.mktemp("stock-s3") / "run"
    return run_restore_scenario(s3_stack, run_dir, pipeline_jar("stock"), "stock", Progress(), SETTINGS)


def _key(uri: str) -> str:
    """`s3://bucket/key` as pyarrow's S3 path `bucket/key`."""
    return uri.removeprefix("s3://").rstrip("/")


def _download(uri: str, target: Path) -> Path:
    target.mkdir()
    pafs.copy_files(
        _key(uri),
        str(target),
        source_filesystem=s3_filesystem(os.environ),
        destination_filesystem=pafs.LocalFileSystem(),
    )
    return target


def _cli(*args: str, expect: int) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "splitaudit", *args], capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == expect, done.stderr[-3000:]
    return done


def _json(*args: str, expect: int) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(_cli("--json", *args, expect=expect).stdout)
    return document


def test_the_job_keeps_its_state_on_s3_and_splitaudit_reads_it_there(
    stock: ScenarioReport, store: ObjectStore, tmp_path: Path
) -> None:
    before, after = stock.savepoint_before, stock.savepoint_after
    assert before.startswith(store.uri("runs") + "/")
    assert after.startswith(store.uri("runs") + "/")
    s3 = s3_filesystem(os.environ)
    # Listed one level at a time: S3A's kept "directory" markers list as objects, so a recursive listing stops
    # at each chk-N.
    job = s3.get_file_info(pafs.FileSelector(_key(store.uri("flink", "checkpoints", stock.job_id_after))))
    retained = [i.base_name for i in job if s3.get_file_info(f"{i.path}/_metadata").type == pafs.FileType.File]
    assert retained, "no retained checkpoint of the restored job on s3"
    # The scenario's own audit read both savepoints from s3://: stock Beam's twin readers after the restore.
    assert [(f.kind, f.partition, f.count, f.offset_ranges) for f in stock.audit.findings] == [
        (DOUBLE_ASSIGNMENT, p, PER_PARTITION // 2, ((PER_PARTITION // 2, PER_PARTITION - 1),)) for p in range(4)
    ]

    local_before, local_after = _download(before, tmp_path / "before"), _download(after, tmp_path / "after")
    remote = _json("inspect", after, expect=0)
    local = _json("inspect", str(local_after), expect=0)
    assert (remote.pop("path"), local.pop("path")) == (f"{_key(after)}/_metadata", f"{local_after}/_metadata")
    assert remote == local
    (source,) = [op["source"] for op in remote["operators"] if op["source"]]
    held = sorted(
        (p["partition"], p["next_offset"])
        for split in source["reader_splits"]
        for p in split["split"]["checkpoint"]["partitions"]
    )
    assert held == [(p, PER_PARTITION) for p in range(4)]

    args = ("--partitions", "4", "--master", "local[1]")
    remote_audit = _json("audit", "--savepoint", after, "--before", before, *args, expect=0)
    local_audit = _json("audit", "--savepoint", str(local_after), "--before", str(local_before), *args, expect=0)
    text = json.dumps(remote_audit)
    for uri, copy in ((after, local_after), (before, local_before)):
        text = text.replace(uri, str(copy)).replace(_key(uri), str(copy))
    assert json.loads(text) == local_audit
    assert [(p["partition"], p["status"]) for p in remote_audit["assignment"][0]["partitions"]] == [
        (p, "ok") for p in range(4)
    ]

    script = (
        "import json, sys\n"
        "from splitaudit.clients.spark import spark_session\n"
        "spark = spark_session('local[1]', app_name='datasource-on-s3')\n"
        "for path in sys.argv[1:]:\n"
        "    rows = spark.read.format('flink_savepoint').load(path).collect()\n"
        "    print(json.dumps(sorted([r.asDict() for r in rows], key=lambda r: (r['subtask'], r['partition']))))\n"
        "spark.stop()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, after, str(local_after)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    from_s3, from_copy = (json.loads(line) for line in done.stdout.splitlines())
    assert from_s3 == from_copy
    assert [(r["partition"], r["next_offset"]) for r in from_s3] == [(p, PER_PARTITION) for p in (0, 2, 1, 3)]


def _upload(local: Path, uri: str) -> None:
    pafs.copy_files(
        str(local),
        _key(uri),
        source_filesystem=pafs.LocalFileSystem(),
        destination_filesystem=s3_filesystem(os.environ),
    )


def test_hostile_objects_are_refused_as_hostile_files_are(store: ObjectStore, tmp_path: Path) -> None:
    snapshot = fixture(FILE_BACKED).snapshot
    good = store.uri("hostile", "good")
    _upload(snapshot, good)
    assert (
        _json("inspect", good, expect=0)["checkpoint_id"] == _json("inspect", str(snapshot), expect=0)["checkpoint_id"]
    )

    # An object larger than the bound is refused by its size, before it is read.
    size = (snapshot / "_metadata").stat().st_size
    refused = _cli("inspect", "--max-file-size", str(size - 1), good, expect=2).stderr
    expected = f"{_key(good)}/_metadata: file of {size} bytes is larger than --max-file-size {size - 1}"
    assert expected in refused
    state = sorted(p for p in snapshot.iterdir() if p.name != "_metadata")[0]

    # A relative handle climbing out of the savepoint prefix, to an object that does exist there.
    escape = tmp_path / "escape"
    escape.mkdir()
    data = (snapshot / "_metadata").read_bytes()
    victim = state.name.encode()
    climb = b"../" * 10 + b"secret"  # as long as the UUID it replaces, so every length stays valid
    assert len(climb) == len(victim)
    (escape / "_metadata").write_bytes(data.replace(victim, climb))
    for other in snapshot.iterdir():
        if other.name != "_metadata":
            (escape / other.name).write_bytes(other.read_bytes())
    _upload(escape, store.uri("hostile", "escape"))
    s3 = s3_filesystem(os.environ)
    with s3.open_output_stream(_key(store.uri("secret"))) as out:
        out.write(b"outside")
    refused = _cli("inspect", store.uri("hostile", "escape"), expect=2).stderr
    assert "'../../../../../../../../../../secret' points outside the savepoint dir" in refused
    assert len(refused.strip().splitlines()) == 1

    # `_metadata` that is not an object but a prefix (a "directory") is not read.
    with s3.open_output_stream(_key(store.uri("hostile", "prefix", "_metadata", "x"))) as out:
        out.write(b"x")
    refused = _cli("inspect", store.uri("hostile", "prefix"), expect=2).stderr
    assert "not a regular file" in refused
