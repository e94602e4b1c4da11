"""The wheel is the product: built from this checkout, installed with uv and with pip into fresh virtual
environments outside the repository, with no extra, it runs `inspect`, `guard` and `patch-jar` exactly as the
checkout does (the patch's classes come from the wheel's package data), writes the lineage kit's jar, tells a user
which extra a command without its dependencies needs, and lists only the product's commands: the lab's (setup, demo,
the scenarios) come with the lab's own wheel, which the extra [stack] installs. (The wheel with its `[stack]` extra:
test_wheel_stack.)

The base install resolves its dependencies from PyPI (uv's and pip's caches keep a second run offline).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from splitaudit.home import PIPELINE_JARS, REPO_ROOT, built_lineage_kit
from tests.integration.wheel_install import install, run
from tests.unit.patch.conftest import REFERENCE_RUNNERS

pytestmark = pytest.mark.integration

FIXTURES = REPO_ROOT / "fixtures" / "beam_flink_source"
SAVEPOINT = FIXTURES / "restore_stock_before"


@pytest.fixture(scope="module", params=["uv", "pip"])
def installed(request: pytest.FixtureRequest, wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed by uv, then by pip."""
    return install(request.param, wheel, tmp_path_factory.mktemp(f"outside-{request.param}"))


Checkout = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def in_checkout() -> Checkout:
    """`splitaudit ARGS` of this checkout, each command run once for both installers' tests."""
    results: dict[tuple[str, ...], subprocess.CompletedProcess[str]] = {}

    def run_once(*args: str) -> subprocess.CompletedProcess[str]:
        if args not in results:
            results[args] = subprocess.run(
                [sys.executable, "-m", "splitaudit", *args], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT
            )
        return results[args]

    return run_once


def _json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout)


def test_the_wheels_carry_the_patch_classes_the_stack_lock_and_no_checkout_files(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as built:
        names = set(built.namelist())
    jars = {f"splitaudit/patch/classes/beam-runners-flink-{f}-patch-{b}.jar" for f, b in (
        ("1.16", "2.54.0"), ("1.16", "2.56.0"), ("1.16", "2.59.0"), ("1.19", "2.62.0"))}  # fmt: skip
    assert jars <= names
    assert "splitaudit/patch/classes/beam-kafka-lineage-0.1.0.jar" in names  # the lineage kit
    assert {"splitaudit/py.typed", "pyspark_flink_savepoint.py"} <= names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    # nothing of the lab, which is a wheel of its own
    assert not [n for n in names if n.startswith(("tests/", "fixtures/", "beam_pipelines/", ".stack/", "lab/"))]
    assert not [n for n in names if n.startswith("splitaudit_lab") or "stack.lock" in n or "/stack/" in n]
    with zipfile.ZipFile(next(wheel.parent.glob("splitaudit_lab-0.1.0-*.whl"))) as built:
        lab = set(built.namelist())
    # the stack lock, and the reference pipeline's own jar the demo's job jars are assembled from
    assert {
        "splitaudit_lab/stack/stack.lock.json",
        "splitaudit_lab/stack/jobs/reference-pipeline-beam-2.62.0-0.1.0.jar",
        "splitaudit_lab/cli/stack.py",
    } <= lab
    assert not [n for n in lab if n.startswith("splitaudit/")]


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
    result = run(installed, "--json", "inspect", str(SAVEPOINT), cwd=tmp_path)
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
    result = run(installed, "--json", "guard", "--savepoint", str(SAVEPOINT), "--jar", str(jar), cwd=tmp_path)
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
    result = run(installed, "--json", "patch-jar", str(stock), "--out", str(tmp_path / "w.jar"), cwd=tmp_path)
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
    result = run(installed, "--json", "lineage-kit", "--out", str(tmp_path / "libs"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    jar = tmp_path / "libs" / "beam-kafka-lineage-0.1.0.jar"
    assert _json(result)["jar"] == str(jar)
    assert jar.read_bytes() == built_lineage_kit().read_bytes()


def test_a_command_without_its_extra_says_which_to_install(installed: Path, tmp_path: Path) -> None:
    sink = tmp_path / "sink"
    sink.mkdir()
    result = run(installed, "audit", "--sink", str(sink), "--savepoint", str(SAVEPOINT), cwd=tmp_path)
    assert result.returncode == 3
    assert "which splitaudit's extra [spark] installs: pip install 'splitaudit[spark]'" in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


def test_the_wheel_alone_has_the_products_commands_and_names_the_extra_of_the_labs(
    installed: Path, tmp_path: Path
) -> None:
    listed = run(installed, "--help", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    commands = [line.split()[0] for line in listed.stdout.partition("Commands:")[2].splitlines() if line.strip()]
    assert commands == ["audit", "diff", "guard", "inspect", "lineage-kit", "patch-jar", "watch"]
    assert not list(installed.parent.glob("lib/python*/site-packages/splitaudit_lab"))
    result = run(installed, "setup", cwd=tmp_path)
    assert result.returncode == 2
    assert "`setup` is a command of splitaudit's lab" in result.stderr
    assert "pip install 'splitaudit[stack]'" in result.stderr
    assert not (tmp_path / "data" / "splitaudit").exists()
