"""The rows the KafkaSource restore-failure tests compare (tests/integration/test_flink_kafka_restore_bugs.py, on
every release of the matrix): the restored job's reads, the findings' figures, with the run's topics named A and
B."""

from __future__ import annotations

from splitaudit.audit.checks.findings import Finding
from splitaudit_lab.scenario.kafka_restore_bugs import RestoreBugRun

Ranges = tuple[tuple[int, int], ...]
Row = tuple[str, str, str | None, int | None, int, Ranges]
ReadRow = tuple[str, int, int, Ranges]


def names(result: RestoreBugRun) -> dict[str, str]:
    """The run's topics as the tests name them: A, then B."""
    return dict(zip(result.run.topics, ("A", "B"), strict=False))


def rows(findings: tuple[Finding, ...], topics: dict[str, str]) -> list[Row]:
    """Findings as (kind, severity, topic's name in the test, partition, count, ranges)."""
    return [
        (f.kind, f.severity, None if f.topic is None else topics[f.topic], f.partition, f.count, f.offset_ranges)
        for f in findings
    ]


def reads(result: RestoreBugRun, topics: dict[str, str]) -> list[ReadRow]:
    """The truth: what the restored job wrote to the sink, per partition (topic, partition, rows, offset ranges)."""
    return [(topics[r.topic], r.partition, r.rows, r.offsets) for r in result.restored_reads]


def watch_rows(result: RestoreBugRun, topics: dict[str, str]) -> list[Row]:
    """The watch's verdict: each finding as its last event reported it (a figure that grew is re-emitted), sorted
    by kind, topic and partition (the order found depends on which subtask a poll asks first)."""
    last: dict[tuple[str, str, int], Finding] = {}
    for event in result.watch.events:
        found = event.finding
        last[(found.kind, found.topic or "", -1 if found.partition is None else found.partition)] = found
    return rows(tuple(last[key] for key in sorted(last)), topics)
