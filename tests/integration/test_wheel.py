"""The wheel is the product: built from this checkout, installed with uv and with pip into fresh virtual
environments outside the repository, with no extra, it runs `inspect`, `guard` and `patch-jar` exactly as the
checkout does (the patch's classes come from the wheel's package data), writes the lineage kit's jar, keeps its
stack home out of `site-packages`, tells a user which extra a command without its dependencies needs, and sets up
the embedded stack from its stack lock as the checkout's setup did.

The base install resolves its dependencies from PyPI (uv's and pip's caches keep a second run offline). Spark
(`[spark]`) is not installed here: pyspark's sdist is built on every fresh install (0.5-1.4 GB).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from splitaudit.home import (
    PATCH_VARIANTS,
    PIPELINE_JARS,
    REPO_ROOT,
    built_lineage_kit,
    downloads_dir,
    flink_home,
    flink_plugins,
    kafka_libs,
    patch_jar_path,
    s3proxy_libs,
)
from splitaudit.stack.lock import read_lock
from tests.unit.patch.conftest import REFERENCE_RUNNERS

pytestmark = pytest.mark.integration

FIXTURES = REPO_ROOT / "fixtures" / "beam_flink_source"
SAVEPOINT = FIXTURES / "restore_stock_before"
UV = Path(sys.executable).parent / "uv"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `uv build` makes of this checkout (after `make setup` put the patch's jars into the package)."""
    for flink_runner, beam_version in PATCH_VARIANTS:
        if not patch_jar_path(flink_runner, beam_version).is_file():
            pytest.fail(f"{patch_jar_path(flink_runner, beam_version)} is missing: run `make setup` first")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([str(UV), "build", "--wheel", "--out-dir", str(out), str(REPO_ROOT)], check=True, timeout=600)
    (built,) = out.glob("splitaudit-*.whl")
    return built


def _installed(kind: str, wheel: Path, root: Path) -> Path:
    """A fresh venv under `root` with the wheel installed (no extra) by `kind`: its bin/ folder."""
    venv = root / f"{kind}-venv"
    if kind == "uv":
        subprocess.run([str(UV), "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=120)
        subprocess.run(
            [str(UV), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(wheel)],
            check=True,
            timeout=600,
        )
    else:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], check=True, timeout=600)
    return venv / "bin"


@pytest.fixture(scope="module", params=["uv", "pip"])
def installed(request: pytest.FixtureRequest, wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed by uv, then by pip."""
    return _installed(request.param, wheel, tmp_path_factory.mktemp(f"outside-{request.param}"))


def _run(bin_dir: Path, *args: str, cwd: Path, offline: bool = False) -> subprocess.CompletedProcess[str]:
    """`splitaudit ARGS` of an installed venv, from a folder outside the checkout, with no trace of it; `offline`
    runs it in a network namespace with no interface up (`unshare -n`), where any download fails."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SPLITAUDIT_HOME")}
    env |= {"HOME": str(cwd / "home"), "XDG_DATA_HOME": str(cwd / "data")}
    argv = [*(["unshare", "-n"] if offline else []), str(bin_dir / "splitaudit"), *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


Checkout = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def in_checkout() -> Checkout:
    """`splitaudit ARGS` of this checkout, each command run once for both installers' tests."""
    results: dict[tuple[str, ...], subprocess.CompletedProcess[str]] = {}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        if args not in results:
            results[args] = subprocess.run(
                [sys.executable, "-m", "splitaudit", *args], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT
            )
        return results[args]

    return run


def _json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout)


def test_the_wheel_carries_the_patch_classes_the_stack_lock_and_no_checkout_files(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as built:
        names = set(built.namelist())
    jars = {f"splitaudit/patch/classes/beam-runners-flink-{f}-patch-{b}.jar" for f, b in (
        ("1.16", "2.54.0"), ("1.16", "2.56.0"), ("1.16", "2.59.0"), ("1.19", "2.62.0"))}  # fmt: skip
    assert jars <= names
    # the lineage kit, and the reference pipeline's own jar the demo's job jars are assembled from
    assert {
        "splitaudit/patch/classes/beam-kafka-lineage-0.1.0.jar",
        "splitaudit/stack/jobs/reference-pipeline-beam-2.62.0-0.1.0.jar",
    } <= names
    assert {"splitaudit/py.typed", "splitaudit/stack/stack.lock.json", "pyspark_flink_savepoint.py"} <= names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert not [n for n in names if n.startswith(("tests/", "fixtures/", "beam_pipelines/", ".stack/"))]


def _positions(source: dict[str, Any]) -> list[tuple[int, int, int]]:
    """(subtask, partition, next offset) of every reader split of a decoded source."""
    return sorted(
        (split["subtask"], p["partition"], p["next_offset"])
        for split in source["reader_splits"]
        for p in split["split"]["checkpoint"]["partitions"]
    )


def test_inspect_from_the_wheel_decodes_the_savepoint_as_the_checkout_does(
    installed: Path, in_checkout: Checkout, tmp_path: Path
) -> None:
    result = _run(installed, "--json", "inspect", str(SAVEPOINT), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    decoded = _json(result)
    assert decoded == _json(in_checkout("--json", "inspect", str(SAVEPOINT)))
    (source,) = [operator["source"] for operator in decoded["operators"] if operator.get("source")]
    expected = json.loads((SAVEPOINT / "expected.json").read_text())["source"]
    assert _positions(source) == _positions(expected) == [(0, 0, 5000), (0, 2, 5000), (1, 1, 5000), (1, 3, 5000)]


def test_guard_from_the_wheel_judges_the_restore_as_the_checkout_does(
    installed: Path, in_checkout: Checkout, tmp_path: Path
) -> None:
    jar = PIPELINE_JARS["stock"]
    result = _run(installed, "--json", "guard", "--savepoint", str(SAVEPOINT), "--jar", str(jar), cwd=tmp_path)
    checkout = in_checkout("--json", "guard", "--savepoint", str(SAVEPOINT), "--jar", str(jar))
    assert (result.returncode, checkout.returncode) == (1, 1), result.stderr
    assert _json(result) == _json(checkout)
    rereads = [f for f in _json(result)["findings"] if f["kind"] == "restore_rereads_partition"]
    assert sorted(f["partition"] for f in rereads) == [0, 1, 2, 3]


@pytest.mark.parametrize("release", ["2.59.0", "2.62.0"])
def test_patch_jar_from_the_wheel_writes_the_same_classes_as_the_checkout(
    installed: Path, in_checkout: Checkout, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, release: str
) -> None:
    stock = PIPELINE_JARS["stock"] if release == "2.62.0" else REFERENCE_RUNNERS / "beam-runners-flink-1.16-2.59.0.jar"
    result = _run(installed, "--json", "patch-jar", str(stock), "--out", str(tmp_path / "w.jar"), cwd=tmp_path)
    checkout_jar = tmp_path_factory.getbasetemp() / f"checkout-patched-{release}.jar"  # one for both installers
    checkout = in_checkout("--json", "patch-jar", str(stock), "--out", str(checkout_jar))
    assert (result.returncode, checkout.returncode) == (0, 0), result.stderr
    report, expected = _json(result), _json(checkout)
    assert report["beam_version"] == release
    assert report["patch_classes_from"].endswith(
        f"/site-packages/splitaudit/patch/classes/{Path(expected['patch_classes_from']).name}"
    )
    assert report["replaced"] == expected["replaced"]
    with zipfile.ZipFile(tmp_path / "w.jar") as wheel_made, zipfile.ZipFile(checkout_jar) as checkout_made:
        assert {i.filename: i.CRC for i in wheel_made.infolist()} == {
            i.filename: i.CRC for i in checkout_made.infolist()
        }


def test_lineage_kit_from_the_wheel_writes_the_reactors_jar(installed: Path, tmp_path: Path) -> None:
    result = _run(installed, "--json", "lineage-kit", "--out", str(tmp_path / "libs"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    jar = tmp_path / "libs" / "beam-kafka-lineage-0.1.0.jar"
    assert _json(result)["jar"] == str(jar)
    assert jar.read_bytes() == built_lineage_kit().read_bytes()


def test_a_command_without_its_extra_says_which_to_install(installed: Path, tmp_path: Path) -> None:
    sink = tmp_path / "sink"
    sink.mkdir()
    result = _run(installed, "audit", "--sink", str(sink), "--savepoint", str(SAVEPOINT), cwd=tmp_path)
    assert result.returncode == 3
    assert "which splitaudit's extra [spark] installs: pip install 'splitaudit[spark]'" in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


def _tree(folder: Path) -> dict[str, int]:
    """Every file under `folder` by its relative path, with its size."""
    return {str(path.relative_to(folder)): path.stat().st_size for path in folder.rglob("*") if path.is_file()}


def _seed(downloads: Path) -> None:
    """`downloads` holding hard links (copies across filesystems) of every locked file the checkout downloaded."""
    for component in read_lock().components.values():
        for file in component:
            source, target = downloads_dir() / file.download_path, downloads / file.download_path
            if source.is_file() and not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(source, target)
                except OSError:
                    shutil.copyfile(source, target)


def test_setup_from_the_wheel_installs_the_embedded_stack_as_the_checkout_has_it(
    wheel: Path, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    bin_dir = _installed("uv", wheel, tmp_path_factory.mktemp("setup-uv"))
    site = next(bin_dir.parent.glob("lib/python*/site-packages"))
    package = {path for path in _tree(site) if "__pycache__" not in path}
    home = (tmp_path / "data" / "splitaudit").resolve()
    _seed(home / "downloads")

    first = _run(bin_dir, "--json", "setup", cwd=tmp_path, offline=True)

    assert first.returncode == 0, first.stderr
    report = _json(first)
    assert report["stack_home"] == str(home)
    assert report["downloaded_bytes"] == 0
    assert {c["name"]: c["state"] for c in report["components"]} == {
        "flink": "installed",
        "kafka-broker": "installed",
        "spark-kafka": "skipped",
        "spark-avro": "skipped",
        "s3proxy": "installed",
        "flink-s3-fs-hadoop": "installed",
    }
    reasons = {c["name"]: c["reason"] for c in report["components"] if c["reason"]}
    assert list(reasons) == ["spark-kafka", "spark-avro"]
    assert "splitaudit's extra [spark] installs it (pip install 'splitaudit[spark]')" in reasons["spark-kafka"]
    for folder in ("bin", "conf", "lib", "opt", "plugins"):
        assert _tree(home / "flink-1.19.3" / "pyflink" / folder) == _tree(flink_home() / folder), folder
    assert _tree(home / "kafka-3.9.1" / "libs") == _tree(kafka_libs())
    assert _tree(home / "s3proxy-2.6.0" / "libs") == _tree(s3proxy_libs())
    assert _tree(home / "flink-1.19.3-plugins") == _tree(flink_plugins())
    assert {path for path in _tree(site) if "__pycache__" not in path} == package

    second = _run(bin_dir, "--json", "setup", cwd=tmp_path, offline=True)

    assert second.returncode == 0, second.stderr
    assert [(c["state"], c["downloaded_bytes"]) for c in _json(second)["components"]] == [
        ("present", 0),
        ("present", 0),
        ("skipped", 0),
        ("skipped", 0),
        ("present", 0),
        ("present", 0),
    ]
    assert "downloading into" not in second.stderr


def test_setup_from_the_wheel_refuses_the_matrix(installed: Path, tmp_path: Path) -> None:
    result = _run(installed, "setup", "--matrix", cwd=tmp_path)
    assert result.returncode == 2
    assert "`splitaudit setup --matrix` builds the reference pipeline of every matrix release" in result.stderr
    assert not (tmp_path / "data" / "splitaudit").exists()
