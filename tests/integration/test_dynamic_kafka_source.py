"""Flink's DynamicKafkaSource (DynamicKafkaLineageJob of beam_pipelines/java/flink-jobs, one cluster through
SingleClusterTopicMetadataService) on every release of the KafkaSource matrix: the job built against each
flink-connector-kafka release (3.3.0-1.19 by every `make setup`, 3.4.0-1.20 to 5.0.0-2.2 by `setup --matrix`;
`ConnectorRelease.dynamic_job`) and run on its Flink (1.19.3 to 2.2.1), on the matrix's stack of that release:

- Clean restore: 3 partitions, 300 records (100 each), parallelism 2; SP0 once they are in the sink, 300 more
  while the job is down, restored from SP0, SP1. Every offset is in the sink once; `inspect` shows each
  partition with the cluster `splitaudit-kafka` at 100 in SP0; the guard (with `--bootstrap`) sees only the
  backlog (`lag` 100..199 on each) and the audit nothing.
- The watch over a clean restore: silent, each partition read from SP0's 100 to 199 by the connector's positions.
- TaskManager kill (FLINK-40469's recovery window tried): the same job, 3000 records, killed while it reads 1500
  more, then 1500 after (2000 per partition); Flink restarts it from its latest checkpoint, enumerator included;
  every checkpoint it completes is copied as it appears. No released DynamicKafkaSource implements
  `SupportsSplitReassignmentOnRecovery` (5.0.0-2.2 included): restored readers keep their splits, so no checkpoint
  may show FLINK-40469's state: the guard's rule finds nothing in any of them, every checkpoint after the restart
  holds all three partitions, and nothing is missing from the sink.

Marker `flink_kafka` (`make flink-matrix`), but for the clean restore on the stack's own release, `make test`'s one
real run of the family.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.audit.checks.findings import INFO, LAG
from splitaudit.audit.checks.savepoint_tables import savepoint_tables
from splitaudit.guard.dynamic_kafka import recovery_window_losses
from splitaudit.progress import Progress
from splitaudit_lab.scenario.dynamic_kafka import (
    CLUSTER_ID,
    dynamic_kafka_job,
    run_dynamic_kafka_restore,
    run_dynamic_kafka_taskmanager_kill,
)
from splitaudit_lab.scenario.flink_kafka import run_watched_kafka_source
from splitaudit_lab.scenario.restore import ScenarioSettings
from splitaudit_lab.stack.kafka_matrix import OTHER_RELEASES
from splitaudit_lab.stack.stack import Stack
from tests.integration.test_flink_kafka_matrix import MatrixStack, matrix
from tests.integration.test_watch_kafka_source import CLEAN_POSITIONS, events, positions

pytestmark = [pytest.mark.integration, pytest.mark.needs_build]

__all__ = ["matrix"]  # the per-release stack fixture, shared with the KafkaSource matrix


def test_a_clean_restore_on_the_stacks_own_release(stack: Stack, tmp_path: Path) -> None:
    _assert_clean_restore(stack, dynamic_kafka_job(), tmp_path)


@pytest.mark.flink_kafka
@pytest.mark.parametrize("matrix", OTHER_RELEASES, ids=[r.label for r in OTHER_RELEASES], indirect=True)
def test_a_clean_restore_shows_each_partition_with_its_cluster_and_is_clean(
    matrix: MatrixStack, tmp_path: Path
) -> None:
    _assert_clean_restore(matrix.stack, matrix.release.dynamic_job, tmp_path)


def _assert_clean_restore(stack: Stack, jar: Path, tmp_path: Path) -> None:
    assert jar.is_file(), f"{jar} missing: run `splitaudit setup --matrix`"
    settings = ScenarioSettings(partitions=3, records=300, parallelism=2)
    result = run_dynamic_kafka_restore(stack, tmp_path / "clean", Progress(), settings, jar)
    assert [(p.partition, p.expected_records, p.sink_rows, p.missing_offsets) for p in result.run.partitions] == [
        (p, 200, 200, 0) for p in range(3)
    ]
    sp0 = savepoint_tables(result.run.savepoint_before)
    assert sorted((r["cluster"], r["partition"], r["next_offset"]) for r in sp0.splits) == [
        (CLUSTER_ID, p, 100) for p in range(3)
    ]
    assert result.guard.safe
    assert [(f.kind, f.severity, f.partition, f.count, f.offset_ranges) for f in result.guard.findings] == [
        (LAG, INFO, p, 100, ((100, 199),)) for p in range(3)
    ]
    assert result.run.audit.findings == ()


@pytest.mark.flink_kafka
def test_the_watch_follows_a_clean_restore_and_is_silent(matrix: MatrixStack, tmp_path: Path) -> None:
    """A DynamicKafkaSource's readers report the KafkaSourceReader metrics of its sub-readers: the watch reads the
    same per-partition positions (2 partitions, 200 records, parallelism 2, as the KafkaSource
    job's watched restores)."""
    settings = ScenarioSettings(partitions=2, records=200, parallelism=2)
    jar = matrix.release.dynamic_job
    result = run_watched_kafka_source(matrix.stack, tmp_path / "watched", Progress(), settings, jar)
    assert result.rows == ((0, 100, 100, 199), (1, 100, 100, 199))
    assert (events(result), result.watch.exit_code) == ([], 0)
    assert positions(result) == CLEAN_POSITIONS


@pytest.mark.flink_kafka
def test_no_checkpoint_of_a_taskmanager_kill_loses_a_partition(matrix: MatrixStack, tmp_path: Path) -> None:
    settings = ScenarioSettings(partitions=3, records=3000, parallelism=2)
    result = run_dynamic_kafka_taskmanager_kill(
        matrix.stack, tmp_path, Progress(), settings, matrix.release.dynamic_job
    )
    assert [(p.partition, p.expected_records, p.missing_offsets) for p in result.run.partitions] == [
        (p, 2000, 0) for p in range(3)
    ]
    restart = int(result.run.savepoint_before.rstrip("/").rsplit("chk-", 1)[1])  # the checkpoint restored from
    recovery = [c for c in result.checkpoints if int(c.name.removeprefix("chk-")) > restart]
    assert recovery, result.checkpoints
    for checkpoint in result.checkpoints:
        assert recovery_window_losses(savepoint_tables(str(checkpoint))) == (), checkpoint
    # The restored readers keep their splits: every checkpoint after the restart holds all three partitions.
    for checkpoint in recovery:
        held = {(r["cluster"], r["partition"]) for r in savepoint_tables(str(checkpoint)).splits}
        assert held == {(CLUSTER_ID, p) for p in range(3)}, checkpoint
