"""Flink's DynamicKafkaSource (DynamicKafkaLineageJob of beam_pipelines/java/flink-jobs, connector 3.3.0-1.19, one
cluster through SingleClusterTopicMetadataService) on the stack's Flink 1.19.3: a clean savepoint restore, and
FLINK-40469's recovery window tried with a TaskManager kill while the job checkpoints every second.

- Clean restore: 3 partitions, 300 records (100 each), parallelism 2; SP0 once they are in the sink, 300 more
  while the job is down, restored from SP0, SP1. Every offset is in the sink once; `inspect` shows each
  partition with the cluster `splitaudit-kafka` at 100 in SP0; the guard (with `--bootstrap`) sees only the
  backlog (`lag` 100..199 on each) and the audit nothing.
- TaskManager kill: the same job, 3000 records, killed while it reads 1500 more, then 1500 after (2000 per
  partition); Flink restarts it from its latest checkpoint, enumerator included; every checkpoint it completes is
  copied as it appears. On 3.3.0 with Flink 1.19.3 restored readers keep their splits (no
  `SupportsSplitReassignmentOnRecovery`), so no checkpoint may show FLINK-40469's state: the guard's rule finds
  nothing in any of them, every checkpoint after the restart holds all three partitions, and nothing is missing
  from the sink.

Marker `flink_kafka` (`make flink-matrix`), not in `make test`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.progress import Progress
from splitaudit_lab.scenario.dynamic_kafka import run_dynamic_kafka_restore, run_dynamic_kafka_taskmanager_kill
from splitaudit_lab.scenario.restore import ScenarioSettings
from splitaudit_lab.stack.stack import Stack
from tests.integration.dynamic_kafka_checks import assert_clean_dynamic_restore, assert_no_recovery_loss

pytestmark = [pytest.mark.integration, pytest.mark.flink_kafka]


def test_a_clean_restore_shows_each_partition_with_its_cluster_and_is_clean(stack: Stack, tmp_path: Path) -> None:
    result = run_dynamic_kafka_restore(
        stack, tmp_path / "clean", Progress(), ScenarioSettings(partitions=3, records=300, parallelism=2)
    )
    assert_clean_dynamic_restore(result)


def test_no_checkpoint_of_a_taskmanager_kill_loses_a_partition_on_connector_3_3_0(stack: Stack, tmp_path: Path) -> None:
    result = run_dynamic_kafka_taskmanager_kill(
        stack, tmp_path, Progress(), ScenarioSettings(partitions=3, records=3000, parallelism=2)
    )
    assert_no_recovery_loss(result)
