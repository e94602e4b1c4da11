"""Setup is idempotent: once `make setup` ran, a second run installs nothing, even with no network at all."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from splitaudit.home import SPARK_AVRO_VERSION, SPARK_KAFKA_VERSION, flink_home, spark_avro_jars, spark_kafka_jars
from splitaudit_lab.stack.flink_cluster import JAVA_17_OPTIONS

pytestmark = pytest.mark.integration


def test_second_setup_run_is_a_no_op_without_network() -> None:
    # `unshare -n` runs setup in a new network namespace with no interface up: any download would fail.
    result = subprocess.run(
        ["unshare", "-n", sys.executable, "-m", "splitaudit", "--json", "setup"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    states = {c["name"]: c["state"] for c in json.loads(result.stdout)["components"]}
    names = (
        "flink",
        "kafka-broker",
        "spark-kafka",
        "spark-avro",
        "s3proxy",
        "flink-s3-fs-hadoop",
        "flink-test-corpus",
        "state-processor-api",
        "smoke-job",
        "beam-pipeline",
        "patch-classes",
        "pipeline-classes",
        "beam-portable",
        "beam-python",
    )
    assert states == dict.fromkeys(names, "present")


def test_spark_kafka_connector_adds_only_what_pyspark_lacks() -> None:
    installed = sorted(jar.name for jar in spark_kafka_jars().glob("*.jar"))
    assert installed == [
        "commons-pool2-2.13.1.jar",
        "kafka-clients-3.9.2.jar",
        f"spark-sql-kafka-0-10_2.13-{SPARK_KAFKA_VERSION}.jar",
        "spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
    ]


def test_spark_avro_connector_is_its_own_jar_alone() -> None:
    assert sorted(jar.name for jar in spark_avro_jars().glob("*.jar")) == [f"spark-avro_2.13-{SPARK_AVRO_VERSION}.jar"]


def test_the_java_17_options_are_the_ones_the_flink_distribution_sets() -> None:
    # Every cluster (1.19 and the matrix's 1.16, whose conf has none) starts with these JVM options.
    config = (flink_home() / "conf" / "config.yaml").read_text()
    assert f"all: {JAVA_17_OPTIONS}\n" in config
