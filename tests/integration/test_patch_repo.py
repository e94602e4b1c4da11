"""The patch as a dependency: setup's Maven repository serves every variant to a user's own Maven build."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from splitaudit.home import maven_repo, patch_repo
from splitaudit.patch.jar import ENUMERATOR_CLASS, PATCH_MARKER, SUPPORTED_TARGETS, PatchTarget

pytestmark = pytest.mark.integration

USER_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>user-job</artifactId>
  <version>1</version>
  <repositories>
    <repository><id>splitaudit</id><url>{repo}</url></repository>
  </repositories>
  <dependencies>
    <dependency>
      <groupId>dev.splitaudit</groupId>
      <artifactId>{runner}-patch</artifactId>
      <version>{beam}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.beam</groupId>
      <artifactId>{runner}</artifactId>
      <version>{beam}</version>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>
    </dependency>
  </dependencies>
</project>
"""


@pytest.mark.parametrize("target", SUPPORTED_TARGETS, ids=lambda t: f"{t.flink_runner}-{t.beam_version}")
def test_a_user_build_resolves_the_patch_ahead_of_the_runner(target: PatchTarget, tmp_path: Path) -> None:
    (tmp_path / "pom.xml").write_text(
        USER_POM.format(repo=patch_repo().as_uri(), runner=target.flink_runner, beam=target.beam_version)
    )
    classpath_file = tmp_path / "classpath.txt"
    cached = maven_repo() / "dev" / "splitaudit"
    try:
        subprocess.run(
            [
                "mvn",
                "-B",
                "-q",
                f"-Dmaven.repo.local={maven_repo()}",
                "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath",
                f"-Dmdep.outputFile={classpath_file}",
            ],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            timeout=300,
        )
        classpath = [Path(entry) for entry in classpath_file.read_text().split(":")]
        assert [entry.name for entry in classpath] == [
            f"{target.flink_runner}-patch-{target.beam_version}.jar",
            f"{target.flink_runner}-{target.beam_version}.jar",
        ]
        with zipfile.ZipFile(classpath[0]) as patch, zipfile.ZipFile(target.patch_jar) as built:
            assert sorted(patch.namelist()) == sorted(built.namelist())
            assert patch.read(ENUMERATOR_CLASS) == built.read(ENUMERATOR_CLASS)
            assert PATCH_MARKER in patch.read(ENUMERATOR_CLASS)
    finally:
        # The resolved copy lands in the stack's Maven cache; drop it so the next run reads the repository again.
        shutil.rmtree(cached, ignore_errors=True)
