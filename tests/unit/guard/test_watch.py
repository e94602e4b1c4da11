"""The watch's pure judgement of one poll: Flink's per-subtask source metrics as REST reports them, Kafka offsets."""

from __future__ import annotations

from splitaudit.audit.findings import ERROR, Finding
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.guard.watch import PARTITION_READ_TWICE, READ_MORE_THAN_AVAILABLE, judge_sample, subtask_sample

SOURCE = "Source__Read/KafkaIO_Read_ReadFromKafkaViaUnbounded/Read(KafkaUnboundedSource)"
TOPIC = "orders-7"  # a topic name that itself ends in -<digits>
TOPICS = frozenset({TOPIC})


def _metrics(**read: int) -> dict[str, str]:
    """A source subtask's metrics as Flink's REST API lists them: `p2=8997` is 8,997 records read of partition 2."""
    metrics = {f"{SOURCE}.numRecordsOut": str(sum(read.values())), f"{SOURCE}.source_splits_0_elements_read": "1"}
    for name, count in read.items():
        value = f"DistributionResult{{sum={count * 10}, count={count}, min=10, max=10}}"
        metrics[f"{SOURCE}.KafkaIOReader_rawSize/{TOPIC}-{name.removeprefix('p')}"] = value
    return metrics


def test_a_subtask_sample_reads_the_per_partition_counts_of_the_watched_topics() -> None:
    metrics = _metrics(p2=8997, p0=10) | {f"{SOURCE}.KafkaIOReader_rawSize/other-3": "DistributionResult{count=4}"}
    sample = subtask_sample(1, metrics, TOPICS)
    assert (sample.subtask, dict(sample.partitions)) == (1, {(TOPIC, 2): 8997, (TOPIC, 0): 10})


RESUME = {(TOPIC, p): 5000 for p in range(4)}
KAFKA = {(TOPIC, p): PartitionOffsets(0, 10_000) for p in range(4)}  # 5,000 records each past the restored offset


def _rows(findings: list[Finding]) -> list[tuple[str, str, str | None, int | None, int]]:
    return [(f.kind, f.severity, f.topic, f.partition, f.count) for f in findings]


def test_one_reader_per_partition_reading_no_more_than_available_is_silent() -> None:
    samples = (
        subtask_sample(0, _metrics(p0=5000, p2=4000), TOPICS),
        subtask_sample(1, _metrics(p1=5000, p3=1), TOPICS),
    )
    assert judge_sample(samples, RESUME, KAFKA) == []


def test_a_partition_on_two_subtasks_is_read_twice() -> None:
    samples = (
        subtask_sample(0, _metrics(p0=300, p2=300), TOPICS),
        subtask_sample(1, _metrics(p1=300, p2=200, p3=300), TOPICS),
    )
    findings = judge_sample(samples, RESUME, KAFKA)
    assert _rows(findings) == [(PARTITION_READ_TWICE, ERROR, TOPIC, 2, 2)]
    assert findings[0].detail.startswith("subtasks 0 and 1 both run a Kafka reader of this partition")


def test_twin_readers_on_one_subtask_read_more_than_the_partition_holds() -> None:
    # As the stock restored job does: both readers of partitions 0 and 2 on subtask 0, each 2,600 records in.
    samples = (subtask_sample(0, _metrics(p0=5200, p2=5000), TOPICS), subtask_sample(1, _metrics(p1=10), TOPICS))
    findings = judge_sample(samples, RESUME, KAFKA)
    assert _rows(findings) == [(READ_MORE_THAN_AVAILABLE, ERROR, TOPIC, 0, 200)]
    assert findings[0].detail == (
        "its readers read 5200 records since the restore, but it holds 5000 past offset 5000 (end offset 10000): "
        "at least 200 were read twice"
    )


def test_a_partition_the_savepoint_lacks_counts_from_its_log_start() -> None:
    kafka = KAFKA | {(TOPIC, 4): PartitionOffsets(100, 600)}  # grown: 500 records, none restored
    assert judge_sample((subtask_sample(0, _metrics(p4=500), TOPICS),), RESUME, kafka) == []
    assert _rows(judge_sample((subtask_sample(0, _metrics(p4=501), TOPICS),), RESUME, kafka)) == [
        (READ_MORE_THAN_AVAILABLE, ERROR, TOPIC, 4, 1)
    ]
