"""Where the installed stack lives (.stack/) and which versions of each component it holds.

Everything `splitaudit setup` installs goes under one git-ignored folder, the stack home: the repository's
`.stack/` for a checkout, or `$SPLITAUDIT_STACK_HOME` when set.
"""

from __future__ import annotations

import os
from pathlib import Path

FLINK_VERSION = "1.19.3"
KAFKA_VERSION = "3.9.1"
BEAM_VERSION = "2.62.0"  # the reference pipeline's Beam, certainly affected by beam#31313
# Spark's Kafka connector: the pinned pyspark's own (4.3.0) is not on Maven Central; see the pom.
SPARK_KAFKA_VERSION = "4.2.0"

REPO_ROOT = Path(__file__).resolve().parents[1]
JAVA_ROOT = REPO_ROOT / "beam_pipelines" / "java"
# The reference pipeline's job jars, as the beam_pipelines/java reactor builds them (setup runs it).
PIPELINE_JARS = {
    "stock": JAVA_ROOT / "reference-pipeline" / "target" / "splitaudit-pipeline-stock.jar",
    "patched": JAVA_ROOT / "reference-pipeline" / "target" / "splitaudit-pipeline-patched.jar",
}


def stack_home() -> Path:
    """The folder holding downloads, the Flink distribution, the Kafka jars and the Maven repository."""
    configured = os.environ.get("SPLITAUDIT_STACK_HOME")
    return Path(configured).resolve() if configured else REPO_ROOT / ".stack"


def flink_home(version: str = FLINK_VERSION) -> Path:
    """FLINK_HOME of an installed distribution (bin/, conf/, lib/ under pyflink/, as PyPI lays it out)."""
    return stack_home() / f"flink-{version}" / "pyflink"


def kafka_libs(version: str = KAFKA_VERSION) -> Path:
    """The broker's classpath folder, the same jars as the Kafka distribution's libs/."""
    return stack_home() / f"kafka-{version}" / "libs"


def spark_kafka_jars(version: str = SPARK_KAFKA_VERSION) -> Path:
    """Spark's Kafka source and sink (`format("kafka")`) and the jars it needs beyond pyspark's own jars/.

    `spark_session` puts every jar of this folder on `spark.jars` when it exists.
    """
    return stack_home() / f"spark-kafka-{version}" / "jars"


def maven_repo() -> Path:
    """Maven's local repository, kept inside the stack home so nothing lands in ~/.m2."""
    return stack_home() / "m2"


def jobs_dir() -> Path:
    """Job jars built from beam_pipelines/java."""
    return stack_home() / "jobs"
