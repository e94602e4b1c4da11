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


KIT_USER_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>user-job-with-lineage</artifactId>
  <version>1</version>
  <properties><maven.compiler.release>8</maven.compiler.release></properties>
  <repositories>
    <repository><id>splitaudit</id><url>{repo}</url></repository>
  </repositories>
  <dependencies>
    <dependency>
      <groupId>dev.splitaudit</groupId>
      <artifactId>beam-kafka-lineage</artifactId>
      <version>0.1.0</version>
    </dependency>
    <dependency>
      <groupId>org.apache.beam</groupId>
      <artifactId>beam-sdks-java-io-kafka</artifactId>
      <version>2.62.0</version>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>
    </dependency>
    <dependency>
      <groupId>org.apache.beam</groupId>
      <artifactId>beam-sdks-java-core</artifactId>
      <version>2.62.0</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-clients</artifactId>
      <version>3.9.1</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.13.0</version>
      </plugin>
    </plugins>
  </build>
</project>
"""

KIT_USER_SOURCE = """package example;

import dev.splitaudit.lineage.KafkaLineage;
import dev.splitaudit.lineage.ReaderStamped;
import dev.splitaudit.lineage.ReaderStamping;
import dev.splitaudit.lineage.WithKafkaLineage;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.coders.StringUtf8Coder;
import org.apache.beam.sdk.io.kafka.KafkaIO;
import org.apache.beam.sdk.values.KV;
import org.apache.beam.sdk.values.PCollection;
import org.apache.kafka.common.serialization.StringDeserializer;

public class Job {
  public static PCollection<KV<KafkaLineage, KV<String, String>>> records(
      Pipeline pipeline, String servers, String topic) {
    PCollection<KV<KafkaLineage, KV<String, String>>> records =
        pipeline
            .apply("Read", KafkaIO.<String, ReaderStamped<String>>read()
                .withBootstrapServers(servers).withTopic(topic)
                .withKeyDeserializer(StringDeserializer.class)
                .withValueDeserializer(ReaderStamping.of(StringDeserializer.class, StringUtf8Coder.of())))
            .apply("Lineage", WithKafkaLineage.<String, String>of(KafkaLineage.submittedJobId()));
    return records;
  }
}
"""


def test_a_user_build_compiles_against_the_lineage_kit(tmp_path: Path) -> None:
    """The lineage kit from setup's repository: a user's Maven build resolves it (its Beam, Kafka and Flink stay the
    user's) and compiles the README's lines against it."""
    (tmp_path / "pom.xml").write_text(KIT_USER_POM.format(repo=patch_repo().as_uri()))
    source = tmp_path / "src" / "main" / "java" / "example" / "Job.java"
    source.parent.mkdir(parents=True)
    source.write_text(KIT_USER_SOURCE)
    cached = maven_repo() / "dev" / "splitaudit"
    try:
        subprocess.run(
            ["mvn", "-B", "-q", f"-Dmaven.repo.local={maven_repo()}", "compile"],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            timeout=300,
        )
        assert (tmp_path / "target" / "classes" / "example" / "Job.class").is_file()
        kit = maven_repo() / "dev" / "splitaudit" / "beam-kafka-lineage" / "0.1.0" / "beam-kafka-lineage-0.1.0.jar"
        with zipfile.ZipFile(kit) as jar:
            assert "dev/splitaudit/lineage/ReaderStampingDeserializer.class" in jar.namelist()
            assert not [name for name in jar.namelist() if name.startswith("org/apache/")]  # Beam and Kafka provided
    finally:
        shutil.rmtree(cached, ignore_errors=True)
