"""The wheel with its `[stack]` extra, as a user of the embedded stack installs it (uv, fresh venv outside the
repository, the extra's dependencies held to requirements.lock's pins): `splitaudit setup` installs the stack from
the stack lock the wheel carries, exactly as the checkout has it, and assembles the demo's job jars, with no
network (its downloads/ seeded with the checkout's files), no pip, no Maven and nothing written into the package;
`demo` then gives the checkout demo's verdict on that stack; `audit` judges a Parquet sink on local Spark and the
`flink_savepoint` data source reads a savepoint, as the checkout does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from splitaudit.home import (
    REPO_ROOT,
    flink_home,
    flink_plugins,
    kafka_libs,
    s3proxy_libs,
    spark_avro_jars,
    spark_kafka_jars,
)
from tests.integration.test_cli_demo import assert_the_verdict_of_2000_records
from tests.integration.wheel_install import install, outside_env, run, seed, tree

pytestmark = pytest.mark.integration

SAVEPOINT = REPO_ROOT / "fixtures" / "beam_flink_source" / "restore_stock_before"
TOPIC = "restore-stock-3b5fcb84"  # the topic the savepoint's source reads: next offset 5000 in partitions 0-3
COMPONENTS = ["flink", "kafka-broker", "spark-kafka", "spark-avro", "s3proxy", "flink-s3-fs-hadoop", "demo-pipeline"]


class Installed:
    """The venv's bin/ folder, the user's folder (cwd, HOME and XDG_DATA_HOME beneath it) and the package's files
    as installed, before setup ran."""

    def __init__(self, bin_dir: Path, cwd: Path) -> None:
        self.bin_dir, self.cwd = bin_dir, cwd
        self.home = (cwd / "data" / "splitaudit").resolve()
        self.site = next(bin_dir.parent.glob("lib/python*/site-packages"))
        self.package = _package_files(self.site)


def _package_files(site: Path) -> set[str]:
    return {path for path in tree(site) if "__pycache__" not in path}


def _json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """`splitaudit[stack]` installed by uv, and the user's folder with the stack home's downloads/ seeded."""
    user = tmp_path_factory.mktemp("stack-user")
    found = Installed(install("uv", wheel, tmp_path_factory.mktemp("stack-venv"), extra="stack"), user)
    seed(found.home / "downloads")
    return found


@pytest.fixture(scope="module")
def first_setup(installed: Installed) -> subprocess.CompletedProcess[str]:
    """`splitaudit --json setup` from the wheel, with no network."""
    return run(installed.bin_dir, "--json", "setup", cwd=installed.cwd, offline=True, timeout=900)


def test_setup_from_the_wheel_installs_the_stack_as_the_checkout_has_it(
    installed: Installed, first_setup: subprocess.CompletedProcess[str]
) -> None:
    assert first_setup.returncode == 0, first_setup.stderr
    report = _json(first_setup)
    assert report["stack_home"] == str(installed.home)
    assert report["downloaded_bytes"] == 0
    assert [(c["name"], c["state"], c["reason"]) for c in report["components"]] == [
        (name, "installed", None) for name in COMPONENTS
    ]
    home = installed.home
    for folder in ("bin", "conf", "lib", "opt", "plugins"):
        assert tree(home / "flink-1.19.3" / "pyflink" / folder) == tree(flink_home() / folder), folder
    assert tree(home / "kafka-3.9.1" / "libs") == tree(kafka_libs())
    assert tree(home / "s3proxy-2.6.0" / "libs") == tree(s3proxy_libs())
    assert tree(home / "flink-1.19.3-plugins") == tree(flink_plugins())
    assert tree(home / "spark-kafka-4.2.0" / "jars") == tree(spark_kafka_jars())
    assert tree(home / "spark-avro-4.2.0" / "jars") == tree(spark_avro_jars())
    # The demo's job jars, assembled (test_job_jar: entry for entry the reactor's), the patched one by patch-jar.
    assert sorted(tree(home / "jobs")) == ["splitaudit-pipeline-patched.jar", "splitaudit-pipeline-stock.jar"]
    with zipfile.ZipFile(home / "jobs" / "splitaudit-pipeline-stock.jar") as stock:
        assert len(stock.infolist()) == 62_576
    with zipfile.ZipFile(home / "jobs" / "splitaudit-pipeline-patched.jar") as patched:
        assert len(patched.infolist()) == 62_579
    assert _package_files(installed.site) == installed.package


def test_a_second_setup_from_the_wheel_finds_everything_present(
    installed: Installed, first_setup: subprocess.CompletedProcess[str]
) -> None:
    assert first_setup.returncode == 0, first_setup.stderr
    second = run(installed.bin_dir, "--json", "setup", cwd=installed.cwd, offline=True)
    assert second.returncode == 0, second.stderr
    assert [(c["name"], c["state"], c["downloaded_bytes"]) for c in _json(second)["components"]] == [
        (name, "present", 0) for name in COMPONENTS
    ]
    assert "downloading into" not in second.stderr


def test_demo_from_the_wheel_shows_the_double_read_and_its_fix(
    installed: Installed, first_setup: subprocess.CompletedProcess[str]
) -> None:
    assert first_setup.returncode == 0, first_setup.stderr
    run_dir = installed.cwd / "demo"
    result = run(
        installed.bin_dir, "--json", "demo", "--workdir", str(run_dir), "--records", "2000", cwd=installed.cwd,
        timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = _json(result)
    assert report["as_expected"] is True
    stock, patched = report["stock"], report["patched"]
    for side, variant in ((stock, "stock"), (patched, "patched")):
        assert side["jar"] == str(installed.home / "jobs" / f"splitaudit-pipeline-{variant}.jar")
    assert_the_verdict_of_2000_records(stock, patched)


def test_audit_from_the_wheel_judges_a_parquet_sink_as_the_checkout_does(installed: Installed) -> None:
    sink = installed.cwd / "sink"
    sink.mkdir()
    # Partition 0 holds offsets 1000..1999 twice, partition 1 lacks 2000..2999; 2 and 3 are whole.
    runs = [(0, range(5000)), (0, range(1000, 2000)), (1, range(2000)), (1, range(3000, 5000))]
    runs += [(2, range(5000)), (3, range(5000))]
    partitions = [p for p, offsets in runs for _ in offsets]
    offsets = [o for _, offsets in runs for o in offsets]
    table = pa.table({"topic": [TOPIC] * len(offsets), "partition": partitions, "offset": offsets})
    pq.write_table(table, sink / "part-0.parquet")
    args = ("--json", "audit", "--sink", str(sink), "--savepoint", str(SAVEPOINT))

    result = run(installed.bin_dir, *args, cwd=installed.cwd)
    checkout = subprocess.run([sys.executable, "-m", "splitaudit", *args], capture_output=True, text=True, timeout=300)

    assert (result.returncode, checkout.returncode) == (1, 1), result.stderr
    report = _json(result)
    assert [(f["kind"], f["partition"], f["count"], f["offset_ranges"]) for f in report["findings"]] == [
        ("missing_records", 1, 1000, [[2000, 2999]]),
        ("duplicate_records", 0, 1000, [[1000, 1999]]),
    ]
    assert [(c["partition"], c["rows"], c["distinct"]) for c in report["coverage"]] == [
        (0, 6000, 5000),
        (1, 4000, 4000),
        (2, 5000, 5000),
        (3, 5000, 5000),
    ]
    expected = _json(checkout)
    assert (report["findings"], report["coverage"], report["summary"]) == (
        expected["findings"],
        expected["coverage"],
        expected["summary"],
    )


DATA_SOURCE = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
rows = spark.read.format("flink_savepoint").load(sys.argv[1]).collect()
print(json.dumps([[r["subtask"], r["topic"], r["partition"], r["next_offset"]] for r in rows]))
spark.stop()
"""


def test_the_data_source_from_the_wheel_reads_the_savepoints_splits(installed: Installed) -> None:
    # The venv activated, as a user runs a notebook or a script in it: Spark's Python workers (`python3` on PATH,
    # where the data source is looked up) are the venv's Python.
    env = outside_env(installed.cwd)
    env |= {"PATH": f"{installed.bin_dir}{os.pathsep}{env['PATH']}", "VIRTUAL_ENV": str(installed.bin_dir.parent)}
    result = subprocess.run(
        [str(installed.bin_dir / "python"), "-c", DATA_SOURCE, str(SAVEPOINT)],
        cwd=installed.cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(map(tuple, json.loads(result.stdout.splitlines()[-1]))) == [
        (0, TOPIC, 0, 5000),
        (0, TOPIC, 2, 5000),
        (1, TOPIC, 1, 5000),
        (1, TOPIC, 3, 5000),
    ]


def test_setup_from_the_wheel_refuses_the_matrix(installed: Installed, tmp_path: Path) -> None:
    result = run(installed.bin_dir, "setup", "--matrix", cwd=tmp_path)
    assert result.returncode == 2
    assert "`splitaudit setup --matrix` builds the reference pipeline of every matrix release" in result.stderr
    assert not (tmp_path / "data" / "splitaudit").exists()
