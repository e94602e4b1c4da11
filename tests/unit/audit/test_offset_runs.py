"""Pass 1's run sums equal the row-by-row sums Spark's grouped pass computes, for any order of rows."""

from __future__ import annotations

import numpy as np
import pytest

from splitaudit.audit.passes.bitmaps import BUCKET_BITS
from splitaudit.audit.passes.fingerprint import INT64_MAX, LOW_32, SPARK_SEED, spark_xxhash64
from splitaudit.audit.passes.offset_runs import bucket_sums, run_pieces


def _row_by_row(keys: np.ndarray, offsets: np.ndarray) -> dict[tuple[int, int], tuple[int, int, int, int, int]]:
    """What Spark's pass 1 sums per (key, bucket): rows, min, max and the per-row fingerprint halves."""
    with np.errstate(over="ignore"):
        after = np.where(offsets == INT64_MAX, np.int64(SPARK_SEED), spark_xxhash64(offsets + 1))
    at = spark_xxhash64(offsets)
    high, low = (after >> 32) - (at >> 32), (after & LOW_32) - (at & LOW_32)
    sums: dict[tuple[int, int], tuple[int, int, int, int, int]] = {}
    for key, offset, h, lo in zip(keys.tolist(), offsets.tolist(), high.tolist(), low.tolist(), strict=True):
        where = (key, offset >> BUCKET_BITS)
        rows, first, last, hs, ls = sums.get(where, (0, offset, offset, 0, 0))
        sums[where] = (rows + 1, min(first, offset), max(last, offset), hs + h, ls + lo)
    return sums


def _run_sums(keys: np.ndarray | None, offsets: np.ndarray) -> dict[tuple[int, int], tuple[int, int, int, int, int]]:
    found = bucket_sums(keys, offsets)
    columns = (found.key, found.bucket, found.rows, found.first, found.last, found.hash_high, found.hash_low)
    return {(k, b): tuple(rest) for k, b, *rest in zip(*(c.tolist() for c in columns), strict=True)}


def _interleaved(rng: np.random.Generator, partitions: int, per_partition: int, base: int) -> tuple[np.ndarray, ...]:
    """A streaming file: each partition's offsets in order, the partitions interleaved at random."""
    keys = np.repeat(np.arange(partitions, dtype=np.int64), per_partition)
    rng.shuffle(keys)
    offsets = np.empty(len(keys), dtype=np.int64)
    for key in range(partitions):
        offsets[keys == key] = base + key * 1_000_003 + np.arange(per_partition)
    return keys, offsets


def test_interleaved_partitions_crossing_buckets() -> None:
    keys, offsets = _interleaved(np.random.default_rng(3), 3, 100_000, 3_000_000_000)
    found = _run_sums(keys, offsets)
    assert found == _row_by_row(keys, offsets)
    assert sum(v[0] for v in found.values()) == 300_000
    assert len(found) == 12  # 100,000 offsets from an unaligned base span 4 buckets in each of 3 partitions


def test_duplicates_gaps_and_disorder() -> None:
    rng = np.random.default_rng(5)
    keys, offsets = _interleaved(rng, 4, 50_000, 7)
    offsets = np.concatenate([offsets, offsets[1_000:1_500], offsets[:10]])  # replays and double reads
    keys = np.concatenate([keys, keys[1_000:1_500], keys[:10]])
    kept = (offsets % 997) != 0  # gaps
    keys, offsets = keys[kept], offsets[kept]
    assert _run_sums(keys, offsets) == _row_by_row(keys, offsets)
    order = rng.permutation(len(offsets))  # no runs at all: every row its own
    assert _run_sums(keys[order], offsets[order]) == _row_by_row(keys[order], offsets[order])


def test_one_key_and_keys_in_order() -> None:
    offsets = np.concatenate([np.arange(0, 70_000), np.arange(65_000, 66_000), np.arange(100_000, 100_010)])
    assert _run_sums(None, offsets) == _row_by_row(np.zeros(len(offsets), dtype=np.int64), offsets)
    keys = np.repeat(np.array([0, 1], dtype=np.int64), [40_000, len(offsets) - 40_000])
    assert _run_sums(keys, offsets) == _row_by_row(keys, offsets)


def test_largest_long_and_many_keys() -> None:
    offsets = np.array([INT64_MAX - 2, INT64_MAX - 1, INT64_MAX, 0, 1], dtype=np.int64)
    keys = np.array([40_000, 40_000, 40_000, 1, 1], dtype=np.int64)  # beyond int16: no radix sort
    assert _run_sums(keys, offsets) == _row_by_row(keys, offsets)


def test_a_run_holds_each_offset_once() -> None:
    """The exactness rests on this: a run's rows are its span's offsets, so its sums are those of the span."""
    found = bucket_sums(np.zeros(5, dtype=np.int64), np.array([10, 11, 12, 12, 13], dtype=np.int64))
    assert found.rows.tolist() == [5]
    assert (found.first.tolist(), found.last.tolist()) == ([10], [13])
    dense = bucket_sums(None, np.arange(10, 14, dtype=np.int64))
    assert (found.hash_high[0], found.hash_low[0]) != (dense.hash_high[0], dense.hash_low[0])


@pytest.mark.parametrize("size", [0, 1])
def test_tiny_batches(size: int) -> None:
    offsets = np.arange(size, dtype=np.int64)
    assert _run_sums(np.zeros(size, dtype=np.int64), offsets) == _row_by_row(np.zeros(size, dtype=np.int64), offsets)


def test_runs_in_offset_order_are_the_fewest_whatever_order_the_rows_came_in() -> None:
    keys = np.array([1, 0, 1, 0, 1, 1], dtype=np.int16)
    offsets = np.array([7, 3, 5, 2, 6, 5], dtype=np.int64)
    came = run_pieces(keys, offsets)
    assert sorted(zip(came.first.tolist(), came.last.tolist(), strict=True)) == [
        (2, 2),
        (3, 3),
        (5, 5),
        (5, 6),
        (7, 7),
    ]
    ordered = run_pieces(keys, offsets, by_offset=True)
    assert list(zip(ordered.row.tolist(), ordered.first.tolist(), ordered.last.tolist(), strict=True)) == [
        (3, 2, 3),  # key 0: rows 3 and 1, offsets 2..3
        (2, 5, 5),  # key 1: offsets 5, then 5..7 (rows 5, 4, 0)
        (5, 5, 7),
    ]
