"""The suspects: the buckets whose pass-1 sums are not those of the offsets they should hold, and their rows,
read once.

A bucket is clean when pass 1's rows and fingerprint equal those of the offsets it should hold: without the
source, the dense span first..last of its partition (`dense_suspects`; the expected fingerprint costs two hashes
on the driver); with the source, the source's own bucket (`source_suspects`). Every later read of the sink is of
suspect buckets (duplicated and overfull ones are suspects too): `suspect_rows` reads their rows once, from the
files that hold them only, and keeps them for pass 2 and the samples.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark.sql import DataFrame

from splitaudit.audit.passes import fingerprint
from splitaudit.audit.passes.bitmaps import BUCKET_SIZE, BucketKey, OffsetSpan
from splitaudit.audit.passes.filters import FileKey, file_filter, offset_filter
from splitaudit.audit.passes.pass_one import BucketStats

PartitionKey = tuple[str, int]  # (topic, partition)


@dataclass(frozen=True)
class DenseSpans:
    """Each partition's first..last sink offset, and the part of that span each bucket covers: what a bucket
    holds when its partition's offsets are dense."""

    partitions: dict[PartitionKey, OffsetSpan]
    buckets: dict[BucketKey, OffsetSpan]

    @classmethod
    def of(cls, stats: dict[BucketKey, BucketStats]) -> DenseSpans:
        partitions = partition_spans(stats.values())
        return cls(partitions, {key: _bucket_span(key[2], partitions[key[:2]]) for key in stats})

    def offsets(self, key: BucketKey) -> int:
        """How many offsets the bucket's span holds."""
        first, last = self.buckets[key]
        return last - first + 1


def dense_suspects(stats: dict[BucketKey, BucketStats], spans: DenseSpans) -> set[BucketKey]:
    """The buckets whose pass-1 rows and fingerprint are not those of their dense span: pass 2 reads them."""
    return {
        key
        for key, bucket in stats.items()
        if (bucket.rows, bucket.fingerprint) != (spans.offsets(key), fingerprint.range_fingerprint(*spans.buckets[key]))
    }


def source_suspects(stats: dict[BucketKey, BucketStats], source_stats: dict[BucketKey, BucketStats]) -> set[BucketKey]:
    """The buckets that only one side holds, or whose pass-1 rows and fingerprint differ between the sides."""
    return {
        key
        for key in stats.keys() | source_stats.keys()
        if key not in stats or key not in source_stats or _pass_one(stats[key]) != _pass_one(source_stats[key])
    }


def _pass_one(bucket: BucketStats) -> tuple[int, tuple[int, int]]:
    """What pass 1 knows of a bucket's offsets: its rows and their fingerprint."""
    return bucket.rows, bucket.fingerprint


@contextmanager
def suspect_rows(sink: DataFrame, keys: set[BucketKey], files: set[FileKey] | None = None) -> Iterator[DataFrame]:
    """The rows of these buckets of the sink (and of those that `offset_filter`'s joined runs span), read once
    and kept (memory, spilling to disk) while the block runs; the sink itself when there are no keys. `files`
    (`PassOne.files_holding`) names the files that hold them: the others are not opened.

    Pass 2, the classification and the samples each read only suspect buckets; where row-group statistics prune
    well (a sink sorted by partition and offset) each such read is cheap, but on a sink whose files interleave
    partitions each is about a full scan without `files`. Kept, they cost one read.

    The kept rows have as many partitions as their scan had tasks (one per few files), nearly all empty when
    the suspects are few; every later stage over them would schedule a task per partition, and on a busy
    machine each task costs more than its rows. So the block reads them coalesced to one partition per core
    (no shuffle: the kept partitions are merged as they are read).
    """
    if not keys:
        yield sink
        return
    wanted = offset_filter(keys) if files is None else file_filter(files) & offset_filter(keys)
    rows = sink.filter(wanted).persist()
    try:
        rows.count()  # filled by one job, before concurrent queries could each start filling it
        yield rows.coalesce(sink.sparkSession.sparkContext.defaultParallelism)
    finally:
        rows.unpersist()


def partition_spans(stats: Iterable[BucketStats]) -> dict[PartitionKey, OffsetSpan]:
    """First and last offset of every (topic, partition)."""
    spans: dict[PartitionKey, OffsetSpan] = {}
    for bucket in stats:
        first, last = spans.get((bucket.topic, bucket.partition), (bucket.first_offset, bucket.last_offset))
        spans[(bucket.topic, bucket.partition)] = (min(first, bucket.first_offset), max(last, bucket.last_offset))
    return spans


def _bucket_span(bucket: int, partition_span: OffsetSpan) -> OffsetSpan:
    """The offsets of `bucket` that lie within the partition's first..last offset."""
    start = max(partition_span[0], bucket * BUCKET_SIZE)
    return start, min(partition_span[1], (bucket + 1) * BUCKET_SIZE - 1)
