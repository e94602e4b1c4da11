"""The demo's job jars made without Maven are Maven's: the reference pipeline's stock jar, assembled from its own jar
and the lineage kit (package data, as a wheel has them) and its runtime dependencies from the stack's Maven
repository in the order Maven resolves them, holds every entry of the reactor's splitaudit-pipeline-stock.jar with
the same CRC-32, in the same order but for the services files, and the same manifest byte for byte; `patch-jar`
makes of it the reactor's splitaudit-pipeline-patched.jar."""

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
    PIPELINE_MAIN_CLASS,
    lineage_kit_jar,
    maven_repo,
    patch_repo,
    pipeline_classes_jar,
)
from splitaudit.patch.jar import patch_jar
from splitaudit.stack.job_jar import write_job_jar

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
LINEAGE_KIT = "dev.splitaudit:beam-kafka-lineage:0.1.0"


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
    # The stock shade execution's artifactSet excludes the patch (and Flink and slf4j, which are not runtime).
    shaded = [
        lineage_kit_jar() if coordinates == LINEAGE_KIT else path
        for coordinates, path in dependencies
        if coordinates != f"dev.splitaudit:beam-runners-flink-1.19-patch:{BEAM_VERSION}"
        and not coordinates.startswith(("org.apache.flink:", "org.slf4j:"))
    ]
    assert shaded[0] == _built(lineage_kit_jar())
    assert len(shaded) == 159
    stock = tmp_path / "stock.jar"
    assert write_job_jar(shaded, _built(pipeline_classes_jar()), PIPELINE_MAIN_CLASS, stock) == 62_574
    assert _crcs(stock) == _crcs(maven_stock)
    with zipfile.ZipFile(stock) as ours, zipfile.ZipFile(maven_stock) as maven:
        assert len(maven.infolist()) == 62_574
        assert ours.read("META-INF/MANIFEST.MF") == maven.read("META-INF/MANIFEST.MF")
        # Maven writes the merged services files in its HashMap's order, job_jar in name order.
        not_services = [[i.filename for i in jar.infolist() if not i.filename.startswith("META-INF/services/")]
                        for jar in (ours, maven)]  # fmt: skip
        assert not_services[0] == not_services[1]
        assert ours.testzip() is None

    patched = tmp_path / "patched.jar"
    report = patch_jar(stock, patched, force=False)
    assert (report.entries_total, len(report.replaced), len(report.added)) == (62_574, 4, 3)
    crcs = _crcs(patched)
    assert len(crcs) == 62_577
    assert crcs == _crcs(maven_patched)
