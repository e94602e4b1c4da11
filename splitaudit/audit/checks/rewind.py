"""Two savepoints of one job: partitions whose position went backwards (rewind), dropped or newly appearing.

A partition's position is the lowest next offset any holder of it has (reader splits and splits pending in
the enumerator): where reading resumes after a restore. Sources are matched by operator id; symbolic Kafka
offsets (negative: earliest, latest, committed) are not positions and are not compared.
"""

from __future__ import annotations

from splitaudit.audit.checks.findings import DROPPED_PARTITION, ERROR, INFO, NEW_PARTITION, REWIND, Finding
from splitaudit.audit.checks.savepoint_tables import SavepointTables


def check_rewind(before: SavepointTables, after: SavepointTables) -> tuple[Finding, ...]:
    """Compare the positions of `before` (the earlier savepoint) with those of `after`."""
    earlier, later = before.positions, after.positions
    findings = []
    for key in sorted(earlier.keys() | later.keys()):
        operator, topic, partition = key
        if key not in later:
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
