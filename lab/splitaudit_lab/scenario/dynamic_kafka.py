"""Flink's `DynamicKafkaSource` restored from a savepoint: `DynamicKafkaLineageJob` of
beam_pipelines/java/flink-jobs (connector 3.3.0-1.19, one cluster through `SingleClusterTopicMetadataService` at the
stack's broker), on the same run as the KafkaSource job's (`scenario/flink_kafka.py`: savepoint SP0 once the first
records are in the sink, records produced while the job is down, guard, restore, savepoint SP1, audit).
"""

from __future__ import annotations

from pathlib import Path

from splitaudit.home import JAVA_ROOT
from splitaudit.progress import Progress
from splitaudit_lab.scenario.flink_kafka import KafkaSourceRestore, run_kafka_source_restore
from splitaudit_lab.scenario.restore import ScenarioSettings
from splitaudit_lab.stack.stack import Stack

DYNAMIC_KAFKA_JOB = "flink-dynamic-kafka-lineage-job.jar"
CLUSTER_ID = "splitaudit-kafka"  # DynamicKafkaLineageJob.CLUSTER_ID: the id its metadata service gives the broker
SOURCE_UID = "dynamic-kafka-source"


def dynamic_kafka_job() -> Path:
    """The DynamicKafkaSource job's shaded jar, as the Maven reactor leaves it (`make setup` builds it)."""
    return JAVA_ROOT / "flink-jobs" / "target" / DYNAMIC_KAFKA_JOB


def run_dynamic_kafka_restore(
    stack: Stack, run_dir: Path, progress: Progress, settings: ScenarioSettings
) -> KafkaSourceRestore:
    """The DynamicKafkaSource job through a savepoint and a restore on a running `stack` (periodic partition
    discovery disabled, as the KafkaSource job's restore runs); everything it writes goes under `run_dir`."""
    return run_kafka_source_restore(stack, run_dir, progress, settings, jar=dynamic_kafka_job())
