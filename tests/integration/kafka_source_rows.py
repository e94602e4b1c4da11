"""The rows the KafkaSource restore tests compare: a run's measured truth per partition and the findings' figures."""

from __future__ import annotations

from splitaudit.audit.checks.findings import Finding
from splitaudit_lab.scenario.flink_kafka import KafkaSourceRestore

TruthRow = tuple[int, int, int, int, int]
FindingRow = tuple[str, str, int | None, int, tuple[tuple[int, int], ...]]


def truth(result: KafkaSourceRestore) -> list[TruthRow]:
    """Per partition: records produced, sink rows, offsets read twice, offsets missing (the sink against Kafka)."""
    return [
        (p.partition, p.expected_records, p.sink_rows, p.double_read_offsets, p.missing_offsets)
        for p in result.run.partitions
    ]


def finding_rows(findings: tuple[Finding, ...]) -> list[FindingRow]:
    """Each finding as (kind, severity, partition, count, offset ranges)."""
    return [(f.kind, f.severity, f.partition, f.count, f.offset_ranges) for f in findings]
