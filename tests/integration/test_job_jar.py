"""The demo's job jars made without Maven are Maven's: `write_pipeline_jars`, given the reference pipeline's runtime
dependencies from Maven Central in the order Maven resolves them (from the stack's Maven repository) and its own jar
and the lineage kit from the package (as a wheel has them), writes a stock jar with every entry of the reactor's
splitaudit-pipeline-stock.jar, the same CRC-32s, in the same order but for the services files, and the same
manifest byte for byte, and a patched jar with the entries and CRC-32s of the reactor's
splitaudit-pipeline-patched.jar."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from splitaudit.home import (
    BEAM_VERSION,
    JAVA_ROOT,
    PIPELINE_JARS,
    lineage_kit_jar,
    maven_repo,
    patch_repo,
    pipeline_classes_jar,
)
from splitaudit.stack.job_jar import write_pipeline_jars

pytestmark = [pytest.mark.integration, pytest.mark.needs_build]

# The reactor deploys its own artifacts (the lineage kit, the patch) to setup's patch repository and installs
# nothing: the listing resolves them from there, offline but for that file repository.
SETTINGS = """<settings>
  <profiles><profile><id>patch-repo</id>
    <repositories><repository><id>splitaudit</id><url>{repo}</url></repository></repositories>
  </profile></profiles>
  <activeProfiles><activeProfile>patch-repo</activeProfile></activeProfiles>
</settings>
"""


def _runtime_dependencies(tmp_path: Path) -> list[tuple[str, Path]]:
    """The reference pipeline module's runtime dependencies, as `groupId:artifactId:version` and file, in Maven's
    resolution order: the order its shade plugin puts them into the job jars."""
    settings, listing = tmp_path / "settings.xml", tmp_path / "dependencies.txt"
    settings.write_text(SETTINGS.format(repo=patch_repo().as_uri()))
    module = JAVA_ROOT / "reference-pipeline" / f"beam-{BEAM_VERSION}" / "pom.xml"
    argv = ["mvn", "-B", "-q", "-o", "-Daether.offline.protocols=file", "-s", str(settings),
            f"-Dmaven.repo.local={maven_repo()}", "-f", str(module), "dependency:list", "-DincludeScope=runtime",
            "-DoutputAbsoluteArtifactFilename=true", f"-DoutputFile={listing}"]  # fmt: skip
    try:
        subprocess.run(argv, check=True, capture_output=True, timeout=300)
    finally:
        # The resolved copies land in the stack's Maven cache; drop them so the next run reads the repository again.
        shutil.rmtree(maven_repo() / "dev" / "splitaudit", ignore_errors=True)
    dependencies = []
    for line in listing.read_text().splitlines():
        if line.startswith("   "):
            group, artifact, _, version, _, path = line.split()[0].split(":")
            dependencies.append((f"{group}:{artifact}:{version}", Path(path)))
    return dependencies


def _crcs(jar_path: Path) -> dict[str, int]:
    with zipfile.ZipFile(jar_path) as jar:
        return {info.filename: info.CRC for info in jar.infolist()}


def _built(path: Path) -> Path:
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make setup` first")
    return path


def test_the_stock_and_patched_jars_assembled_without_maven_are_mavens(tmp_path: Path) -> None:
    maven_stock, maven_patched = _built(PIPELINE_JARS["stock"]), _built(PIPELINE_JARS["patched"])
    dependencies = _runtime_dependencies(tmp_path)
    assert len(dependencies) == 160
    # The reactor's own artifacts lead, and write_pipeline_jars puts the lineage kit where Maven has it; the patch
    # only the patched execution takes. Flink and slf4j, which the pom's artifactSet excludes, are not runtime.
    assert [coordinates for coordinates, _ in dependencies[:2]] == [
        f"dev.splitaudit:beam-runners-flink-1.19-patch:{BEAM_VERSION}",
        "dev.splitaudit:beam-kafka-lineage:0.1.0",
    ]
    from_central = [path for _, path in dependencies[2:]]
    assert not [c for c, _ in dependencies[2:] if c.startswith(("dev.splitaudit:", "org.apache.flink:", "org.slf4j:"))]
    assert len(from_central) == 158
    for package_jar in (lineage_kit_jar(), pipeline_classes_jar()):
        _built(package_jar)
    jars = write_pipeline_jars(from_central, tmp_path / "jobs")
    assert jars == {
        "stock": tmp_path / "jobs" / "splitaudit-pipeline-stock.jar",
        "patched": tmp_path / "jobs" / "splitaudit-pipeline-patched.jar",
    }
    stock = _crcs(jars["stock"])
    assert len(stock) == 62_574
    assert stock == _crcs(maven_stock)
    with zipfile.ZipFile(jars["stock"]) as ours, zipfile.ZipFile(maven_stock) as maven:
        assert ours.read("META-INF/MANIFEST.MF") == maven.read("META-INF/MANIFEST.MF")
        # Maven writes the merged services files in its HashMap's order, job_jar in name order.
        not_services = [[i.filename for i in jar.infolist() if not i.filename.startswith("META-INF/services/")]
                        for jar in (ours, maven)]  # fmt: skip
        assert not_services[0] == not_services[1]
        assert ours.testzip() is None
    patched = _crcs(jars["patched"])
    assert len(patched) == 62_577
    assert patched == _crcs(maven_patched)
