"""The demo's job jars made without Maven are Maven's: `write_pipeline_jars`, given the reference pipeline's runtime
dependencies from Maven Central as the stack lock names them, in Maven's resolution order (the files from the
stack's Maven repository, where the reactor's build resolved them), and its own jar and the lineage kit from the
package (as a wheel has them), writes a stock jar with every entry of the reactor's splitaudit-pipeline-stock.jar,
the same CRC-32s, in the same order but for the services files, and the same manifest byte for byte, and a patched
jar with the entries and CRC-32s of the reactor's splitaudit-pipeline-patched.jar. (That the lock's list is what
Maven resolves for the module, in its order, is test_stack_lock's.)"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from splitaudit.home import PIPELINE_JARS, lineage_kit_jar, maven_repo
from splitaudit_lab.stack.job_jar import pipeline_classes_jar, write_pipeline_jars
from splitaudit_lab.stack.lock import read_lock

pytestmark = [pytest.mark.integration, pytest.mark.needs_build]


def _runtime_dependencies() -> list[Path]:
    """The lock's `demo-pipeline` files in the stack's Maven repository, each checked against the lock's SHA-256."""
    files = read_lock().files("demo-pipeline")
    paths = [maven_repo() / str(file.path) for file in files]
    for file, path in zip(files, paths, strict=True):
        assert hashlib.sha256(_built(path).read_bytes()).hexdigest() == file.sha256, path
    return paths


def _crcs(jar_path: Path) -> dict[str, int]:
    with zipfile.ZipFile(jar_path) as jar:
        return {info.filename: info.CRC for info in jar.infolist()}


def _built(path: Path) -> Path:
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make setup` first")
    return path


def test_the_stock_and_patched_jars_assembled_without_maven_are_mavens(tmp_path: Path) -> None:
    maven_stock, maven_patched = _built(PIPELINE_JARS["stock"]), _built(PIPELINE_JARS["patched"])
    from_central = _runtime_dependencies()
    assert len(from_central) == 158
    for package_jar in (lineage_kit_jar(), pipeline_classes_jar()):
        _built(package_jar)
    jars = write_pipeline_jars(from_central, tmp_path / "jobs")
    assert jars == {
        "stock": tmp_path / "jobs" / "splitaudit-pipeline-stock.jar",
        "patched": tmp_path / "jobs" / "splitaudit-pipeline-patched.jar",
    }
    stock = _crcs(jars["stock"])
    assert len(stock) == 62_576
    assert stock == _crcs(maven_stock)
    with zipfile.ZipFile(jars["stock"]) as ours, zipfile.ZipFile(maven_stock) as maven:
        assert ours.read("META-INF/MANIFEST.MF") == maven.read("META-INF/MANIFEST.MF")
        # Maven writes the merged services files in its HashMap's order, job_jar in name order.
        not_services = [[i.filename for i in jar.infolist() if not i.filename.startswith("META-INF/services/")]
                        for jar in (ours, maven)]  # fmt: skip
        assert not_services[0] == not_services[1]
        assert ours.testzip() is None
    patched = _crcs(jars["patched"])
    assert len(patched) == 62_579
    assert patched == _crcs(maven_patched)
