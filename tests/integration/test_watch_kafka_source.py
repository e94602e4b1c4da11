"""`splitaudit watch` on Flink's own KafkaSource jobs (beam_pipelines/java/flink-jobs, connector 3.3.0-1.19, Flink
1.19.3): the connector's per-partition gauges (`currentOffset`, `committedOffset`) and the source's
numRecordsOut, judged against the savepoint's split offsets, with the source vertex found by the savepoint's state.

Each run: a topic of 2 partitions, 200 records (100 per partition) read by the job at parallelism 2, savepoint SP0
(both partitions at 100), 200 more records while it is down, then the restore under the watch (`--on-error
report`, from the submission to the job's end; `run_watched_kafka_source`), its findings and its final tally in
positions (per partition: restored offset, last `currentOffset`, range read, range expected, verdict) asserted:

- restored as it is: each partition read from 100 to 199 by one reader: the watch is silent;
- the SQL job (no uids) restored as it is: the same, its source found by SP0's split state;
- restored with another source uid and `allowNonRestoredState`: the source's splits are dropped and it reads both
  partitions again from earliest (KafkaLineageJob's starting offsets): `source_state_dropped`, and per partition
  `read_below_restored` of exactly the 100 offsets 0..99 below SP0's 100 (each subtask emitted 200 records while
  its reader advanced 100 past 100);
- 2 partitions added while the restored job runs with discovery off, 200 more records over 4 partitions: the new
  partitions are never read, and the watch ends with `partition_not_read` for each, offsets 0..49.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.audit.checks.findings import ERROR
from splitaudit.guard.positions import BELOW_RESTORED, NOT_READ, READ
from splitaudit.guard.watch.kafka_source import PARTITION_NOT_READ, READ_BELOW_RESTORED, SOURCE_STATE_DROPPED
from splitaudit.progress import Progress
from splitaudit_lab.scenario.flink_kafka import WatchedKafkaSource, kafka_sql_job, run_watched_kafka_source
from splitaudit_lab.scenario.restore import ScenarioSettings
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration

SETTINGS = ScenarioSettings(partitions=2, records=200, parallelism=2)


def events(result: WatchedKafkaSource) -> list[tuple[str, str, int | None, int, tuple[tuple[int, int], ...]]]:
    return [
        (e.finding.kind, e.finding.severity, e.finding.partition, e.finding.count, e.finding.offset_ranges)
        for e in result.watch.events
    ]


def positions(result: WatchedKafkaSource) -> list[tuple[int, int | None, int | None, object, object, str]]:
    """The final tally per partition: (partition, restored, last read, range read, expected range, verdict)."""
    assert result.watch.tally == ()  # a KafkaSource has no per-partition counts: positions only
    return [(p.partition, p.restored, p.last_read, p.read, p.expected, p.verdict) for p in result.watch.positions]


CLEAN_POSITIONS = [(p, 100, 199, (100, 199), (100, 199), READ) for p in (0, 1)]


def test_watch_is_silent_over_a_clean_kafka_source_restore(stack: Stack, tmp_path: Path) -> None:
    result = run_watched_kafka_source(stack, tmp_path / "clean", Progress(), SETTINGS)
    # The restored job's own rows: each partition from SP0's offset 100 to its end, once.
    assert result.rows == ((0, 100, 100, 199), (1, 100, 100, 199))
    assert (events(result), result.watch.exit_code, result.watch.job_state) == ([], 0, "CANCELED")
    assert result.watch.polls > 0
    assert positions(result) == CLEAN_POSITIONS


@pytest.mark.flink_kafka
def test_watch_finds_a_sql_jobs_source_by_its_state_and_is_silent(stack: Stack, tmp_path: Path) -> None:
    result = run_watched_kafka_source(stack, tmp_path / "sql", Progress(), SETTINGS, kafka_sql_job())
    assert result.rows == ((0, 100, 100, 199), (1, 100, 100, 199))
    assert (events(result), result.watch.exit_code) == ([], 0)
    assert result.watch.polls > 0
    assert positions(result) == CLEAN_POSITIONS


@pytest.mark.flink_kafka
def test_watch_catches_a_restore_that_dropped_the_sources_splits(stack: Stack, tmp_path: Path) -> None:
    result = run_watched_kafka_source(stack, tmp_path / "uid", Progress(), SETTINGS, source_uid="kafka-source-v2")
    # The truth: the restored job read both partitions again from offset 0, SP0's 0..99 a second time.
    assert result.rows == ((0, 200, 0, 199), (1, 200, 0, 199))
    seen = events(result)
    assert seen[0] == (SOURCE_STATE_DROPPED, ERROR, None, 1, ())
    # The rewind is judged at every poll and its figure only grows: the last event per partition is the final one.
    final = {e[2]: e for e in seen if e[0] == READ_BELOW_RESTORED}
    assert final == {p: (READ_BELOW_RESTORED, ERROR, p, 100, ((0, 99),)) for p in (0, 1)}
    assert {e[0] for e in seen} == {SOURCE_STATE_DROPPED, READ_BELOW_RESTORED}
    assert result.watch.exit_code == 1
    # The positions read 0..199: the rewind's 0..99 below the restored 100, then to the end.
    assert positions(result) == [(p, 100, 199, (0, 199), (100, 199), BELOW_RESTORED) for p in (0, 1)]


@pytest.mark.flink_kafka
def test_watch_catches_partitions_added_while_the_restored_job_runs_with_discovery_off(
    stack: Stack, tmp_path: Path
) -> None:
    result = run_watched_kafka_source(stack, tmp_path / "grown", Progress(), SETTINGS, grown_while_running=2)
    # The truth: p0 and p1 read from 100 to their end (250 records each), p2 and p3 not at all.
    assert result.rows == ((0, 150, 100, 249), (1, 150, 100, 249))
    assert events(result) == [(PARTITION_NOT_READ, ERROR, p, 50, ((0, 49),)) for p in (2, 3)]
    assert result.watch.exit_code == 1
    assert positions(result) == [
        (0, 100, 249, (100, 249), (100, 249), READ),
        (1, 100, 249, (100, 249), (100, 249), READ),
        (2, None, None, None, (0, 49), NOT_READ),
        (3, None, None, None, (0, 49), NOT_READ),
    ]
