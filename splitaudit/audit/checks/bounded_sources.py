"""A bounded source's splits that ended between two savepoints of one job, and a bounded source that read all its
splits and still ran (FLINK-31006, flink-connector-kafka 3.3.0: a bounded KafkaSource restored from a savepoint
never finishes).

A FLIP-27 reader drops a split from its state once the split reaches its stopping offset (`SourceReaderBase`,
`onSplitFinished`), and the KafkaSource enumerator keeps it among its assigned partitions. So a partition whose
split in the earlier savepoint (`before`) had a stopping offset, that no reader holds in the later one (`after`)
and that `after`'s enumerator names as assigned, was read to its stopping offset: not dropped, not unassigned.
When every split of such a source is gone and a savepoint `after` was still taken of the job, the readers had
nothing left to read and the source had not ended: the restored bounded job does not finish. Pure: the
savepoints' tables, no Spark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from splitaudit.audit.checks.findings import DROPPED_PARTITION, INFO, UNASSIGNED, WARNING, Finding
from splitaudit.audit.checks.savepoint_tables import Key, SavepointTables, partition_rows
from splitaudit.splits.model import ASSIGNED

BOUNDED_SPLIT_FINISHED = "bounded_split_finished"  # a bounded split read to its stopping offset, gone from state
BOUNDED_SOURCE_NOT_ENDED = "bounded_source_not_ended"  # every bounded split finished, the job still ran


def finished_splits(before: SavepointTables, after: SavepointTables) -> dict[Key, int]:
    """The bounded splits of `before` that ended by `after`, with their stopping offsets."""
    held = after.positions.keys()
    assigned = {(r["operator_id"], r["topic"], r["partition"]) for r in partition_rows(after.enumerator)
                if r["status"] == ASSIGNED}  # fmt: skip
    return {
        key: r["stopping_offset"]
        for r in partition_rows(before.splits)
        if r["stopping_offset"] is not None
        and (key := (r["operator_id"], r["topic"], r["partition"])) not in held
        and key in assigned
    }


def explain_finished_bounded(
    before: SavepointTables, after: SavepointTables, findings: Sequence[Finding]
) -> list[Finding]:
    """`findings` with each `partition_dropped` and `partition_unassigned` of a finished bounded split turned into
    `bounded_split_finished` (info), and a `bounded_source_not_ended` (warning) per source of `after` that holds
    no split any more though `before` held bounded ones."""
    finished = finished_splits(before, after)
    if not finished:
        return list(findings)
    stops = {(topic, partition): (operator, stop) for (operator, topic, partition), stop in finished.items()}
    explained = []
    for finding in findings:
        found = stops.get((str(finding.topic), int(finding.partition or 0)))
        if finding.kind not in (DROPPED_PARTITION, UNASSIGNED) or finding.partition is None or found is None:
            explained.append(finding)
            continue
        operator, stop = found
        detail = (
            f"source {operator}: its split in {before.path} stopped at offset {stop} (a bounded source); no reader "
            f"holds it in {after.path} and the enumerator names it assigned: the reader read it to its stopping "
            "offset and dropped it"
        )
        explained.append(replace(finding, kind=BOUNDED_SPLIT_FINISHED, severity=INFO, detail=detail))
    still_holding = {r["operator_id"] for r in after.splits}
    for operator in sorted({operator for operator, _, _ in finished} - still_holding):
        count = sum(1 for key in finished if key[0] == operator)
        detail = (
            f"source {operator}: every one of its {count} bounded splits had reached its stopping offset, yet "
            f"{after.path} was taken of the running job: the source never ended, and the job does not finish "
            "(FLINK-31006: a bounded KafkaSource restored from a savepoint is never told that no more splits come)"
        )
        explained.append(Finding(BOUNDED_SOURCE_NOT_ENDED, WARNING, None, None, count, detail=detail))
    return explained
