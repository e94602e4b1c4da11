"""Two savepoints of one job: partitions whose position went backwards (rewind), dropped or newly appearing.

A partition's position is the lowest next offset any holder of it has (reader splits and splits pending in
the enumerator): where reading resumes after a restore. A partition held by nobody in the later savepoint whose
topic its enumerator names finished (`FINISHED`: a file source's processed file) is not dropped but finished,
an info: whether it was read to its end is the sink's to say. Sources are matched by operator id; symbolic Kafka
offsets (negative: earliest, latest, committed) are not positions and are not compared.
"""

from __future__ import annotations

from splitaudit.audit.checks.findings import (
    DROPPED_PARTITION,
    ERROR,
    FINISHED_PARTITION,
    INFO,
    NEW_PARTITION,
    REWIND,
    Finding,
)
from splitaudit.audit.checks.savepoint_tables import SavepointTables
from splitaudit.splits.model import FINISHED


def check_rewind(before: SavepointTables, after: SavepointTables) -> tuple[Finding, ...]:
    """Compare the positions of `before` (the earlier savepoint) with those of `after`."""
    earlier, later = before.positions, after.positions
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


def _shown(offset: int | None) -> str:
    return "unknown" if offset is None else str(offset)
