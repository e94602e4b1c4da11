"""The user-visible contents of a column family: all its live tables merged by internal key, as a RocksDB read
at the snapshot's last sequence number sees them (`db/merge_helper.cc`, `db/range_del_aggregator.cc`).

For each user key, its versions newest first (highest sequence): a Put ends the walk with its value; a Delete or
SingleDelete ends it with nothing; a Merge operand is collected and the walk goes on. A version older than a
range tombstone covering its key (`start <= key < end`, tombstone sequence higher) counts as deleted. Collected
operands are applied oldest first onto the value the walk ended with (if any) by the column family's merge
operator. Flink sets `StringAppendTESTOperator` (RocksDB's `stringappendtest`, Flink's list state) on every
column family: the existing value and each operand joined with one ',' byte; `StringAppendOperator` with its
default ',' joins the same way. A key left with nothing is absent. Tables are read a block at a time and merged
lazily (`heapq.merge`): memory holds one block per table and one key's merge operands.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import Protocol

from splitaudit.errors import InputError
from splitaudit.savepoint.rocksdb.dbformat import MERGE, VALUE
from splitaudit.savepoint.rocksdb.table import RangeDeletion

LIST_MERGE_OPERATORS = ("StringAppendTESTOperator", "StringAppendOperator")
LIST_DELIMITER = b","


class Table(Protocol):
    """What the merge needs of a table (`BlockBasedTable`): its file, its point entries in internal-key order as
    (user key, `sequence << 8 | type`, value), its range deletions."""

    path: str

    def versions(self) -> Iterator[tuple[bytes, int, bytes]]: ...

    def range_deletions(self) -> tuple[RangeDeletion, ...]: ...


def _ordered(table: Table, index: int) -> Iterator[tuple[bytes, int, int, bytes]]:
    """A table's versions as the heap merges them: user key, then newest first, then the table's place."""
    for user_key, tag, value in table.versions():
        yield user_key, -tag, index, value


def merged(tables: Sequence[Table], merge_operator: str | None, what: str) -> Iterator[tuple[bytes, bytes]]:
    """Every live (user key, value) of the column family whose live tables are `tables`, in key order.

    One pass over the versions, newest first per key: a key's walk ends at its first Put, Delete or covering
    range deletion, and its older versions are passed over unread; merge operands are kept until it ends. One
    table needs no heap."""
    tombstones: list[RangeDeletion] = [t for table in tables for t in table.range_deletions()]
    if len(tables) == 1:
        stream: Iterator[tuple[bytes, int, int, bytes]] = _ordered(tables[0], 0)
    else:
        stream = heapq.merge(*(_ordered(table, index) for index, table in enumerate(tables)))
    current: bytes | None = None
    base: bytes | None = None
    operands: list[bytes] | None = None
    done = True
    for user_key, negated, index, value in stream:
        if user_key != current:
            if current is not None:
                result = _value(base, operands)
                if result is not None:
                    yield current, result
            current, base, operands, done = user_key, None, None, False
        if done:
            continue
        tag = -negated
        if tombstones and _covered(user_key, tag >> 8, tombstones):
            done = True
            continue
        kind = tag & 0xFF
        if kind == VALUE:
            base, done = value, True
        elif kind == MERGE:
            if merge_operator not in LIST_MERGE_OPERATORS:
                raise InputError(
                    tables[index].path,
                    None,
                    f"{what}: a merge operand, and the merge operator {merge_operator!r} is not Flink's "
                    f"({' or '.join(LIST_MERGE_OPERATORS)})",
                )
            if operands is None:
                operands = [value]
            else:
                operands.append(value)
        else:  # DELETION, SINGLE_DELETION
            done = True
    if current is not None:
        result = _value(base, operands)
        if result is not None:
            yield current, result


def _value(base: bytes | None, operands: list[bytes] | None) -> bytes | None:
    """A key's value from what its walk found: the Put's value (or none), then the merge operands, newest first."""
    if operands is None:
        return base
    operands.reverse()  # oldest first
    if base is not None:
        operands.insert(0, base)
    return LIST_DELIMITER.join(operands)


def _covered(user_key: bytes, sequence: int, tombstones: list[RangeDeletion]) -> bool:
    return any(t.start <= user_key < t.end and t.sequence > sequence for t in tombstones)
