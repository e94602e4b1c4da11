"""A savepoint as the three tables the checks read, as plain rows on the driver.

The tables are small (a row per split partition), so the checks never needed Spark for them: a savepoint-only
audit or `diff` starts no Spark at all, and an audit with a sink joins the one table it needs (the resume
offsets) into Spark itself. The rows are exactly the `flink_savepoint` data source's (`audit/checks/tables.py`), and
reading happens before anything else, so bad input fails with its file and byte offset first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from splitaudit.audit.checks.rows import concrete_offset, enumerator_rows, operator_rows, split_rows
from splitaudit.savepoint.fileio import DEFAULT_MAX_FILE_SIZE
from splitaudit.savepoint_view import SavepointView, inspect_savepoint
from splitaudit.splits.model import PENDING

Row = dict[str, Any]
Key = tuple[str, str, int]  # operator id, topic, partition


@dataclass(frozen=True)
class SavepointTables:
    """The `operators`, `splits` and `enumerator` tables of one savepoint or checkpoint."""

    path: str
    checkpoint_id: int
    operators: tuple[Row, ...]
    splits: tuple[Row, ...]
    enumerator: tuple[Row, ...]

    @cached_property
    def positions(self) -> dict[Key, int | None]:
        """Per (operator, topic, partition) held by anyone (reader splits and splits pending in the enumerator):
        the lowest non-negative next offset, None if none. Worked out once per savepoint, however many checks ask."""
        lowest: dict[Key, int | None] = {}
        pending = [r for r in self.enumerator if r["status"] == PENDING]
        for table in (self.splits, pending):
            for r in partition_rows(table):
                key = (r["operator_id"], r["topic"], r["partition"])
                offset, current = concrete_offset(r["next_offset"]), lowest.get(key)
                lowest[key] = offset if offset is not None and (current is None or offset < current) else current
        return lowest

    @cached_property
    def resume_offsets(self) -> dict[tuple[str, int], int]:
        """Per (topic, partition): the offset a restore from this savepoint resumes it from (the lowest concrete
        next offset of any holder in any source); partitions with no concrete offset are left out."""
        resume: dict[tuple[str, int], int] = {}
        for (_, topic, partition), offset in self.positions.items():
            if offset is not None:
                resume[(topic, partition)] = min(offset, resume.get((topic, partition), offset))
        return resume


def savepoint_tables(
    location: str,
    uids: Sequence[str] = (),
    allow_external_state: bool = False,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
) -> SavepointTables:
    """Read the savepoint at `location` (dir or `_metadata`; local path or URI) into its three tables."""
    return tables_of(inspect_savepoint(location, uids, allow_external_state, max_file_size))


def tables_of(view: SavepointView) -> SavepointTables:
    """The three tables of an inspected savepoint (for callers that also need the decoded view itself)."""
    return SavepointTables(
        view.path,
        view.checkpoint_id,
        tuple(operator_rows(view)),
        tuple(split_rows(view)),
        tuple(enumerator_rows(view)),
    )


def partition_rows(table: Sequence[Row]) -> list[Row]:
    """The rows of a split or enumerator table that name a topic partition."""
    return [r for r in table if r["topic"] is not None and r["partition"] is not None]
