"""The watch's pure judgement of a KafkaSource: the connector's per-partition gauges as Flink's REST API serves
them (names and values as measured on the stack's KafkaSource jobs, docs/flink-kafka-jobs.md), against the
savepoint's offsets and Kafka's."""

from __future__ import annotations

from splitaudit.audit.checks.findings import ERROR
from splitaudit.clients.flink import FlinkRestClient
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.guard.watch import PARTITION_READ_TWICE, WatchSettings
from splitaudit.guard.watch.kafka_source import (
    PARTITION_NOT_READ,
    READ_BELOW_RESTORED,
    SOURCE_STATE_DROPPED,
    KafkaSourceReaders,
    PositionSample,
    ReaderPosition,
    dropped,
    judge_positions,
    not_read,
    position_sample,
    source_vertex,
    wanted,
)
from splitaudit.guard.watch.loop import _Watch
from splitaudit.progress import Progress

DATASTREAM = "Source__Kafka_Source"  # KafkaLineageJob's source, named "Kafka Source"
SQL = "Source__records[4]"  # KafkaSqlLineageJob's source as its plan names it
TOPIC = "orders.v1-7"  # dots and a trailing -<digits>: both stay part of the topic


def _metrics(source: str, records_out: int, **partitions: tuple[int, int]) -> dict[str, str]:
    """A source subtask's metrics: `p0=(199, 200)` is partition 0 at currentOffset 199, committedOffset 200."""
    metrics = {f"{source}.numRecordsOut": str(records_out), f"{source}.KafkaSourceReader.commitsSucceeded": "3"}
    for name, (current, committed) in partitions.items():
        group = f"{source}.KafkaSourceReader.topic.{TOPIC}.partition.{name.removeprefix('p')}"
        metrics |= {f"{group}.currentOffset": str(current), f"{group}.committedOffset": str(committed)}
    return metrics


def _sample(subtask: int, records_out: int | None, **partitions: int) -> PositionSample:
    positions = {(TOPIC, int(p.removeprefix("p"))): ReaderPosition(c, -1) for p, c in partitions.items()}
    return PositionSample(subtask, positions, records_out)


def test_a_subtask_sample_reads_each_partitions_gauges_and_what_the_source_emitted() -> None:
    for source in (DATASTREAM, SQL):
        sample = position_sample(1, _metrics(source, 100, p1=(199, 200), p3=(-1, -1)))
        assert sample == PositionSample(
            1, {(TOPIC, 1): ReaderPosition(199, 200), (TOPIC, 3): ReaderPosition(-1, -1)}, 100
        )


def test_a_subtask_without_kafka_source_metrics_is_no_kafka_source() -> None:
    beam = {
        "Source__Read.KafkaIOReader_rawSize/orders-0": "DistributionResult{count=4}",
        "Source__Read.numRecordsOut": "4",
    }
    assert position_sample(0, beam) is None
    # A KafkaSource whose reader holds no partition (yet) is one, with nothing held.
    assert position_sample(0, _metrics(DATASTREAM, 0)) == PositionSample(0, {}, 0)


def test_the_kafka_clients_own_metrics_are_never_asked_for() -> None:
    assert not wanted(f"{DATASTREAM}.KafkaSourceReader.KafkaConsumer.records-consumed-total")
    assert wanted(f"{DATASTREAM}.KafkaSourceReader.topic.{TOPIC}.partition.0.currentOffset")
    assert wanted(f"{DATASTREAM}.numRecordsOut")


def test_a_clean_restore_is_silent() -> None:
    start = {(TOPIC, 0): 100, (TOPIC, 1): 100}
    # Not fetched yet, then mid-read (the fetcher runs ahead of what was emitted), then at the end.
    assert judge_positions([_sample(0, 0, p0=-1), _sample(1, 0, p1=-1)], start, {}) == []
    assert judge_positions([_sample(0, 40, p0=149), _sample(1, 100, p1=199)], start, {}) == []


def test_after_a_restart_only_twin_readers_are_judged() -> None:
    # Flink still serves the dead attempt's numRecordsOut: no start offset is judged against it.
    assert judge_positions([_sample(0, 200, p0=199)], None, {}) == []


def test_a_partition_on_two_subtasks_is_read_twice() -> None:
    start = {(TOPIC, 0): 100}
    findings = judge_positions([_sample(0, 0, p0=120), _sample(1, 0, p0=110)], start, {})
    assert [(f.kind, f.severity, f.partition, f.count) for f in findings] == [(PARTITION_READ_TWICE, ERROR, 0, 2)]


def test_a_reader_below_its_restored_offset_is_caught_by_its_position() -> None:
    start = {(TOPIC, 0): 100}
    # No numRecordsOut reported yet: the position alone says offsets 29..99 at least.
    findings = judge_positions([_sample(0, None, p0=29)], start, {})
    assert [(f.kind, f.partition, f.count, f.offset_ranges) for f in findings] == [
        (READ_BELOW_RESTORED, 0, 71, ((29, 99),))
    ]
    # 30 records emitted up to offset 29: it started at 0, the lower bound kept.
    findings = judge_positions([_sample(0, 30, p0=29)], start, {})
    assert [(f.partition, f.count, f.offset_ranges) for f in findings] == [(0, 100, ((0, 99),))]


def test_a_checkpoint_that_committed_below_the_restored_offset_is_a_rewind() -> None:
    sample = PositionSample(0, {(TOPIC, 0): ReaderPosition(150, 40)}, None)
    (finding,) = judge_positions([sample], {(TOPIC, 0): 100}, {})
    assert (finding.kind, finding.partition, finding.count, finding.offset_ranges) == (
        READ_BELOW_RESTORED, 0, 60, ((40, 99),)
    )  # fmt: skip


def test_a_rewound_reader_past_its_restored_offset_is_caught_by_what_it_emitted() -> None:
    # The restore with another source uid, as measured: each subtask emitted 200 records (offsets 0..199) while
    # its reader stands at 199, 100 past the savepoint's 100.
    start = {(TOPIC, 0): 100, (TOPIC, 1): 100}
    findings = judge_positions([_sample(0, 200, p0=199), _sample(1, 200, p1=199)], start, {})
    assert [(f.kind, f.topic, f.partition, f.count, f.offset_ranges) for f in findings] == [
        (READ_BELOW_RESTORED, TOPIC, p, 100, ((0, 99),)) for p in (0, 1)
    ]


def test_a_rewind_on_a_subtask_of_several_partitions_names_the_subtask() -> None:
    start = {(TOPIC, 0): 100, (TOPIC, 2): 100}
    (finding,) = judge_positions([_sample(0, 130, p0=149, p2=119)], start, {})
    assert (finding.kind, finding.topic, finding.partition, finding.count) == (READ_BELOW_RESTORED, None, None, 60)
    assert f"one of {TOPIC}-0, {TOPIC}-2" in finding.detail


def test_a_partition_new_since_the_savepoint_starts_at_its_log_start() -> None:
    kafka = {(TOPIC, 2): PartitionOffsets(10, 60)}
    assert judge_positions([_sample(0, 50, p2=59)], {}, kafka) == []
    (finding,) = judge_positions([_sample(0, 60, p2=59)], {}, kafka)
    assert (finding.kind, finding.partition, finding.count) == (READ_BELOW_RESTORED, None, 10)


def test_partitions_no_reader_held_are_not_read() -> None:
    start = {(TOPIC, 0): 100, (TOPIC, 1): 100}
    kafka = {
        (TOPIC, 0): PartitionOffsets(0, 250),
        (TOPIC, 1): PartitionOffsets(0, 250),
        (TOPIC, 2): PartitionOffsets(0, 50),
        (TOPIC, 3): PartitionOffsets(0, 50),
        (TOPIC, 4): PartitionOffsets(0, 0),  # empty and new: nothing to read
    }
    held = frozenset({(TOPIC, 0), (TOPIC, 1)})
    findings = not_read(held, start, kafka)
    assert [(f.kind, f.severity, f.partition, f.count, f.offset_ranges) for f in findings] == [
        (PARTITION_NOT_READ, ERROR, p, 50, ((0, 49),)) for p in (2, 3)
    ]
    # A restored partition never held, without Kafka's offsets: how much is unknown.
    (lost,) = not_read(frozenset({(TOPIC, 0)}), start, {})
    assert (lost.partition, lost.count, lost.offset_ranges) == (1, 0, ())
    assert "restored from offset 100" in lost.detail


def test_the_source_vertex_is_the_one_whose_id_holds_the_savepoints_splits() -> None:
    vertices = [
        {"id": "cbc357ccb763df2852fee8c4fc7d55f2", "name": "Source: records[4] -> Calc[5] -> Sink: JSON lines"},
        {"id": "ba40499bacce995f15693b1735928377", "name": "Sink: other"},
    ]
    assert source_vertex(vertices, ("cbc357ccb763df2852fee8c4fc7d55f2",)) == vertices[0]
    assert source_vertex(vertices, ("61252f73469d3ffba207c548d29a0267",)) is None
    finding = dropped(("61252f73469d3ffba207c548d29a0267",), vertices[0], "job-1")
    assert (finding.kind, finding.severity, finding.count) == (SOURCE_STATE_DROPPED, ERROR, 1)
    assert "61252f73469d3ffba207c548d29a0267, which is no vertex of job job-1" in finding.detail


def test_the_readers_remember_every_partition_held_at_any_poll() -> None:
    readers = KafkaSourceReaders()
    readers.polled([{"Source__Read.numRecordsOut": "1"}])
    assert (readers.seen, readers.samples) == (False, ())
    readers.polled([_metrics(DATASTREAM, 0, p0=(-1, -1)), _metrics(DATASTREAM, 0)])
    readers.polled([_metrics(DATASTREAM, 5, p1=(4, -1)), _metrics(DATASTREAM, 0)])
    assert readers.seen
    assert readers.held == {(TOPIC, 0), (TOPIC, 1)}
    assert [s.subtask for s in readers.samples] == [0, 1]


class _SqlJobFlink(FlinkRestClient):
    """A cluster listing one running SQL job: its source vertex not named `Source:` first (a vertex's id is its
    head operator's)."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:1")

    def jobs(self) -> list[dict[str, object]]:
        return [{"jid": "sql", "state": "RUNNING"}]

    def job(self, job_id: str) -> dict[str, object]:
        return {
            "vertices": [
                {"id": "ba40499bacce995f15693b1735928377", "name": "Source: other", "parallelism": 1},
                {"id": "cbc357ccb763df2852fee8c4fc7d55f2", "name": "Source: records[4] -> Calc[5]", "parallelism": 2},
            ]
        }


def test_the_watch_follows_the_vertex_holding_the_savepoints_splits_and_says_when_none_does() -> None:
    watch = _Watch(WatchSettings("http://127.0.0.1:1", "sql"), _SqlJobFlink(), Progress(), lambda _event: None)
    watch.sources = ("cbc357ccb763df2852fee8c4fc7d55f2",)
    job, source = watch.await_job()
    assert (job, source["id"], watch.source_restored(job, source)) == ("sql", "cbc357ccb763df2852fee8c4fc7d55f2", False)
    assert watch.events == []
    # The savepoint's source is no vertex of the job (another uid, allowNonRestoredState): by name, and an error.
    watch.sources = ("61252f73469d3ffba207c548d29a0267",)
    job, source = watch.await_job()
    assert source["id"] == "ba40499bacce995f15693b1735928377"
    assert watch.source_restored(job, source)
    assert [e.finding.kind for e in watch.events] == [SOURCE_STATE_DROPPED]
