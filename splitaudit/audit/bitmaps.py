"""Offset bitmaps: the compact form in which the sink audit counts distinct offsets in one pass.

Offsets of one (topic, partition) fall in buckets of 32,768 (`offset >> 15`); a bucket's bitmap is 4,096 bytes
with offset bit `o & 32767` at byte `bit // 8`, bit `bit % 8` (little bit order). That is Spark's own layout,
so bitmaps built here in the Python workers combine with Spark's `bitmap_or_agg` and `bitmap_count`.
`batch_bitmaps` turns one Arrow batch of (topic, partition, offset) rows into one row per bucket touched:
rows seen, the bitmap, and the
lowest and highest offset of that partition in the batch (their min and max over all rows are the partition's
first and last offset). Rows with a null or negative key come out in bucket -1.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

BUCKET_BITS = 15
BUCKET_SIZE = 1 << BUCKET_BITS  # 32,768 offsets
BITMAP_BYTES = BUCKET_SIZE // 8  # 4,096 bytes
INVALID_BUCKET = -1
# A batch whose offsets of one partition span more buckets than this per row is sparse: per-bucket path.
DENSE_SPAN_PER_ROW = 4

BUCKET_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("bucket", pa.int64()),
        ("rows", pa.int64()),
        ("lo", pa.int64()),
        ("hi", pa.int64()),
        ("bitmap", pa.binary()),
    ]
)
BUCKET_DDL = "topic string, partition int, bucket bigint, rows bigint, lo bigint, hi bigint, bitmap binary"


def bucket_bitmaps(offsets: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], list[bytes]]:
    """Buckets touched by `offsets` (non-negative), rows per bucket, and each bucket's bitmap."""
    buckets = offsets >> BUCKET_BITS
    first, last = int(buckets.min()), int(buckets.max())
    span = last - first + 1
    if span <= max(1, DENSE_SPAN_PER_ROW * len(offsets) // BUCKET_SIZE + 1):
        bits = np.zeros(span * BUCKET_SIZE, dtype=np.bool_)
        bits[offsets - first * BUCKET_SIZE] = True
        packed = np.packbits(bits, bitorder="little").reshape(span, BITMAP_BYTES)
        rows = np.bincount(buckets - first, minlength=span)
        touched = np.flatnonzero(rows)
        return touched + first, rows[touched].astype(np.int64), [packed[i].tobytes() for i in touched]
    unique, inverse, rows = np.unique(buckets, return_inverse=True, return_counts=True)
    bitmaps = []
    for index, bucket in enumerate(unique):
        bits = np.zeros(BUCKET_SIZE, dtype=np.bool_)
        bits[offsets[inverse == index] - int(bucket) * BUCKET_SIZE] = True
        bitmaps.append(np.packbits(bits, bitorder="little").tobytes())
    return unique.astype(np.int64), rows.astype(np.int64), bitmaps


def batch_bitmaps(batch: pa.RecordBatch) -> pa.RecordBatch:
    """One output row per (topic, partition, bucket) of an input batch of (topic, partition, offset)."""
    topic_column, partition_column, offset_column = batch.column(0), batch.column(1), batch.column(2)
    valid = pc.and_(
        pc.and_(pc.is_valid(topic_column), pc.is_valid(partition_column)),
        pc.and_(pc.is_valid(offset_column), pc.greater_equal(pc.fill_null(offset_column, -1), 0)),
    )
    invalid_rows = len(batch) - pc.sum(pc.cast(valid, pa.int64())).as_py() if len(batch) else 0
    columns: dict[str, list[object]] = {name: [] for name in BUCKET_SCHEMA.names}
    if invalid_rows:
        for name, value in zip(
            BUCKET_SCHEMA.names, (None, None, INVALID_BUCKET, invalid_rows, None, None, None), strict=True
        ):
            columns[name].append(value)
    if invalid_rows < len(batch):
        kept = batch.filter(valid)
        topics = pc.dictionary_encode(kept.column(0))
        topic_index = topics.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        partitions = kept.column(1).to_numpy(zero_copy_only=False).astype(np.int64)
        offsets = kept.column(2).to_numpy(zero_copy_only=False).astype(np.int64)
        keys = (topic_index << 32) | (partitions & 0xFFFFFFFF)
        unique_keys = np.unique(keys)
        for key in unique_keys:
            selected = offsets if len(unique_keys) == 1 else offsets[keys == key]
            topic = topics.dictionary[int(key) >> 32].as_py()
            partition = int(np.int32(np.uint32(int(key) & 0xFFFFFFFF)))
            buckets, rows, bitmaps = bucket_bitmaps(selected)
            low, high = int(selected.min()), int(selected.max())
            for i, bucket in enumerate(buckets):
                columns["topic"].append(topic)
                columns["partition"].append(partition)
                columns["bucket"].append(int(bucket))
                columns["rows"].append(int(rows[i]))
                columns["lo"].append(low)
                columns["hi"].append(high)
                columns["bitmap"].append(bitmaps[i])
    return pa.RecordBatch.from_pydict(columns, schema=BUCKET_SCHEMA)


def map_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The `mapInArrow` function: bucket rows for every batch a Spark task reads."""
    for batch in batches:
        yield batch_bitmaps(batch)


def bitmap_offsets(bucket: int, bitmap: bytes) -> npt.NDArray[np.int64]:
    """The offsets set in one bucket's bitmap, ascending."""
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return np.flatnonzero(bits).astype(np.int64) + bucket * BUCKET_SIZE


def missing_ranges(bucket: int, bitmap: bytes | None, start: int, end: int) -> list[tuple[int, int]]:
    """Inclusive runs of offsets in [start, end] (within one bucket) whose bit is not set; all of it if no bitmap."""
    if bitmap is None:
        return [(start, end)]
    base = bucket * BUCKET_SIZE
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")[start - base : end - base + 1]
    absent = np.flatnonzero(bits == 0) + start
    if len(absent) == 0:
        return []
    breaks = np.flatnonzero(np.diff(absent) != 1)
    firsts = np.concatenate(([absent[0]], absent[breaks + 1]))
    lasts = np.concatenate((absent[breaks], [absent[-1]]))
    return [(int(a), int(b)) for a, b in zip(firsts, lasts, strict=True)]
