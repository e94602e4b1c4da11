"""The watch's pure judgments of a KafkaSource's restore failures (splitaudit/guard/watch/kafka_restore.py): the
connector's per-partition gauges of the restore-failure runs (docs/flink-kafka-jobs.md, "Restore failures": 2
partitions restored at offset 100), against the savepoint's splits and Kafka's offsets."""

from __future__ import annotations

import click
from click.testing import CliRunner

from splitaudit.audit.checks.findings import ERROR, WARNING, Finding
from splitaudit.audit.checks.recreated_topics import OFFSET_PAST_LOG_END
from splitaudit.audit.checks.removed_topics import REMOVED_TOPIC_READ
from splitaudit.audit.checks.savepoint_tables import SavepointTables
from splitaudit.cli.watch import WATCH_SETTINGS
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.guard.kafka_restore import BOUNDED_NEVER_FINISHES
from splitaudit.guard.watch import WatchSettings
from splitaudit.guard.watch.judging import READ_TWICE
from splitaudit.guard.watch.kafka_restore import (
    BOUNDED_GRACE,
    KafkaRestoreWatch,
    bounded_at_end,
    offset_resets,
    removed_topics_read,
    resets_unread,
    stopping_offsets,
    without_reset_tallies,
)
from splitaudit.guard.watch.kafka_source import (
    NOT_YET,
    READ_BELOW_RESTORED,
    KafkaSourceReaders,
    PositionSample,
    ReaderPosition,
)

START = {("A", 0): 100, ("A", 1): 100}


def _sample(subtask: int, **positions: int) -> PositionSample:
    """A subtask's gauges: `A0=149` is topic A's partition 0 at currentOffset 149 (committed: none yet)."""
    return PositionSample(
        subtask, {(name[0], int(name[1:])): ReaderPosition(current, NOT_YET) for name, current in positions.items()}, 0
    )


def _rows(findings: list[Finding]) -> list[tuple[str, str, str | None, int | None, int, tuple[tuple[int, int], ...]]]:
    return [(f.kind, f.severity, f.topic, f.partition, f.count, f.offset_ranges) for f in findings]


def _tables(*splits: tuple[str, int, int, int | None]) -> SavepointTables:
    rows = tuple(
        {"operator_id": "op", "topic": t, "partition": p, "next_offset": n, "stopping_offset": s}
        for t, p, n, s in splits
    )
    return SavepointTables("sp", 1, (), rows, ())


def test_the_savepoints_stopping_offsets_are_the_bounded_splits() -> None:
    tables = _tables(("A", 0, 100, 200), ("A", 1, 100, 200), ("B", 0, 5, None), ("B", 1, 5, -1))
    assert stopping_offsets(tables) == {("A", 0): 200, ("A", 1): 200}  # -1 (latest) is the reader's to resolve


def test_a_reader_of_a_removed_topic_is_named_with_the_offsets_it_read() -> None:
    start = {**START, ("B", 0): 100, ("B", 1): 100}
    samples = [_sample(0, A0=199, B1=150), _sample(1, A1=120, B0=NOT_YET)]
    assert _rows(removed_topics_read(samples, frozenset({"A"}), start)) == [
        (REMOVED_TOPIC_READ, ERROR, "B", 1, 51, ((100, 150),))  # B0 held, nothing fetched yet: not proven
    ]
    assert removed_topics_read(samples, frozenset({"A", "B"}), start) == []


def test_bounded_readers_at_their_stopping_offsets_for_the_grace_are_a_source_that_never_finishes() -> None:
    stopping = {("A", 0): 200, ("A", 1): 200}
    assert not bounded_at_end([_sample(0, A0=199), _sample(1, A1=198)], stopping, START)
    assert bounded_at_end([_sample(0, A0=199), _sample(1, A1=199)], stopping, START)
    assert bounded_at_end([_sample(0, A0=199)], stopping, {**START, ("A", 1): 200})  # restored at its end
    assert not bounded_at_end([_sample(0, A0=199)], {}, START)  # unbounded
    watch = KafkaRestoreWatch(None, stopping)
    at_end = [_sample(0, A0=199), _sample(1, A1=199)]
    assert watch.judge([], at_end, START, {}, 5.0) == []
    assert watch.judge([], at_end, START, {}, 5.0 + BOUNDED_GRACE - 0.1) == []
    (finding,) = watch.judge([], at_end, START, {}, 5.0 + BOUNDED_GRACE)
    assert (finding.kind, finding.severity, finding.count) == (BOUNDED_NEVER_FINISHES, ERROR, 2)
    assert "(A-0 at 200, A-1 at 200)" in finding.detail
    # A reader behind again (a restart) starts the grace anew.
    assert watch.judge([], [_sample(0, A0=150), _sample(1, A1=199)], START, {}, 30.0) == []
    assert watch.judge([], at_end, START, {}, 31.0) == []


def test_a_reader_reset_to_a_recreated_logs_start_is_an_offset_past_the_log_end_not_a_second_read() -> None:
    kafka = {key: PartitionOffsets(0, 50) for key in START}
    below = [Finding(READ_BELOW_RESTORED, ERROR, "A", p, 100, ((0, 99),)) for p in (0, 1)]
    samples = [_sample(0, A0=49), _sample(1, A1=NOT_YET)]
    # Below a restored offset past the log end is another log, never a second read: A1, not seen reading yet,
    # is judged at the end (`resets_unread`).
    assert _rows(offset_resets(below, samples, START, kafka)) == [
        (OFFSET_PAST_LOG_END, WARNING, "A", 0, 50, ((0, 49),))
    ]
    # A log that still holds the restored offsets: a reader below them reads them again.
    grown = {key: PartitionOffsets(0, 300) for key in START}
    assert offset_resets(below, samples, START, grown) == below


def test_a_partition_restored_past_its_log_end_and_never_read_is_lost_at_the_end() -> None:
    kafka = {("A", 0): PartitionOffsets(0, 50), ("A", 1): PartitionOffsets(0, 50)}
    assert _rows(resets_unread({("A", 0): NOT_YET}, START, kafka)) == [
        (OFFSET_PAST_LOG_END, ERROR, "A", 0, 50, ((0, 49),)),
        (OFFSET_PAST_LOG_END, ERROR, "A", 1, 50, ((0, 49),)),
    ]
    assert _rows(resets_unread({("A", 0): 49}, START, kafka)) == [(OFFSET_PAST_LOG_END, ERROR, "A", 1, 50, ((0, 49),))]
    assert resets_unread({}, START, {key: PartitionOffsets(0, 0) for key in START}) == []  # an empty new log
    readers = KafkaSourceReaders()  # what the watch passes at its end: the last offset each reader fetched
    gauge = "Source__Kafka_Source.KafkaSourceReader.topic.A.partition.{}.currentOffset"
    readers.polled([{gauge.format(0): str(NOT_YET)}, {gauge.format(1): "20"}])
    assert _rows(resets_unread(readers.last_read, START, kafka)) == [
        (OFFSET_PAST_LOG_END, ERROR, "A", 0, 50, ((0, 49),))
    ]


def test_the_tally_of_a_partition_restored_past_its_log_end_is_dropped() -> None:
    tally = [Finding(READ_TWICE, ERROR, "A", p, 50) for p in (0, 1)]
    recreated = {("A", 0): PartitionOffsets(0, 50), ("A", 1): PartitionOffsets(0, 300)}
    assert without_reset_tallies(tally, START, recreated) == tally[1:]


def test_kafka_topics_reach_the_watch_settings_as_a_tuple() -> None:
    seen: list[WatchSettings] = []

    @click.command()
    @WATCH_SETTINGS
    def probe(watch_settings: WatchSettings) -> None:
        seen.append(watch_settings)

    base = ["--flink-rest", "http://127.0.0.1:8081", "--job", "j"]
    for given, topics in ((["--kafka-topics", "A,orders.v1"], ("A", "orders.v1")), ([], None)):
        result = CliRunner().invoke(probe, base + given)
        assert result.exit_code == 0, result.output
        assert seen.pop().kafka_topics == topics
