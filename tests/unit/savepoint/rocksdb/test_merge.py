"""The merge of a column family's versions: Flink's list state as merge operands (`ListState.add` is a RocksDB
Merge of one element, `update` a Put of the ','-joined list, `clear` a Delete), range deletions, newest first.
No writer on PyPI writes merge operands (rocksdict has no merge operator), so the versions here are built as a
table yields them; the bytes of tables themselves are covered by test_rocksdb_written.py and the Flink corpus."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from splitaudit.errors import InputError
from splitaudit.savepoint.rocksdb.dbformat import DELETION, MERGE, SINGLE_DELETION, VALUE
from splitaudit.savepoint.rocksdb.merge import merged
from splitaudit.savepoint.rocksdb.table import RangeDeletion


class Versions:
    """A table's entries, sorted as a table stores them (user key, then newest first)."""

    def __init__(self, rows: list[tuple[bytes, int, int, bytes]], tombstones: tuple[RangeDeletion, ...] = ()) -> None:
        self.path = "table.sst"
        self.rows = sorted(rows, key=lambda row: (row[0], -(row[1] << 8 | row[2])))
        self.tombstones = tombstones

    def versions(self) -> Iterator[tuple[bytes, int, bytes]]:
        for user_key, sequence, kind, value in self.rows:
            yield user_key, sequence << 8 | kind, value

    def range_deletions(self) -> tuple[RangeDeletion, ...]:
        return self.tombstones


FLINK = "StringAppendTESTOperator"


def test_list_state_adds_append_to_the_last_put_in_sequence_order() -> None:
    older = Versions([(b"k", 1, VALUE, b"a,b"), (b"k", 3, MERGE, b"d"), (b"j", 2, MERGE, b"x")])
    newer = Versions([(b"k", 2, MERGE, b"c"), (b"k", 5, MERGE, b"e"), (b"j", 4, MERGE, b"y")])
    assert list(merged([newer, older], FLINK, "list")) == [(b"j", b"x,y"), (b"k", b"a,b,c,d,e")]


def test_a_delete_or_single_delete_ends_the_list_and_later_adds_start_a_new_one() -> None:
    table = Versions(
        [
            (b"a", 1, VALUE, b"old"),
            (b"a", 2, DELETION, b""),
            (b"a", 3, MERGE, b"new"),
            (b"b", 1, MERGE, b"x"),
            (b"b", 2, SINGLE_DELETION, b""),
            (b"c", 1, VALUE, b"v1"),
            (b"c", 2, VALUE, b"v2"),
        ]
    )
    assert list(merged([table], FLINK, "list")) == [(b"a", b"new"), (b"c", b"v2")]


def test_an_empty_put_keeps_its_delimiter() -> None:
    """StringAppendTESTOperator::FullMergeV2 writes the delimiter after an existing value, even an empty one."""
    assert list(merged([Versions([(b"k", 1, VALUE, b""), (b"k", 2, MERGE, b"x")])], FLINK, "")) == [(b"k", b",x")]


def test_range_deletions_hide_older_versions_in_their_range_only() -> None:
    tombstone = RangeDeletion(b"b", b"d", 5)
    table = Versions(
        [
            (b"a", 1, VALUE, b"kept: before the range"),
            (b"b", 4, VALUE, b"hidden"),
            (b"c", 2, VALUE, b"hidden"),
            (b"c", 6, MERGE, b"newer than the tombstone"),
            (b"d", 1, VALUE, b"kept: the end is exclusive"),
        ],
        (tombstone,),
    )
    assert list(merged([table], FLINK, "")) == [
        (b"a", b"kept: before the range"),
        (b"c", b"newer than the tombstone"),
        (b"d", b"kept: the end is exclusive"),
    ]


def test_merge_operands_of_another_operator_are_refused() -> None:
    with pytest.raises(InputError, match="merge operator 'UInt64AddOperator' is not Flink's"):
        list(merged([Versions([(b"k", 1, MERGE, b"\x01")])], "UInt64AddOperator", "counter"))
