"""The Kafka offset checks on per-partition values: expired unread offsets, committed-offset drift, lag."""

from __future__ import annotations

from splitaudit.audit.checks.findings import (
    COMMITTED_OFFSET,
    ERROR,
    EXPIRED_UNREAD,
    INFO,
    LAG,
    WARNING,
    Finding,
    PartitionCoverage,
)
from splitaudit.audit.checks.offsets import check_offsets, sink_next_offsets
from splitaudit.clients.kafka import PartitionOffsets


def _kinds(findings: list[Finding]) -> list[tuple[str, str, int | None, int, tuple[tuple[int, int], ...]]]:
    return [(f.kind, f.severity, f.partition, f.count, f.offset_ranges) for f in findings]


def test_in_step_job_has_no_findings() -> None:
    kafka = {("t", 0): PartitionOffsets(0, 100, 100), ("t", 1): PartitionOffsets(40, 70, 70)}
    findings = check_offsets(kafka, {("t", 0): 100, ("t", 1): 70}, {("t", 0): 100, ("t", 1): 70}, "g")
    assert findings == []


def test_log_start_above_savepoint_next_offset_is_expired_unread_loss() -> None:
    kafka = {("t", 0): PartitionOffsets(log_start=250, end=300)}
    findings = check_offsets(kafka, {("t", 0): 200}, {}, None)
    assert _kinds(findings) == [(EXPIRED_UNREAD, ERROR, 0, 50, ((200, 249),)), (LAG, INFO, 0, 50, ((250, 299),))]
    assert findings[0].topic == "t"
    assert findings[0].detail == (
        "the job resumes at the savepoint's next offset 200 but the log now starts at 250: "
        "50 offsets were deleted (retention or delete-records) before the job read them"
    )


def test_log_start_at_savepoint_next_offset_is_no_loss() -> None:
    assert check_offsets({("t", 0): PartitionOffsets(200, 200)}, {("t", 0): 200}, {}, None) == []


def test_without_savepoint_the_group_committed_offset_is_the_resume_point() -> None:
    kafka = {("t", 3): PartitionOffsets(log_start=1_000, end=1_000, committed=400)}
    findings = check_offsets(kafka, {}, {}, "flume")
    assert _kinds(findings) == [(EXPIRED_UNREAD, ERROR, 3, 600, ((400, 999),))]
    assert "group's committed offset 400" in findings[0].detail


def test_committed_offset_behind_savepoint_and_ahead_of_sink() -> None:
    kafka = {("t", 0): PartitionOffsets(0, 500, committed=300)}
    findings = check_offsets(kafka, {("t", 0): 320}, {("t", 0): 290}, "g")
    assert _kinds(findings) == [
        (COMMITTED_OFFSET, WARNING, 0, 20, ((290, 319),)),
        (LAG, INFO, 0, 180, ((320, 499),)),
    ]
    assert findings[0].detail == (
        "group 'g' committed 300, 20 behind the savepoint's next offset 320; "
        "10 ahead of the sink's processed next offset 290"
    )


def test_committed_offset_equal_to_savepoint_but_not_to_sink() -> None:
    kafka = {("t", 0): PartitionOffsets(0, 300, committed=300)}
    findings = check_offsets(kafka, {("t", 0): 300}, {("t", 0): 250}, "g")
    assert _kinds(findings) == [(COMMITTED_OFFSET, WARNING, 0, 50, ((250, 299),))]
    assert findings[0].detail == "group 'g' committed 300, 50 ahead of the sink's processed next offset 250"


def test_group_without_committed_offset_is_reported_where_the_job_read() -> None:
    kafka = {("t", 0): PartitionOffsets(0, 10), ("t", 1): PartitionOffsets(0, 0)}
    findings = check_offsets(kafka, {("t", 0): 10}, {}, "typo")
    assert _kinds(findings) == [(COMMITTED_OFFSET, WARNING, 0, 0, ())]
    assert findings[0].detail == "group 'typo' has no committed offset here, while the savepoint's next offset is 10"


def test_committed_offsets_are_ignored_without_a_group() -> None:
    kafka = {("t", 0): PartitionOffsets(0, 10, committed=3)}
    assert check_offsets(kafka, {("t", 0): 10}, {}, None) == []


def test_lag_falls_back_from_savepoint_to_sink_to_committed_offset() -> None:
    kafka = {
        ("t", 0): PartitionOffsets(0, 100, committed=10),
        ("t", 1): PartitionOffsets(0, 100, committed=10),
        ("t", 2): PartitionOffsets(0, 100, committed=10),
    }
    findings = check_offsets(kafka, {("t", 0): 90}, {("t", 0): 95, ("t", 1): 60}, None)
    assert _kinds(findings) == [(LAG, INFO, 0, 10, ((90, 99),)), (LAG, INFO, 1, 40, ((60, 99),))]
    findings = check_offsets(kafka, {}, {}, "g")
    assert [(f.kind, f.partition, f.count) for f in findings] == [(LAG, 0, 90), (LAG, 1, 90), (LAG, 2, 90)]


def test_symbolic_savepoint_offsets_count_as_unknown() -> None:
    # Flink's -2 (earliest): the next offset is the sink's then
    kafka = {("t", 0): PartitionOffsets(50, 100)}
    findings = check_offsets(kafka, {("t", 0): -2}, {("t", 0): 80}, None)
    assert _kinds(findings) == [(LAG, INFO, 0, 20, ((80, 99),))]


def test_partitions_unknown_to_kafka_are_skipped_and_order_is_by_topic_partition() -> None:
    kafka = {("u", 0): PartitionOffsets(0, 5), ("t", 1): PartitionOffsets(0, 5), ("t", 0): PartitionOffsets(0, 5)}
    findings = check_offsets(kafka, {("t", 0): 1, ("t", 1): 2, ("u", 0): 3, ("t", 9): 0}, {}, None)
    assert [(f.topic, f.partition, f.count) for f in findings] == [("t", 0, 4), ("t", 1, 3), ("u", 0, 2)]


def test_sink_next_offset_is_highest_sink_offset_plus_one() -> None:
    coverage = [PartitionCoverage("t", 0, 12, 10, 5, 14, 0), PartitionCoverage("t", 1, 1, 1, 0, 0, 0)]
    assert sink_next_offsets(coverage) == {("t", 0): 15, ("t", 1): 1}
