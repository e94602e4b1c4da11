"""Two savepoints of one job: partitions whose position went backwards (rewind), dropped or newly appearing.

A partition's position is the lowest next offset any holder of it has (reader splits and splits pending in
the enumerator): where reading resumes after a restore. A partition held by nobody in the later savepoint whose
topic its enumerator names finished (`FINISHED`: a file source's processed file) is not dropped but finished,
an info: whether it was read to its end is the sink's to say. Sources are matched by operator id; symbolic Kafka
offsets (negative: earliest, latest, committed) are not positions and are not compared.
"""

from __future__ import annotations

from collections import defaultdict

from splitaudit.audit.findings import (
    DROPPED_PARTITION,
    ERROR,
    FINISHED_PARTITION,
    INFO,
    NEW_PARTITION,
    REWIND,
    Finding,
)
from splitaudit.audit.rows import concrete_offset
from splitaudit.audit.savepoint_tables import SavepointTables, partition_rows
from splitaudit.splits.model import FINISHED, PENDING

Key = tuple[str, str, int]  # operator id, topic, partition


def check_rewind(before: SavepointTables, after: SavepointTables) -> tuple[Finding, ...]:
    """Compare the positions of `before` (the earlier savepoint) with those of `after`."""
    earlier, later = positions(before), positions(after)
    finished = {(r["operator_id"], r["topic"]) for r in after.enumerator if r["status"] == FINISHED}
    findings = []
    for key in sorted(earlier.keys() | later.keys()):
        operator, topic, partition = key
        if key not in later and (operator, topic) in finished:
            shown = _shown(earlier[key])
            detail = (
                f"source {operator}: held in {before.path} (next offset {shown}); in {after.path} held by nobody, "
                "its enumerator names it finished: not read again (read to its end, unless the sink lacks its tail)"
            )
            findings.append(Finding(FINISHED_PARTITION, INFO, topic, partition, 0, detail=detail))
        elif key not in later:
            shown = _shown(earlier[key])
            detail = f"source {operator}: held in {before.path} (next offset {shown}), by nobody in {after.path}"
            findings.append(Finding(DROPPED_PARTITION, ERROR, topic, partition, 0, detail=detail))
        elif key not in earlier:
            detail = f"source {operator}: not in {before.path}; in {after.path} from next offset {_shown(later[key])}"
            findings.append(Finding(NEW_PARTITION, INFO, topic, partition, 0, detail=detail))
        elif (old := earlier[key]) is not None and (new := later[key]) is not None and 0 <= new < old:
            detail = (
                f"source {operator}: next offset {old} in checkpoint {before.checkpoint_id}, {new} in checkpoint "
                f"{after.checkpoint_id}: offsets {new}..{old - 1} are read again"
            )
            findings.append(Finding(REWIND, ERROR, topic, partition, old - new, ((new, old - 1),), detail=detail))
    return tuple(findings)


def positions(savepoint: SavepointTables) -> dict[Key, int | None]:
    """Per (operator, topic, partition) held by anyone: the lowest non-negative next offset, None if none."""
    lowest: dict[Key, int | None] = defaultdict(lambda: None)
    pending = [r for r in savepoint.enumerator if r["status"] == PENDING]
    for table in (savepoint.splits, pending):
        for r in partition_rows(table):
            key = (r["operator_id"], r["topic"], r["partition"])
            offset, current = concrete_offset(r["next_offset"]), lowest[key]
            lowest[key] = offset if offset is not None and (current is None or offset < current) else current
    return dict(lowest)


def resume_offsets(savepoint: SavepointTables) -> dict[tuple[str, int], int]:
    """Per (topic, partition): the offset a restore from `savepoint` resumes it from (the lowest concrete next
    offset of any holder in any source); partitions with no concrete offset are left out."""
    resume: dict[tuple[str, int], int] = {}
    for (_, topic, partition), offset in positions(savepoint).items():
        if offset is not None:
            resume[(topic, partition)] = min(offset, resume.get((topic, partition), offset))
    return resume


def _shown(offset: int | None) -> str:
    return "unknown" if offset is None else str(offset)
