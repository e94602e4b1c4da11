"""DynamicKafkaSource across the KafkaSource matrix: `DynamicKafkaLineageJob` built against each other
flink-connector-kafka release (3.4.0-1.20, 4.0.1-2.0, 5.0.0-2.1, 5.0.0-2.2; `ConnectorRelease.dynamic_job`) and run on
the matching Flink (1.20.3, 2.0.1, 2.1.1, 2.2.1), with the checks test_dynamic_kafka_source.py makes on the stack's
own pair (3.3.0-1.19 on 1.19.3):

- a clean savepoint restore (3 partitions, 300 records, parallelism 2): every offset in the sink once, SP0's splits
  each with the cluster `splitaudit-kafka` at 100, the guard's `lag` 100..199 only, the audit clean;
- FLINK-40469's recovery window tried with a TaskManager kill while the job checkpoints every second: no checkpoint,
  those of the recovery included, shows its state (no released DynamicKafkaSource implements
  `SupportsSplitReassignmentOnRecovery`, 5.0.0-2.2 included: restored readers keep their splits), and nothing is
  missing from the sink.

Marker `flink_kafka` (`make flink-matrix`, after `splitaudit setup --matrix`), not in `make test`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.progress import Progress
from splitaudit_lab.scenario.dynamic_kafka import run_dynamic_kafka_restore, run_dynamic_kafka_taskmanager_kill
from splitaudit_lab.scenario.restore import ScenarioSettings
from tests.integration.dynamic_kafka_checks import assert_clean_dynamic_restore, assert_no_recovery_loss
from tests.integration.test_flink_kafka_matrix import MatrixStack, matrix

pytestmark = [pytest.mark.integration, pytest.mark.needs_build, pytest.mark.flink_kafka]

__all__ = ["matrix"]  # the per-release stack fixture, shared with the KafkaSource matrix


def test_a_clean_restore_shows_each_partition_with_its_cluster_and_is_clean(
    matrix: MatrixStack, tmp_path: Path
) -> None:
    jar = matrix.release.dynamic_job
    assert jar.is_file(), f"{jar} missing: run `splitaudit setup --matrix`"
    settings = ScenarioSettings(partitions=3, records=300, parallelism=2)
    assert_clean_dynamic_restore(run_dynamic_kafka_restore(matrix.stack, tmp_path / "clean", Progress(), settings, jar))


def test_no_checkpoint_of_a_taskmanager_kill_loses_a_partition(matrix: MatrixStack, tmp_path: Path) -> None:
    settings = ScenarioSettings(partitions=3, records=3000, parallelism=2)
    result = run_dynamic_kafka_taskmanager_kill(
        matrix.stack, tmp_path, Progress(), settings, matrix.release.dynamic_job
    )
    assert_no_recovery_loss(result)
