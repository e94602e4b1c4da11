"""The findings model: what every check returns and every renderer (console, JSON, HTML) shows.

JSON shape (DESIGN.md contract): `{"summary": {duplicate_records, missing_records, double_assigned_partitions,
missing_partitions, rewound_partitions}, "findings": [{kind, severity, topic, partition, …}], "notes": […]}`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from splitaudit.errors import EXIT_CLEAN, EXIT_FINDINGS

ERROR = "error"
WARNING = "warning"
INFO = "info"

# Finding kinds of the sink checks.
DOUBLE_ASSIGNMENT = "double_assignment"  # one offset emitted by two readers of the same attempt: a bug
REPLAY = "replay"  # one offset emitted again by a later attempt after a restore: at-least-once
DUPLICATE = "duplicate_records"  # one offset emitted twice with no lineage (or one reader) to tell why
MISSING = "missing_records"  # offsets that exist in the source but not in the sink
INVALID = "invalid_rows"  # sink rows whose topic, partition or offset is null or negative


@dataclass(frozen=True)
class Finding:
    """One anomaly of one (topic, partition): how many records, where, and a bounded sample of rows."""

    kind: str
    severity: str
    topic: str | None
    partition: int | None
    count: int
    offset_ranges: tuple[tuple[int, int], ...] = ()
    ranges_truncated: bool = False
    sample: tuple[dict[str, Any], ...] = ()
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity,
            "topic": self.topic,
            "partition": self.partition,
            "count": self.count,
            "offset_ranges": [list(r) for r in self.offset_ranges],
            "ranges_truncated": self.ranges_truncated,
            "sample": list(self.sample),
            "detail": self.detail,
        }


@dataclass(frozen=True)
class PartitionCoverage:
    """What the sink holds of one (topic, partition): rows, distinct offsets and their span."""

    topic: str
    partition: int
    rows: int
    distinct: int
    first_offset: int
    last_offset: int
    missing: int

    @property
    def duplicates(self) -> int:
        return self.rows - self.distinct


@dataclass(frozen=True)
class Summary:
    """The headline counts of the JSON contract."""

    duplicate_records: int = 0
    missing_records: int = 0
    double_assigned_partitions: int = 0
    missing_partitions: int = 0
    rewound_partitions: int = 0


@dataclass(frozen=True)
class Findings:
    """Everything one audit found, with the coverage it was judged on and notes on how it was judged."""

    summary: Summary
    findings: tuple[Finding, ...]
    coverage: tuple[PartitionCoverage, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def exit_code(self) -> int:
        """1 when any finding is an error, else 0 (the one place the audit's exit code is decided)."""
        return EXIT_FINDINGS if any(f.severity == ERROR for f in self.findings) else EXIT_CLEAN

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary.__dict__,
            "findings": [f.to_json() for f in self.findings],
            "coverage": [c.__dict__ | {"duplicates": c.duplicates} for c in self.coverage],
            "notes": list(self.notes),
        }
