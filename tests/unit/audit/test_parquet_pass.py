"""What one Spark task of the Parquet pass yields for a file, against a row-by-row oracle (no Spark here: the
pass against Spark's own is in tests/integration/test_parquet_pass.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from splitaudit.audit.passes.bitmaps import BUCKET_BITS
from splitaudit.audit.passes.fingerprint import LOW_32, spark_xxhash64
from splitaudit.audit.passes.parquet_pass import (
    BUCKET,
    INVALID,
    RUNLESS,
    RUNS,
    UNSUITED,
    _balanced,
    _constant_columns,
    _file_rows,
    _joined,
)
from splitaudit.audit.passes.pass_one import BucketStats
from splitaudit.audit.request import SinkColumns

Sums = dict[tuple[object, ...], tuple[object, ...]]  # (topic, partition, bucket) -> rows, first, last, high, low


def _oracle(table: pa.Table) -> tuple[Sums, int]:
    """Per (topic, partition, bucket): rows, first, last and fingerprint halves, row by row; and invalid rows."""
    sums: dict[tuple[object, ...], tuple[int, int, int, int, int]] = {}
    invalid = 0
    for row in table.to_pylist():
        topic, partition, offset = row["topic"], row["partition"], row["offset"]
        if topic is None or partition is None or offset is None or offset < 0:
            invalid += 1
            continue
        after, at = (int(h) for h in spark_xxhash64(np.array([offset + 1, offset], dtype=np.int64)))
        key = (topic, partition, offset >> BUCKET_BITS)
        rows, first, last, high, low = sums.get(key, (0, offset, offset, 0, 0))
        sums[key] = (
            rows + 1,
            min(first, offset),
            max(last, offset),
            high + (after >> 32) - (at >> 32),
            low + (after & LOW_32) - (at & LOW_32),
        )
    return dict(sums), invalid


def _yielded(path: Path, columns: SinkColumns | None = None) -> tuple[Sums, int]:
    sums: Sums = {}
    invalid = 0
    stat = path.stat()
    for row in _file_rows(str(path), columns or SinkColumns()):
        if row[0] == INVALID:
            invalid += int(row[1])  # type: ignore[call-overload]
            continue
        if row[0] in (RUNS, RUNLESS):
            continue
        assert row[0] == BUCKET
        _, found, file_key = row
        assert file_key == (stat.st_size, stat.st_mtime_ns // 1_000_000 * 1_000)  # Spark's file key
        assert isinstance(found, BucketStats)
        sums[found.key] = (found.rows, found.first_offset, found.last_offset, found.hash_high, found.hash_low)
    return sums, invalid


def test_two_topics_far_apart_partitions_nulls_and_negative_offsets(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    n = 30_000
    topic: list[str | None] = rng.choice(np.array(["orders", "clicks"]), n).tolist()
    partition: list[int | None] = rng.choice(np.array([0, 7, 100_000]), n).tolist()
    offset: list[int | None] = list((np.arange(n) + 40_000).tolist())
    topic[5], partition[6], offset[7], offset[8] = None, None, None, -3
    table = pa.table(
        {"topic": pa.array(topic), "partition": pa.array(partition, pa.int64()), "offset": pa.array(offset)}
    )
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=7_000)
    sums, invalid = _yielded(tmp_path / "a.parquet")
    assert (sums, invalid) == _oracle(table)
    assert invalid == 4
    assert sum(int(v[0]) for v in sums.values()) == n - 4  # type: ignore[call-overload]


def test_one_partition_in_order_with_a_replay_and_renamed_columns(tmp_path: Path) -> None:
    offsets = np.concatenate([np.arange(0, 100_000), np.arange(50_000, 50_500)])
    table = pa.table(
        {"t": pa.array(["x"] * len(offsets)).dictionary_encode(), "p": np.full(len(offsets), 3, np.int16), "o": offsets}
    )
    pq.write_table(table, tmp_path / "b.parquet")
    sums, invalid = _yielded(tmp_path / "b.parquet", SinkColumns("t", "p", "o"))
    oracle = _oracle(table.rename_columns(["topic", "partition", "offset"]))
    assert (sums, invalid) == oracle
    assert sums[("x", 3, 1)][0] == 32_768 + 500


@pytest.mark.parametrize(
    ("table", "reason"),
    [
        (pa.table({"topic": [1], "partition": [0], "offset": [5]}), "topic column of type int64"),
        (pa.table({"topic": ["t"], "partition": [0], "offset": ["5"]}), "column 'offset' of type string"),
        (pa.table({"topic": ["t"], "offset": [5]}), "no top-level column 'partition'"),
        (pa.table({"topic": ["t"], "partition": [2**40], "offset": [5]}), "not in range"),
    ],
)
def test_unsuited_files_send_the_pass_back_to_spark(tmp_path: Path, table: pa.Table, reason: str) -> None:
    pq.write_table(table, tmp_path / "c.parquet")
    rows = list(_file_rows(str(tmp_path / "c.parquet"), SinkColumns()))
    assert [row[:2] for row in rows] == [(UNSUITED, str(tmp_path / "c.parquet"))]
    assert reason in str(rows[0][2])


def test_files_are_balanced_by_size() -> None:
    sizes = {"a": 900, "b": 500, "c": 400, "d": 100, "e": 50}
    groups = _balanced(tuple(sizes), tuple(sizes.values()), 2)
    assert sorted(sorted(group) for group in groups) == [["a", "d"], ["b", "c", "e"]]
    assert len(_balanced(("a",), (900,), 6)) == 1


def test_a_file_pyarrow_cannot_read_is_left_to_spark(tmp_path: Path) -> None:
    (tmp_path / "d.parquet").write_bytes(b"not a parquet file at all")
    rows = list(_file_rows(str(tmp_path / "d.parquet"), SinkColumns()))
    assert [row[:2] for row in rows] == [(UNSUITED, str(tmp_path / "d.parquet"))]
    assert [row[0] for row in _file_rows(str(tmp_path / "gone.parquet"), SinkColumns())] == [UNSUITED]


def test_files_runs_join_across_lineage_types_or_give_none() -> None:
    narrow = pa.table({"attempt": pa.array([0], pa.int32()), "first": [1]})
    wide = pa.table({"attempt": pa.array([1], pa.int64()), "first": [2]})
    joined = _joined([narrow, wide])
    assert joined is not None
    assert joined["attempt"].to_pylist() == [0, 1]
    assert _joined([narrow, pa.table({"attempt": ["1"], "first": [3]})]) is None
    assert _joined([]) is None


def test_lineage_constant_in_a_row_group_is_taken_from_its_statistics(tmp_path: Path) -> None:
    table = pa.table(
        {
            "topic": ["t"] * 6,
            "partition": pa.array([0] * 6, pa.int32()),
            "offset": pa.array([0, 1, 2, 2, 3, 4], pa.int64()),
            "reader_id": ["r0", "r0", "r0", "r1", "r1", "r0"],
            "attempt": pa.array([0, 0, 0, 0, 0, 1], pa.int32()),
        }
    )
    pq.write_table(table, tmp_path / "l.parquet", row_group_size=3)  # a constant row group, then a mixed one
    runs = [row[1] for row in _file_rows(str(tmp_path / "l.parquet"), SinkColumns(), ("attempt", "reader_id"))]
    found = [r for r in runs if isinstance(r, pa.Table)]
    assert len(found) == 1
    columns = ("reader_id", "attempt", "first", "last")
    assert sorted(zip(*(found[0][c].to_pylist() for c in columns), strict=True)) == [
        ("r0", 0, 0, 2),
        ("r0", 1, 4, 4),
        ("r1", 0, 2, 3),
    ]
    assert found[0].schema.field("reader_id").type == pa.string()
    parquet = pq.ParquetFile(tmp_path / "l.parquet")
    assert set(_constant_columns(parquet, 0, ("attempt", "reader_id"))) == {"attempt", "reader_id"}  # not read
    assert _constant_columns(parquet, 1, ("attempt", "reader_id")) == {}
