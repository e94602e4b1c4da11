"""Offset bitmaps built per Arrow batch: buckets, row counts, set bits and missing runs."""

from __future__ import annotations

import pyarrow as pa

from splitaudit.audit.bitmaps import BUCKET_SIZE, INVALID_BUCKET, batch_bitmaps, bitmap_offsets, missing_ranges


def _rows(batch: pa.RecordBatch) -> dict[tuple[object, object, object], tuple[object, ...]]:
    table = batch.to_pydict()
    return {
        (table["topic"][i], table["partition"][i], table["bucket"][i]): (
            table["rows"][i],
            None if table["bitmap"][i] is None else bitmap_offsets(table["bucket"][i], table["bitmap"][i]).tolist(),
        )
        for i in range(len(batch))
    }


def test_one_row_per_topic_partition_bucket_with_rows_and_bits() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "topic": ["t", "t", "t", "t", "t", "u", None],
            "partition": [0, 0, 0, 1, 1, 0, 0],
            "offset": [0, 1, 1, BUCKET_SIZE + 8, 5, 7, 3],
        }
    )
    assert _rows(batch_bitmaps(batch)) == {
        (None, None, INVALID_BUCKET): (1, None),
        ("t", 0, 0): (3, [0, 1]),
        ("t", 1, 0): (1, [5]),
        ("t", 1, 1): (1, [BUCKET_SIZE + 8]),
        ("u", 0, 0): (1, [7]),
    }


def test_negative_offsets_are_invalid_rows() -> None:
    batch = pa.RecordBatch.from_pydict({"topic": ["t", "t"], "partition": [0, 0], "offset": [-1, 4]})
    assert _rows(batch_bitmaps(batch)) == {(None, None, INVALID_BUCKET): (1, None), ("t", 0, 0): (1, [4])}


def test_sparse_offsets_take_the_per_bucket_path() -> None:
    far = [3, 50 * BUCKET_SIZE + 1, 900 * BUCKET_SIZE]
    batch = pa.RecordBatch.from_pydict({"topic": ["t"] * 3, "partition": [2] * 3, "offset": far})
    assert _rows(batch_bitmaps(batch)) == {
        ("t", 2, 0): (1, [3]),
        ("t", 2, 50): (1, [50 * BUCKET_SIZE + 1]),
        ("t", 2, 900): (1, [900 * BUCKET_SIZE]),
    }


def test_missing_ranges_within_a_bucket() -> None:
    batch = pa.RecordBatch.from_pydict({"topic": ["t"] * 4, "partition": [0] * 4, "offset": [10, 11, 14, 20]})
    bitmap = batch_bitmaps(batch).to_pydict()["bitmap"][0]
    assert missing_ranges(0, bitmap, 10, 21) == [(12, 13), (15, 19), (21, 21)]
    assert missing_ranges(0, bitmap, 10, 11) == []
    assert missing_ranges(3, None, 3 * BUCKET_SIZE, 3 * BUCKET_SIZE + 9) == [(3 * BUCKET_SIZE, 3 * BUCKET_SIZE + 9)]
