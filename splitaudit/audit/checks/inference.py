"""Duplicates of a sink without lineage, classified by evidence: where each run of them starts and ends, against
where the job was restored from and what the restored jar does.

A sink with no `reader_id`/`attempt` cannot say who emitted an offset twice, but the shape of the duplicates
can, given facts splitaudit reads itself:

- A second reader of a partition that never stops (the twin of beam#31313, which reads beside the restored
  reader until the job ends) leaves one unbroken run of offsets, each in the sink exactly twice, that goes on
  to the last offset the sink holds. A replay ends where the job before the restore stopped reading.
- A replay starts at the next offset of the savepoint the job was restored from (`--before`): the restored job
  reads again what the first job read after that savepoint.

So, per (topic, partition) of a `duplicate_records` finding whose runs are all known (not truncated):

- `double_assignment` when it is one run (every offset in it at least twice) reaching the sink's last offset of
  the partition, and either it does not start at the restored savepoint's next offset (a replay cannot start
  elsewhere) or the restored jar re-reads restored splits (`--jar`: an unfixed FlinkSource, whose twin may start
  there);
- `replay` when it is one run starting at the restored savepoint's next offset and ending before the sink's last
  offset of the partition (whatever the jar: a twin does not stop);
- anything else stays `duplicate_records`.

Every such finding says `classified_by: inferred` and its `evidence`; without `--before` nothing is inferred
(the runs alone cannot tell a replay from a twin). Pure: a few values per partition, no Spark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from splitaudit.audit.checks.findings import (
    DOUBLE_ASSIGNMENT,
    DUPLICATE,
    ERROR,
    INFERRED,
    REPLAY,
    WARNING,
    Finding,
    PartitionCoverage,
    offset_range,
)

Key = tuple[str, int]  # (topic, partition)


@dataclass(frozen=True)
class RestoreEvidence:
    """What is known of the restore the sink went through: where the restored job resumed each partition (the
    `--before` savepoint's next offsets) and, with `--jar`, whether its FlinkSource re-reads restored splits."""

    resumed_from: Mapping[Key, int]
    savepoint: str
    jar_label: str | None = None  # the jar's release and build, e.g. "Beam 2.62.0 (stock)"
    jar_rereads: bool | None = None  # None: no --jar given


def infer_classes(
    findings: Iterable[Finding], coverage: Iterable[PartitionCoverage], evidence: RestoreEvidence, exactly_once: bool
) -> tuple[Finding, ...]:
    """The findings with each unclassified `duplicate_records` finding classified where the evidence allows."""
    last = {(c.topic, c.partition): c.last_offset for c in coverage}
    return tuple(
        _classify(f, (f.topic, f.partition), last, evidence, exactly_once)
        if f.kind == DUPLICATE and f.classified_by is None and f.topic is not None and f.partition is not None
        else f
        for f in findings
    )


def _classify(
    finding: Finding, key: Key, last_offsets: Mapping[Key, int], evidence: RestoreEvidence, exactly_once: bool
) -> Finding:
    resumed = evidence.resumed_from.get(key)
    last = last_offsets.get(key)
    if last is None or resumed is None or finding.ranges_truncated or len(finding.offset_ranges) != 1:
        return finding
    first, end = finding.offset_ranges[0]
    run = offset_range(first, end)
    savepoint = f"the next offset of the savepoint the job was restored from ({evidence.savepoint}) is {resumed}"
    if end == last and (first != resumed or evidence.jar_rereads):
        start = (
            "above it: not where a replay starts (the second reader started later, e.g. at the log end at the restore)"
            if first > resumed
            else "below it: not where a replay starts (the second reader started earlier, e.g. at the log start)"
            if first < resumed
            else f"there too, and {evidence.jar_label} re-initialises restored splits (beam#31313)"
        )
        text = (
            f"every offset {run} is in the sink at least twice ({finding.count} extra rows), up to the last offset "
            f"the sink holds ({last}): a second reader read beside the restored one and never stopped, where a "
            f"replay ends where the first job stopped; {savepoint}, the run starts {start}"
        )
        return _inferred(finding, DOUBLE_ASSIGNMENT, ERROR, text)
    if first == resumed and end < last:
        text = (
            f"the offsets {run} are in the sink more than once, starting at the restored savepoint's next offset and "
            f"ending before the last offset the sink holds ({last}): read again after the restore from the savepoint "
            f"({savepoint}), as a replay is; a second reader would not have stopped"
        )
        return _inferred(finding, REPLAY, ERROR if exactly_once else WARNING, text)
    return finding


def _inferred(finding: Finding, kind: str, severity: str, evidence: str) -> Finding:
    meaning = (
        "read by two readers at once after the restore: the partition was assigned twice"
        if kind == DOUBLE_ASSIGNMENT
        else "read again after a restore (expected with an at-least-once sink)"
    )
    detail = f"{meaning} (inferred from where the duplicates start and end: the sink has no lineage columns)"
    return replace(finding, kind=kind, severity=severity, detail=detail, classified_by=INFERRED, evidence=evidence)
