"""The user-visible contents of a column family: all its live tables merged by internal key, as a RocksDB read
at the snapshot's last sequence number sees them (`db/merge_helper.cc`, `db/range_del_aggregator.cc`).

For each user key, its versions newest first (highest sequence): a Put ends the walk with its value; a Delete or
SingleDelete ends it with nothing; a Merge operand is collected and the walk goes on. A version older than a
range tombstone covering its key (`start <= key < end`, tombstone sequence higher) counts as deleted. Collected
operands are applied oldest first onto the value the walk ended with (if any) by the column family's merge
operator. Flink sets `StringAppendTESTOperator` (RocksDB's `stringappendtest`, Flink's list state) on every
column family: the existing value and each operand joined with one ',' byte; `StringAppendOperator` with its
default ',' joins the same way. A key left with nothing is absent. Tables are read a block at a time and merged
lazily (`heapq.merge`): memory holds one block per table and one key's versions.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import Protocol

from splitaudit.errors import InputError
from splitaudit.savepoint.rocksdb.dbformat import DELETION, MERGE, SINGLE_DELETION, VALUE, InternalKey
from splitaudit.savepoint.rocksdb.table import RangeDeletion

LIST_MERGE_OPERATORS = ("StringAppendTESTOperator", "StringAppendOperator")
LIST_DELIMITER = b","


class Table(Protocol):
    """What the merge needs of a table (`Table`): its file, entries in order, range deletions."""

    path: str

    def entries(self) -> Iterator[tuple[InternalKey, bytes]]: ...

    def range_deletions(self) -> tuple[RangeDeletion, ...]: ...


def _ordered(table: Table, index: int) -> Iterator[tuple[bytes, int, int, InternalKey, bytes]]:
    for key, value in table.entries():
        yield key.user_key, -(key.sequence << 8 | key.type), index, key, value


def merged(tables: Sequence[Table], merge_operator: str | None, what: str) -> Iterator[tuple[bytes, bytes]]:
    """Every live (user key, value) of the column family whose live tables are `tables`, in key order."""
    tombstones: list[RangeDeletion] = [t for table in tables for t in table.range_deletions()]
    streams = [_ordered(table, index) for index, table in enumerate(tables)]
    current: bytes | None = None
    versions: list[tuple[InternalKey, bytes, int]] = []
    for user_key, _, index, key, value in heapq.merge(*streams):
        if user_key != current:
            if current is not None:
                result = _resolve(current, versions, tombstones, merge_operator, tables, what)
                if result is not None:
                    yield current, result
            current, versions = user_key, []
        versions.append((key, value, index))
    if current is not None:
        result = _resolve(current, versions, tombstones, merge_operator, tables, what)
        if result is not None:
            yield current, result


def _covered(user_key: bytes, sequence: int, tombstones: list[RangeDeletion]) -> bool:
    return any(t.start <= user_key < t.end and t.sequence > sequence for t in tombstones)


def _resolve(
    user_key: bytes,
    versions: list[tuple[InternalKey, bytes, int]],
    tombstones: list[RangeDeletion],
    merge_operator: str | None,
    tables: Sequence[Table],
    what: str,
) -> bytes | None:
    """The value of one user key from its versions, newest first."""
    operands: list[bytes] = []
    base: bytes | None = None
    for key, value, index in versions:
        if tombstones and _covered(user_key, key.sequence, tombstones):
            break
        if key.type == VALUE:
            base = value
            break
        if key.type in (DELETION, SINGLE_DELETION):
            break
        if key.type == MERGE:
            if merge_operator not in LIST_MERGE_OPERATORS:
                raise InputError(
                    tables[index].path,
                    None,
                    f"{what}: a merge operand, and the merge operator {merge_operator!r} is not Flink's "
                    f"({' or '.join(LIST_MERGE_OPERATORS)})",
                )
            operands.append(value)
    if not operands:
        return base
    operands.reverse()  # oldest first
    if base is not None:
        operands.insert(0, base)
    return LIST_DELIMITER.join(operands)
