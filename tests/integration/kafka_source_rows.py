"""The rows the KafkaSource restore tests compare: a run's measured truth per partition and the findings' figures."""

from __future__ import annotations

from splitaudit.audit.checks.findings import INFO, LAG, Finding
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


def assert_clean_restore(result: KafkaSourceRestore) -> None:
    """A clean restore of the 2-partition, 200-record run: every record once in the sink; SP0 holds both partitions
    at 100, so the guard's only findings are the 100 records each produced while the job was down (its backlog);
    the audit finds nothing."""
    assert truth(result) == [(p, 200, 200, 0, 0) for p in (0, 1)], truth(result)
    assert result.guard.safe
    assert finding_rows(result.guard.findings) == [(LAG, INFO, p, 100, ((100, 199),)) for p in (0, 1)]
    assert [(s.families, [(h.partition, h.next_offset) for h in s.partitions]) for s in result.guard.sources] == [
        (("kafka",), [(0, 100), (1, 100)])
    ]
    assert result.run.audit.findings == ()
    assert result.run.audit.exit_code == 0
