"""The guard's KafkaSource restore predictions (`guard/kafka_restore.py`) on snapshots laid out as connector 3.3.0
writes them (enumerator state version 2), the real runs' figures: 2 partitions at offset 100, stopping at 200."""

from __future__ import annotations

import pytest

from splitaudit.audit.checks.findings import ERROR, INFO, WARNING, Finding
from splitaudit.audit.checks.recreated_topics import OFFSET_PAST_LOG_END
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.errors import UsageError
from splitaudit.guard.kafka_restore import (
    BOUNDED_NEVER_FINISHES,
    REMOVED_TOPIC_READ,
    STARTING_OFFSETS_IGNORED,
    KafkaSourceJob,
    KafkaSourceSnapshot,
    kafka_restore_findings,
)
from splitaudit.splits.kafka import (
    NO_STOPPING_OFFSET,
    KafkaEnumeratorState,
    KafkaPartitionAssignment,
    KafkaPartitionSplit,
)

A, B = "orders", "audit-log"


def _snapshot(stopping: int, topics: tuple[str, ...] = (A,), status: str = "ASSIGNED") -> KafkaSourceSnapshot:
    keys = [(t, p) for t in topics for p in (0, 1)]
    splits = tuple(KafkaPartitionSplit(t, p, 100, stopping) for t, p in keys)
    state = KafkaEnumeratorState(2, tuple(KafkaPartitionAssignment(t, p, status, None) for t, p in keys), True)
    return KafkaSourceSnapshot("kafka-source", splits, state)


def _rows(findings: list[Finding]) -> list[tuple[str, str, str | None, int | None, int, tuple[tuple[int, int], ...]]]:
    return [(f.kind, f.severity, f.topic, f.partition, f.count, f.offset_ranges) for f in findings]


NOW = {(A, p): PartitionOffsets(0, 200) for p in (0, 1)}


def test_a_bounded_source_restored_with_nothing_new_to_list_never_finishes() -> None:
    (finding,) = kafka_restore_findings([_snapshot(200)], KafkaSourceJob((A,)), NOW)
    assert (finding.kind, finding.severity, finding.count) == (BOUNDED_NEVER_FINISHES, ERROR, 2)
    assert "its splits carry stopping offsets (200: a bounded source)" in finding.detail
    assert "KafkaSourceEnumState (version 2) names all 2 partitions assigned, none unassigned" in finding.detail
    assert "the topics now (its subscription as told) have exactly those 2 partitions" in finding.detail


@pytest.mark.parametrize(
    ("snapshot", "job", "kafka"),
    [
        (_snapshot(NO_STOPPING_OFFSET), KafkaSourceJob(), NOW),  # unbounded
        (_snapshot(200, status="UNASSIGNED"), KafkaSourceJob(), NOW),  # handed out on restore: a change
        (_snapshot(200), KafkaSourceJob(), NOW | {(A, 2): PartitionOffsets(0, 5)}),  # a partition added
        (_snapshot(200), KafkaSourceJob((A, B)), NOW),  # a topic added to the subscription
    ],
)
def test_a_bounded_restore_whose_listing_changes_finishes(
    snapshot: KafkaSourceSnapshot, job: KafkaSourceJob, kafka: dict[tuple[str, int], PartitionOffsets]
) -> None:
    assert [f.kind for f in kafka_restore_findings([snapshot], job, kafka)] == []


def test_without_bootstrap_the_bounded_prediction_says_what_it_could_not_list() -> None:
    (finding,) = kafka_restore_findings([_snapshot(-1)], KafkaSourceJob(), {})
    assert "(latest: a bounded source)" in finding.detail
    assert "unless the savepoint's topics gained partitions (no --bootstrap to list them)" in finding.detail


def test_a_topic_the_restored_job_no_longer_subscribes_to_is_read_on() -> None:
    kafka = NOW | {(B, p): PartitionOffsets(0, 200) for p in (0, 1)}
    findings = kafka_restore_findings([_snapshot(NO_STOPPING_OFFSET, (A, B))], KafkaSourceJob((A,)), kafka)
    assert _rows(findings) == [
        (REMOVED_TOPIC_READ, ERROR, B, 0, 100, ((100, 199),)),
        (REMOVED_TOPIC_READ, ERROR, B, 1, 100, ((100, 199),)),
    ]
    assert "which no longer name it: the readers restore the split and read on (FLINK-34089" in findings[0].detail


@pytest.mark.parametrize(
    ("starting", "severity", "says"),
    [
        ("earliest", WARNING, "it reads the new log from 0, 50 records"),
        ("latest", ERROR, "it skips to the log end: the 50 records there are lost"),
        ("committed", ERROR, "the reader fails"),
        (None, WARNING, "earliest reads the new log's 50 records from 0, latest skips them (loss)"),
    ],
)
def test_an_offset_past_the_log_end_goes_to_auto_offset_reset(starting: str | None, severity: str, says: str) -> None:
    recreated = {(A, p): PartitionOffsets(0, 50) for p in (0, 1)}
    job = KafkaSourceJob(None, starting)
    findings = [f for f in kafka_restore_findings([_snapshot(NO_STOPPING_OFFSET)], job, recreated)
                if f.kind == OFFSET_PAST_LOG_END]  # fmt: skip
    assert _rows(findings) == [(OFFSET_PAST_LOG_END, severity, A, p, 50, ((0, 49),)) for p in (0, 1)]
    assert "the savepoint's next offset 100 is past the partition's log now (0..49)" in findings[0].detail
    assert says in findings[0].detail


def test_the_restored_splits_ignore_the_jobs_starting_offsets() -> None:
    findings = kafka_restore_findings([_snapshot(NO_STOPPING_OFFSET)], KafkaSourceJob((A,), "latest"), NOW)
    assert _rows(findings) == [(STARTING_OFFSETS_IGNORED, INFO, A, p, 0, ()) for p in (0, 1)]
    assert "resumes at the savepoint's next offset 100, not at the job's setStartingOffsets (latest)" in (
        findings[0].detail
    )


def test_an_unknown_starting_offsets_setting_is_refused() -> None:
    with pytest.raises(UsageError, match="one of earliest, latest, committed"):
        KafkaSourceJob(None, "newest")
