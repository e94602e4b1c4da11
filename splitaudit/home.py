"""Where the installed stack lives and which versions of each component it holds.

Everything `splitaudit setup` installs goes under one folder, the stack home: `$SPLITAUDIT_HOME` when set; else
the checkout's git-ignored `.stack/` when splitaudit runs from a checkout of its repository; else a per-user data
folder (`$XDG_DATA_HOME/splitaudit`, by default `~/.local/share/splitaudit`), never the installed package's own
folder. The enumerator patch's classes are not in the stack home: they are package data (`patch_classes`).
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
from pathlib import Path

FLINK_VERSION = "1.19.3"
KAFKA_VERSION = "3.9.1"
BEAM_VERSION = "2.62.0"  # the reference pipeline's Beam, certainly affected by beam#31313
UPSTREAM_FIX_VERSION = "2.70.0"  # the first Beam release with the upstream fix of beam#31313 (apache/beam#33606)
# Spark's Kafka connector: the pinned pyspark's own (4.3.0) is not on Maven Central; see the pom.
SPARK_KAFKA_VERSION = "4.2.0"
SPARK_AVRO_VERSION = "4.2.0"  # the newest spark-avro on Maven Central; 4.3.0 is not there
S3PROXY_VERSION = "2.6.0"  # the S3-compatible object store the stack runs for checkpoints on s3://
# The Flink session cluster each Beam release of the real-cluster matrix runs on: the newest Flink of the
# runner artifact the Maven repository has for that release (beam-runners-flink-1.16 for 2.54.0-2.59.0,
# -1.19 for 2.62.0 and 2.70.0). Only BEAM_VERSION's jars are built by a plain `splitaudit setup`.
MATRIX_FLINK = {
    "2.54.0": "1.16.3",
    "2.56.0": "1.16.3",
    "2.59.0": "1.16.3",
    "2.62.0": FLINK_VERSION,
    UPSTREAM_FIX_VERSION: FLINK_VERSION,  # fixed upstream: run unpatched
}
FIXED_BEAM_VERSIONS = frozenset({UPSTREAM_FIX_VERSION})
# The matrix's Flink releases besides FLINK_VERSION, which `splitaudit setup --matrix` installs too.
OLDER_FLINK_VERSIONS = tuple(sorted({version for version in MATRIX_FLINK.values() if version != FLINK_VERSION}))

REPO_ROOT = Path(__file__).resolve().parents[1]
JAVA_ROOT = REPO_ROOT / "beam_pipelines" / "java"
PYTHON_PIPELINE_ROOT = REPO_ROOT / "beam_pipelines" / "python"


# The reference pipeline's main class (the pom's main.class), which its job jars' manifests name.
PIPELINE_MAIN_CLASS = "dev.splitaudit.pipeline.KafkaAuditPipeline"


def built_pipeline_jars(beam_version: str = BEAM_VERSION) -> dict[str, Path]:
    """The reference pipeline's job jars for one Beam release, as the beam_pipelines/java reactor builds them:
    `stock` always, `patched` for releases a patch variant exists for."""
    target = JAVA_ROOT / "reference-pipeline" / f"beam-{beam_version}" / "target"
    variants = ("stock",) if beam_version in FIXED_BEAM_VERSIONS else ("stock", "patched")
    return {variant: target / f"splitaudit-pipeline-{variant}.jar" for variant in variants}


PIPELINE_JARS = built_pipeline_jars()


def pipeline_jars(beam_version: str = BEAM_VERSION) -> dict[str, Path]:
    """The reference pipeline's job jars the demo and the scenarios run: the reactor's in a checkout; in an installed
    wheel BEAM_VERSION's in the stack home's jobs/, where setup assembles them (`job_jar.write_pipeline_jars`)."""
    if in_checkout() or beam_version != BEAM_VERSION:
        return built_pipeline_jars(beam_version)
    return {variant: jobs_dir() / jar.name for variant, jar in built_pipeline_jars().items()}


def users_job_jars() -> dict[str, Path]:
    """The users' job's stock and patched jars (beam_pipelines/java/users-job, Beam BEAM_VERSION on Flink 1.19),
    as the reactor builds them."""
    target = JAVA_ROOT / "users-job" / "target"
    return {variant: target / f"users-job-{variant}.jar" for variant in ("stock", "patched")}


# The enumerator patch's variants, as (runner artifact, Beam release): one module of the reactor each.
PATCH_VARIANTS = (
    ("beam-runners-flink-1.16", "2.54.0"),
    ("beam-runners-flink-1.16", "2.56.0"),
    ("beam-runners-flink-1.16", "2.59.0"),
    ("beam-runners-flink-1.19", "2.62.0"),
)


def built_patch_jar(flink_runner: str, beam_version: str) -> Path:
    """The enumerator-patch jar the reactor builds for one Beam release and runner artifact.

    `flink_runner` is the runner's artifact id, e.g. `beam-runners-flink-1.19`; the module is
    `enumerator-patch/flink-<flink>-beam-<beam_version>/`, its artifact `dev.splitaudit:<flink_runner>-patch`.
    """
    flink = flink_runner.removeprefix("beam-runners-flink-")
    module = JAVA_ROOT / "enumerator-patch" / f"flink-{flink}-beam-{beam_version}"
    return module / "target" / f"{flink_runner}-patch-{beam_version}.jar"


def patch_classes() -> Path:
    """The folder of the jars for users' own job builds: the patch's, which `patch-jar` puts into job jars, and
    the lineage kit's. Package data of `splitaudit.patch`, so the wheel carries them (`classes/`, filled from the
    reactor's build by `splitaudit setup` in a checkout)."""
    return Path(str(importlib.resources.files("splitaudit.patch"))) / "classes"


def patch_jar_path(flink_runner: str, beam_version: str) -> Path:
    """The patch's jar for one Beam release and runner artifact, as `patch-jar` reads it (package data)."""
    return patch_classes() / built_patch_jar(flink_runner, beam_version).name


def built_lineage_kit() -> Path:
    """The lineage kit's jar (dev.splitaudit:beam-kafka-lineage:0.1.0) as the reactor builds it."""
    return JAVA_ROOT / "lineage-kit" / "target" / "beam-kafka-lineage-0.1.0.jar"


def lineage_kit_jar() -> Path:
    """The lineage kit's jar as package data beside the patch's jars: what `lineage-kit` gives users' builds, and
    what the reference pipeline's job jars bundle."""
    return patch_classes() / built_lineage_kit().name


def built_pipeline_classes(beam_version: str = BEAM_VERSION) -> Path:
    """The reference pipeline module's own jar (its classes, 12 KB) as the reactor builds it; the shade plugin
    puts it first into the module's job jars."""
    module = JAVA_ROOT / "reference-pipeline" / f"beam-{beam_version}"
    return module / "target" / f"reference-pipeline-beam-{beam_version}-0.1.0.jar"


def in_checkout() -> bool:
    """Whether splitaudit runs from a checkout of its repository (an editable install), which holds the sources
    `splitaudit setup` builds the job jars and the patch from; an installed wheel does not (its setup installs
    the embedded stack alone)."""
    return (JAVA_ROOT / "pom.xml").is_file() and (REPO_ROOT / "pyproject.toml").is_file()


def stack_home() -> Path:
    """The folder holding downloads, the Flink distribution, the Kafka jars and the Maven repository:
    `$SPLITAUDIT_HOME`, else the checkout's `.stack/`, else the per-user data folder."""
    configured = os.environ.get("SPLITAUDIT_HOME")
    if configured:
        return Path(configured).resolve()
    if in_checkout():
        return REPO_ROOT / ".stack"
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data).resolve() / "splitaudit"


def downloads_dir() -> Path:
    """The files of the stack lock as downloaded (`splitaudit_lab.stack.downloads`), kept so a second setup downloads
    nothing."""
    return stack_home() / "downloads"


def flink_home(version: str = FLINK_VERSION) -> Path:
    """FLINK_HOME of an installed distribution (bin/, conf/, lib/ under pyflink/, as the PyPI packages lay it out)."""
    return stack_home() / f"flink-{version}" / "pyflink"


def kafka_libs(version: str = KAFKA_VERSION) -> Path:
    """The broker's classpath folder, the same jars as the Kafka distribution's libs/."""
    return stack_home() / f"kafka-{version}" / "libs"


def spark_kafka_jars(version: str = SPARK_KAFKA_VERSION) -> Path:
    """Spark's Kafka source and sink (`format("kafka")`) and the jars it needs beyond pyspark's own jars/.

    `spark_session` puts every jar of this folder on `spark.jars` when it exists.
    """
    return stack_home() / f"spark-kafka-{version}" / "jars"


def spark_avro_jars(version: str = SPARK_AVRO_VERSION) -> Path:
    """Spark's Avro data source (`format("avro")`, for Beam's AvroIO sinks), which pyspark does not ship.

    `spark_session(avro=True)` puts every jar of this folder on `spark.jars` when it exists.
    """
    return stack_home() / f"spark-avro-{version}" / "jars"


def pyspark_home() -> Path:
    """SPARK_HOME of the pinned pyspark (its jars/ and bin/spark-class), found without importing pyspark."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("pyspark is not installed in this Python environment (make .venv/.installed)")
    return Path(next(iter(spec.submodule_search_locations)))


def s3proxy_libs(version: str = S3PROXY_VERSION) -> Path:
    """S3Proxy's classpath folder (its jar and dependencies), for the stack's object store."""
    return stack_home() / f"s3proxy-{version}" / "libs"


def flink_test_corpus() -> Path:
    """Flink's own test jars (serializer snapshots and data, migration ITCases' savepoints), which the reader's
    tests decode: the files the stack lock names for `flink-test-corpus`, under their Maven file names."""
    return stack_home() / "flink-test-corpus"


def state_processor_api() -> Path:
    """Flink's State Processor API jar (flink-state-processor-api 1.19.1), which the keyed-state tests and
    benchmarks run on the stack's Flink to read the snapshots splitaudit reads: the file the stack lock names for
    `state-processor-api`, under its Maven file name."""
    return stack_home() / "state-processor-api" / "flink-state-processor-api-1.19.1.jar"


def flink_plugins(version: str = FLINK_VERSION) -> Path:
    """A plugins folder for the stack's Flink beside its distribution (FLINK_PLUGINS_DIR): `s3-fs-hadoop/`."""
    return stack_home() / f"flink-{version}-plugins"


def maven_repo() -> Path:
    """Maven's local repository, kept inside the stack home so nothing lands in ~/.m2."""
    return stack_home() / "m2"


def patch_repo() -> Path:
    """The Maven repository (file layout) setup deploys the patch artifacts to, for users' own builds."""
    return stack_home() / "patch-repo"


def jobs_dir() -> Path:
    """Job jars setup installs into the stack home: the smoke job's, and from a wheel the reference pipeline's."""
    return stack_home() / "jobs"


def portable_jars() -> dict[str, Path]:
    """The Python pipeline's Java half (beam_pipelines/java/portable): Beam's Flink job server and the
    expansion service that expands ReadFromKafka, both Beam BEAM_VERSION."""
    target = JAVA_ROOT / "portable" / "target"
    return {
        "job-server": target / "splitaudit-flink-job-server.jar",
        "expansion-service": target / "splitaudit-expansion-service.jar",
    }


def beam_python_home() -> Path:
    """The Python Beam SDK's own environment (apache-beam BEAM_VERSION): it cannot share pyspark 4's pyarrow."""
    return stack_home() / f"beam-python-{BEAM_VERSION}"
