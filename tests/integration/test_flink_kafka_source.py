"""Flink's own KafkaSource (the Flink-native job of beam_pipelines/java/flink-jobs, connector 3.3.0-1.19) on the
stack's Flink 1.19.3: what a grown topic does to it, measured from its sink, with `guard`'s prediction and the
audit's findings asserted per partition and offset range against that truth.

Each run: a topic of 2 partitions, 200 records (100 per partition), parallelism 2; a savepoint SP0 once they are
in the sink; 2 partitions added (or none), then 200 more records over every partition the topic has (record i to
partition i % P: 50 per partition over 4, 100 over 2).

- Grown while the job was down, periodic discovery disabled (`partition.discovery.interval.ms` -1), restored
  from SP0: the restored enumerator lists the topic once at start all the same and assigns the 2 new partitions
  from earliest, so every offset is read exactly once (issue 38 expected them never read: the real run says
  otherwise). The guard predicts `partition_discovered_on_restore` for 2 and 3, offsets 0..49, from SP0's
  enumerator state; the audit sees them new in SP1 (`partition_new`).
- Grown while the job runs, discovery disabled: the new partitions are never read (`partition_unassigned` in the
  audit, 50 offsets missing from each); the guard on SP1 says a restore would read them from earliest.
- Grown while the job runs, discovery every second: read (the workaround).
- No change while down: guard and audit call the restore clean.
- The SQL job (the Table API's `kafka` connector, no uids) grown while down: the same as the DataStream job; the
  guard finds its source by its split state, under Flink's generated operator id.

`make test` runs the clean restore; `make flink-matrix` (marker `flink_kafka`) all of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.audit.checks.findings import ERROR, INFO, LAG, NEW_PARTITION, UNASSIGNED
from splitaudit.guard.predict import DISCOVERED_ON_RESTORE
from splitaudit.progress import Progress
from splitaudit_lab.scenario.flink_kafka import (
    DISCOVERY_DISABLED,
    kafka_sql_job,
    run_kafka_source_grown_while_running,
    run_kafka_source_restore,
)
from splitaudit_lab.scenario.restore import ScenarioSettings
from splitaudit_lab.stack.stack import Stack
from tests.integration.kafka_source_rows import assert_clean_restore, finding_rows, truth

pytestmark = pytest.mark.integration

CLEAN = ScenarioSettings(partitions=2, records=200, parallelism=2)
GROWN = ScenarioSettings(partitions=2, records=200, parallelism=2, added_partitions=2)


def test_a_clean_restore_is_clean_to_guard_and_audit(stack: Stack, tmp_path: Path) -> None:
    result = run_kafka_source_restore(stack, tmp_path / "clean", Progress(), CLEAN)
    assert_clean_restore(result)


@pytest.mark.flink_kafka
def test_partitions_added_while_down_are_read_from_earliest_with_discovery_disabled(
    stack: Stack, tmp_path: Path
) -> None:
    result = run_kafka_source_restore(stack, tmp_path / "grown-down", Progress(), GROWN, DISCOVERY_DISABLED)
    assert truth(result) == [(0, 150, 150, 0, 0), (1, 150, 150, 0, 0), (2, 50, 50, 0, 0), (3, 50, 50, 0, 0)]
    # Before the restore: the new partitions are absent from SP0's enumerator state, so read from the log start.
    assert result.guard.safe
    assert finding_rows(result.guard.findings) == [
        (DISCOVERED_ON_RESTORE, INFO, 2, 50, ((0, 49),)),
        (DISCOVERED_ON_RESTORE, INFO, 3, 50, ((0, 49),)),
        (LAG, INFO, 0, 50, ((100, 149),)),
        (LAG, INFO, 1, 50, ((100, 149),)),
    ]
    assert "decided by the savepoint, whose KafkaSourceEnumState does not name it" in result.guard.findings[0].detail
    # After: SP1 holds them, SP0 did not; every partition at its end.
    assert finding_rows(result.run.audit.findings) == [(NEW_PARTITION, INFO, p, 0, ()) for p in (2, 3)]
    assert result.run.audit.exit_code == 0
    (matrix,) = result.run.audit.assignment
    assert sorted((row.partition, h.next_offset) for row in matrix.partitions for h in row.holders) == [
        (0, 150), (1, 150), (2, 50), (3, 50)
    ]  # fmt: skip


@pytest.mark.flink_kafka
def test_partitions_added_while_running_with_discovery_disabled_are_never_read(stack: Stack, tmp_path: Path) -> None:
    result = run_kafka_source_grown_while_running(stack, tmp_path / "grown-running", Progress(), GROWN)
    assert truth(result) == [(0, 150, 150, 0, 0), (1, 150, 150, 0, 0), (2, 50, 0, 0, 50), (3, 50, 0, 0, 50)]
    # The audit: SP1's readers and enumerator hold neither (the sink's coverage, above, misses all 50 offsets of each).
    assert finding_rows(result.run.audit.findings) == [(UNASSIGNED, ERROR, p, 0, ()) for p in (2, 3)]
    assert result.run.audit.exit_code == 1
    # A restart from SP1 lists the topic once at start: the guard says it reads them from earliest.
    assert [(f.kind, f.partition, f.count, f.offset_ranges) for f in result.guard.findings] == [
        (DISCOVERED_ON_RESTORE, 2, 50, ((0, 49),)),
        (DISCOVERED_ON_RESTORE, 3, 50, ((0, 49),)),
    ]


@pytest.mark.flink_kafka
def test_partitions_added_while_running_are_read_with_discovery_enabled(stack: Stack, tmp_path: Path) -> None:
    result = run_kafka_source_grown_while_running(stack, tmp_path / "grown-discovery", Progress(), GROWN, 1000)
    assert truth(result) == [(0, 150, 150, 0, 0), (1, 150, 150, 0, 0), (2, 50, 50, 0, 0), (3, 50, 50, 0, 0)]
    assert result.run.audit.findings == ()
    assert result.guard.findings == ()


@pytest.mark.flink_kafka
def test_a_sql_job_without_uids_reads_partitions_added_while_down_and_guard_finds_its_source(
    stack: Stack, tmp_path: Path
) -> None:
    result = run_kafka_source_restore(stack, tmp_path / "sql", Progress(), GROWN, DISCOVERY_DISABLED, kafka_sql_job())
    assert truth(result) == [(0, 150, 150, 0, 0), (1, 150, 150, 0, 0), (2, 50, 50, 0, 0), (3, 50, 50, 0, 0)]
    (source,) = result.guard.sources
    assert source.families == ("kafka",)  # found by its split state: the SQL job gives no operator a uid
    assert finding_rows(result.guard.findings) == [
        (DISCOVERED_ON_RESTORE, INFO, 2, 50, ((0, 49),)),
        (DISCOVERED_ON_RESTORE, INFO, 3, 50, ((0, 49),)),
        (LAG, INFO, 0, 50, ((100, 149),)),
        (LAG, INFO, 1, 50, ((100, 149),)),
    ]
    assert finding_rows(result.run.audit.findings) == [(NEW_PARTITION, INFO, p, 0, ()) for p in (2, 3)]
