"""The KafkaSource restore failures of issue 38 that need no Flink 2.x, run for real on the stack's Flink 1.19.3
with connector 3.3.0-1.19 (the DataStream job of beam_pipelines/java/flink-jobs): the truth (the restored job's
rows in the sink, per partition and offset range, and for the bounded job its state), the guard's prediction
before the restore, the watch's findings while the restored job runs and the audit's findings after it, asserted
exactly (docs/flink-kafka-jobs.md). The other releases: test_flink_kafka_matrix_bugs.py.

Each run: a topic of 2 partitions (two topics for the removed-topic run), 200 records (100 per partition), the job
at parallelism 2 until they are in its sink and a checkpoint covers them, a savepoint SP0, cancel; then

- FLINK-31006: the job bounded at offset 200 per partition; 200 more records; restored from SP0 it reads
  100..199 of each partition and is still RUNNING 30 s later (cancelled after a savepoint SP1); with 2 partitions
  added while it was down (and every partition filled to 200) the restored job finishes, as the guard says;
- FLINK-34089: 200 more records to each topic; restored from SP0 subscribing to the first topic only, it reads
  100..199 of the second topic's partitions all the same;
- the topic deleted and re-created (2 partitions) with 100 records (50 per partition) behind SP0: the restored
  readers' offset 100 is past the new log end 50; auto.offset.reset earliest (setStartingOffsets earliest) sends
  them to 0: they read 0..49 of the new log;
- `--startingOffsets=latest` on the restore: the restored readers resume at SP0's 100 and read 100..199.

`make flink-matrix` (marker `flink_kafka`) runs them; `make test` does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.audit.checks.bounded_sources import BOUNDED_SOURCE_NOT_ENDED, BOUNDED_SPLIT_FINISHED
from splitaudit.audit.checks.findings import (
    ERROR,
    INFO,
    LAG,
    PAST_SAVEPOINT,
    REPLAY,
    REWIND,
    WARNING,
)
from splitaudit.audit.checks.recreated_topics import OFFSET_PAST_LOG_END
from splitaudit.audit.checks.removed_topics import REMOVED_TOPIC_READ
from splitaudit.guard.kafka_restore import BOUNDED_NEVER_FINISHES, STARTING_OFFSETS_IGNORED
from splitaudit.guard.kafka_restore import REMOVED_TOPIC_READ as STILL_READ
from splitaudit.guard.predict import DISCOVERED_ON_RESTORE
from splitaudit.progress import Progress
from splitaudit_lab.scenario.kafka_restore_bugs import (
    run_bounded_restore,
    run_recreated_topic_restore,
    run_removed_topic_restore,
    run_starting_offsets_restore,
)
from splitaudit_lab.scenario.restore import ScenarioSettings
from splitaudit_lab.stack.stack import Stack
from tests.integration.kafka_restore_rows import names, reads, rows, watch_rows

pytestmark = [pytest.mark.integration, pytest.mark.flink_kafka]

ONE_TOPIC = ScenarioSettings(partitions=2, records=200, parallelism=2, timeout=120.0)
TWO_TOPICS = ScenarioSettings(partitions=2, more_topics=(2,), records=200, parallelism=2, timeout=120.0)


def test_a_bounded_kafka_source_restored_from_a_savepoint_never_finishes(stack: Stack, tmp_path: Path) -> None:
    result = run_bounded_restore(stack, tmp_path / "bounded", Progress(), ONE_TOPIC, finish_wait=30.0)
    t = names(result)
    # The truth: every record up to the stopping offset read once, and the job still running 30 s later.
    assert reads(result, t) == [("A", 0, 100, ((100, 199),)), ("A", 1, 100, ((100, 199),))]
    assert [(p.partition, p.expected_records, p.sink_rows, p.missing_offsets) for p in result.run.partitions] == [
        (0, 200, 200, 0), (1, 200, 200, 0)
    ]  # fmt: skip
    assert result.state_after_wait == "RUNNING"
    # Before: SP0's splits stop at 200 and its KafkaSourceEnumState names both partitions assigned.
    assert rows(result.guard.findings, t) == [
        (LAG, INFO, "A", 0, 100, ((100, 199),)),
        (LAG, INFO, "A", 1, 100, ((100, 199),)),
        (BOUNDED_NEVER_FINISHES, ERROR, None, None, 2, ()),
    ]
    assert "its splits carry stopping offsets (200: a bounded source)" in result.guard.findings[2].detail
    # After: SP1's readers hold no split (each ended at 200), the enumerator names both assigned: finished
    # splits, and a source that never ended.
    assert rows(result.run.audit.findings, t) == [
        (BOUNDED_SPLIT_FINISHED, INFO, "A", 0, 0, ()),
        (BOUNDED_SPLIT_FINISHED, INFO, "A", 1, 0, ()),
        (BOUNDED_SPLIT_FINISHED, INFO, "A", 0, 0, ()),
        (BOUNDED_SPLIT_FINISHED, INFO, "A", 1, 0, ()),
        (BOUNDED_SOURCE_NOT_ENDED, WARNING, None, None, 2, ()),
    ]
    assert result.run.audit.exit_code == 0
    # The savepoints' audit with --bootstrap (the partitions from Kafka) says the same.
    assert result.savepoint_audit is not None
    assert rows(result.savepoint_audit.findings, t) == rows(result.run.audit.findings, t)
    # The watch: both readers at offset 199 for 10 s of polls, the job still running.
    assert watch_rows(result, t) == [(BOUNDED_NEVER_FINISHES, ERROR, None, None, 2, ())]


def test_a_bounded_restore_whose_topic_gained_partitions_finishes(stack: Stack, tmp_path: Path) -> None:
    grown = ScenarioSettings(partitions=2, records=200, parallelism=2, timeout=120.0, added_partitions=2)
    result = run_bounded_restore(stack, tmp_path / "bounded-grown", Progress(), grown, finish_wait=30.0)
    t = names(result)
    # 2 partitions added while down, 200 more records to each of the 4: each read up to the stopping offset 200.
    assert reads(result, t) == [
        ("A", 0, 100, ((100, 199),)), ("A", 1, 100, ((100, 199),)),
        ("A", 2, 200, ((0, 199),)), ("A", 3, 200, ((0, 199),)),
    ]  # fmt: skip
    assert result.state_after_wait == "FINISHED"
    # The guard sees the listing change (2 and 3 not in SP0's KafkaSourceEnumState): no never-finishes error.
    assert result.guard.safe
    assert rows(result.guard.findings, t) == [
        (DISCOVERED_ON_RESTORE, INFO, "A", 2, 200, ((0, 199),)),
        (DISCOVERED_ON_RESTORE, INFO, "A", 3, 200, ((0, 199),)),
        (LAG, INFO, "A", 0, 200, ((100, 299),)),
        (LAG, INFO, "A", 1, 200, ((100, 299),)),
    ]
    assert result.savepoint_audit is None  # a finished job takes no savepoint
    assert result.run.audit.findings == ()  # its sink against the topic: every offset below 200 once
    assert watch_rows(result, t) == []
    assert result.watch.job_state == "FINISHED"


def test_a_topic_removed_from_the_subscription_is_still_read_after_the_restore(stack: Stack, tmp_path: Path) -> None:
    result = run_removed_topic_restore(stack, tmp_path / "removed", Progress(), TWO_TOPICS)
    t = names(result)
    assert reads(result, t) == [
        ("A", 0, 100, ((100, 199),)), ("A", 1, 100, ((100, 199),)),
        ("B", 0, 100, ((100, 199),)), ("B", 1, 100, ((100, 199),)),
    ]  # fmt: skip
    assert rows(result.guard.findings, t) == [
        *[(LAG, INFO, topic, p, 100, ((100, 199),)) for topic in "AB" for p in (0, 1)],
        (STILL_READ, ERROR, "B", 0, 100, ((100, 199),)),
        (STILL_READ, ERROR, "B", 1, 100, ((100, 199),)),
    ]
    assert result.run.audit.findings == ()  # without the subscription the sink and savepoints look clean
    assert result.savepoint_audit is not None
    assert rows(result.savepoint_audit.findings, t) == [
        (REMOVED_TOPIC_READ, ERROR, "B", 0, 100, ((100, 199),)),
        (REMOVED_TOPIC_READ, ERROR, "B", 1, 100, ((100, 199),)),
    ]
    # The watch told the subscription (--kafka-topics A): B's readers, and what they fetched.
    assert watch_rows(result, t) == rows(result.savepoint_audit.findings, t)


def test_a_topic_recreated_behind_the_savepoint_sends_the_readers_to_auto_offset_reset(
    stack: Stack, tmp_path: Path
) -> None:
    result = run_recreated_topic_restore(stack, tmp_path / "recreated", Progress(), ONE_TOPIC, 100)
    t = names(result)
    # The new log holds 0..49 per partition; SP0 resumes at 100; earliest: the restored readers read 0..49.
    assert reads(result, t) == [("A", 0, 50, ((0, 49),)), ("A", 1, 50, ((0, 49),))]
    assert result.guard.safe
    assert rows(result.guard.findings, t) == [(OFFSET_PAST_LOG_END, WARNING, "A", p, 50, ((0, 49),)) for p in (0, 1)]
    assert "auto.offset.reset decides: earliest (setStartingOffsets earliest)" in result.guard.findings[0].detail
    # The sink's audit, told nothing of Kafka, sees the new log's offsets as a rewind and replays of the old ones.
    assert rows(result.run.audit.findings, t) == [
        (REWIND, ERROR, "A", 0, 50, ((50, 99),)),
        (REWIND, ERROR, "A", 1, 50, ((50, 99),)),
        (REPLAY, WARNING, "A", 0, 50, ((0, 49),)),
        (REPLAY, WARNING, "A", 1, 50, ((0, 49),)),
        (PAST_SAVEPOINT, WARNING, "A", 0, 50, ((50, 99),)),
        (PAST_SAVEPOINT, WARNING, "A", 1, 50, ((50, 99),)),
    ]
    # With --bootstrap the log's end below SP0's offsets says why.
    assert result.savepoint_audit is not None
    assert rows(result.savepoint_audit.findings, t) == [
        (REWIND, ERROR, "A", 0, 50, ((50, 99),)),
        (REWIND, ERROR, "A", 1, 50, ((50, 99),)),
        (OFFSET_PAST_LOG_END, WARNING, "A", 0, 50, ((0, 49),)),
        (OFFSET_PAST_LOG_END, WARNING, "A", 1, 50, ((0, 49),)),
    ]
    assert "it read offsets 0..49 of the new log" in result.savepoint_audit.findings[2].detail
    # The watch: readers below the restored offset 100 of a log that ends at 50: reset, not a second read.
    assert watch_rows(result, t) == [(OFFSET_PAST_LOG_END, WARNING, "A", p, 50, ((0, 49),)) for p in (0, 1)]


def test_a_topic_recreated_behind_the_savepoint_restored_with_latest_loses_the_new_log(
    stack: Stack, tmp_path: Path
) -> None:
    quick = ScenarioSettings(partitions=2, records=200, parallelism=2, timeout=30.0)
    result = run_recreated_topic_restore(stack, tmp_path / "recreated-latest", Progress(), quick, 100, "latest")
    t = names(result)
    assert reads(result, t) == []  # auto.offset.reset latest: the new log's 50 records per partition never read
    assert rows(result.guard.findings, t) == [(OFFSET_PAST_LOG_END, ERROR, "A", p, 50, ((0, 49),)) for p in (0, 1)]
    assert "it skips to the log end: the 50 records there are lost" in result.guard.findings[0].detail
    assert result.run.audit.findings == ()  # the sink holds no offset of the new log: nothing to see there
    assert result.savepoint_audit is not None
    # SP1 still holds both partitions at 100 (no record moved them): none of the new log was read.
    assert rows(result.savepoint_audit.findings, t) == [
        (OFFSET_PAST_LOG_END, ERROR, "A", p, 50, ((0, 49),)) for p in (0, 1)
    ]
    assert "still holds it at 100, past the new log" in result.savepoint_audit.findings[0].detail
    # The watch, at the job's end: no reader fetched anything of either partition.
    assert watch_rows(result, t) == [(OFFSET_PAST_LOG_END, ERROR, "A", p, 50, ((0, 49),)) for p in (0, 1)]


def test_starting_offsets_are_ignored_on_restore(stack: Stack, tmp_path: Path) -> None:
    result = run_starting_offsets_restore(stack, tmp_path / "starting", Progress(), ONE_TOPIC)
    t = names(result)
    # Restored with --startingOffsets=latest, the readers resume at SP0's 100: the backlog is read, not skipped.
    assert reads(result, t) == [("A", 0, 100, ((100, 199),)), ("A", 1, 100, ((100, 199),))]
    assert rows(result.guard.findings, t) == [
        (LAG, INFO, "A", 0, 100, ((100, 199),)),
        (LAG, INFO, "A", 1, 100, ((100, 199),)),
        (STARTING_OFFSETS_IGNORED, INFO, "A", 0, 0, ()),
        (STARTING_OFFSETS_IGNORED, INFO, "A", 1, 0, ()),
    ]
    assert result.run.audit.findings == ()
    assert watch_rows(result, t) == []
