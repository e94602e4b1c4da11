"""The Kafka offset checks: the topic's own offsets against the job's restore point, its committed group offsets
and what its sink processed (docs/audit.md, "With the Kafka cluster").

All offsets are *next* offsets: a savepoint's split offset and a group's committed offset are the next offset to
read, a sink's processed next offset is its highest offset + 1, a partition's end offset is one past its last
record. Pure: the inputs are a few values per partition (from `splitaudit.clients.kafka.partition_offsets`, the
savepoint's splits and the sink's coverage), so no Spark is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

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
from splitaudit.audit.checks.rows import concrete_offset

if TYPE_CHECKING:
    from splitaudit.clients.kafka import PartitionOffsets

Key = tuple[str, int]  # (topic, partition)


def check_offsets(
    kafka: Mapping[Key, PartitionOffsets],
    savepoint_next: Mapping[Key, int | None],
    sink_next: Mapping[Key, int | None],
    group: str | None,
) -> list[Finding]:
    """Findings of every partition Kafka knows, sorted by (topic, partition), in the kinds' order below.

    - `expired_unread` (error): the log starts above the offset the job resumes from, so the records between
      were deleted (retention, delete-records) before the job read them. The job resumes from the savepoint's
      next offset; without one (a plain consumer group), from the group's committed offset. count = log_start
      - next, offset range [next, log_start - 1].
    - `committed_offset_mismatch` (warning, with `group` only): the group's committed offset differs from the
      savepoint's next offset and/or from the sink's processed next offset; the detail says which and by how
      much, count is the largest difference and the ranges span the offsets in between. A group with no
      committed offset for a partition the savepoint or sink covers is reported too (count 0).
    - `lag` (info): offsets past the job's next offset still to read: end - max(next, log_start), where next
      is the savepoint's next offset, else the sink's processed next offset, else the group's committed offset.

    `savepoint_next` maps a partition to its split's next offset (`SavepointTables.resume_offsets`: the lowest when a
    partition is held twice; a negative value is Flink's symbolic earliest/latest/committed and counts as
    unknown, as does None or absence). `sink_next` maps it to the sink's highest offset + 1
    (`sink_next_offsets`). Partitions that only the savepoint or the sink names, not Kafka, are the assignment
    checks' business and are skipped here.
    """
    findings: list[Finding] = []
    for key, offsets in sorted(kafka.items()):
        restored = concrete_offset(savepoint_next.get(key))
        processed = concrete_offset(sink_next.get(key))
        committed = offsets.committed if group is not None else None
        findings += _expired(key, offsets, restored, committed)
        if group is not None:
            findings += _committed(key, offsets, group, restored, processed)
        findings += _lag(key, offsets, restored, processed, committed)
    return findings


def sink_next_offsets(coverage: Iterable[PartitionCoverage]) -> dict[Key, int]:
    """The sink's processed next offset of each (topic, partition): its highest offset + 1."""
    return {(c.topic, c.partition): c.last_offset + 1 for c in coverage}


def _expired(key: Key, offsets: PartitionOffsets, restored: int | None, committed: int | None) -> list[Finding]:
    if restored is not None:
        name, resume = "the savepoint's next offset", restored
    elif committed is not None:
        name, resume = "the group's committed offset", committed
    else:
        return []
    if offsets.log_start <= resume:
        return []
    lost = offsets.log_start - resume
    detail = (
        f"the job resumes at {name} {resume} but the log now starts at {offsets.log_start}: "
        f"{lost} offsets were deleted (retention or delete-records) before the job read them"
    )
    return [Finding(EXPIRED_UNREAD, ERROR, *key, lost, ((resume, offsets.log_start - 1),), detail=detail)]


def _committed(
    key: Key, offsets: PartitionOffsets, group: str, restored: int | None, processed: int | None
) -> list[Finding]:
    references = [
        (name, value)
        for name, value in (("the savepoint's next offset", restored), ("the sink's processed next offset", processed))
        if value is not None
    ]
    if not references:
        return []
    committed = offsets.committed
    if committed is None:
        detail = f"group {group!r} has no committed offset here, while " + " and ".join(
            f"{name} is {value}" for name, value in references
        )
        return [Finding(COMMITTED_OFFSET, WARNING, *key, 0, detail=detail)]
    differing = [(name, value) for name, value in references if value != committed]
    if not differing:
        return []
    detail = f"group {group!r} committed {committed}, " + "; ".join(
        f"{abs(committed - value)} {'ahead of' if committed > value else 'behind'} {name} {value}"
        for name, value in differing
    )
    spans = sorted((min(committed, value), max(committed, value) - 1) for _, value in differing)
    count = max(abs(committed - value) for _, value in differing)
    return [Finding(COMMITTED_OFFSET, WARNING, *key, count, _union(spans), detail=detail)]


def _lag(
    key: Key, offsets: PartitionOffsets, restored: int | None, processed: int | None, committed: int | None
) -> list[Finding]:
    """What is left to read after the job's next offset; offsets already deleted are `expired_unread`'s."""
    for name, value in (
        ("the savepoint's next offset", restored),
        ("the sink's processed next offset", processed),
        ("the group's committed offset", committed),
    ):
        if value is None:
            continue
        start = max(value, offsets.log_start)
        if offsets.end <= start:
            return []
        detail = f"{offsets.end - start} offsets past {name} {value} are not read yet (end offset {offsets.end})"
        return [Finding(LAG, INFO, *key, offsets.end - start, ((start, offsets.end - 1),), detail=detail)]
    return []


def _union(spans: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Sorted inclusive ranges with overlapping or touching ones merged."""
    merged: list[tuple[int, int]] = []
    for first, last in spans:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return tuple(merged)
