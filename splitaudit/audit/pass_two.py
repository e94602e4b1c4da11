"""Pass 2, over the suspect buckets only: exact distinct, missing and unexpected offset counts, and the bitmaps
that name them.

Offset bitmaps (`bitmaps` has the layout), built by Spark's own `bitmap_construct_agg`, give exact distinct counts,
and against the source's bitmaps exact missing and unexpected counts; the built-in aggregate needs no Arrow
transfer and no Python worker. The driver holds at most MAX_BITMAP_BUCKETS bitmaps of each side: beyond, counts
of all and bitmaps of the buckets the judgement needs them for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from splitaudit.audit.bitmaps import BUCKET_BITS, BUCKET_SIZE, BucketKey
from splitaudit.audit.filters import covered, offset_filter

MAX_BITMAP_BUCKETS = 4096  # suspect buckets whose bitmaps are fetched (16 MiB a side); beyond, counts only
KEY_COLUMNS = ("topic", "partition", "bucket")


@dataclass(frozen=True)
class SuspectBucket:
    """One suspect bucket after pass 2: how many distinct offsets the sink holds in it, how many the source
    holds, and how many either holds (their union); with the bitmaps when they were fetched (None: that side
    has no offset there, or the bitmap was not asked for)."""

    sink_offsets: int
    source_offsets: int
    union_offsets: int
    sink_bitmap: bytes | None = None
    source_bitmap: bytes | None = None

    @property
    def bitmaps_known(self) -> bool:
        """True when the bitmaps of both sides are known (a side with no offset here needs none)."""
        return (self.sink_offsets == 0 or self.sink_bitmap is not None) and (
            self.source_offsets == 0 or self.source_bitmap is not None
        )


NO_OFFSETS = SuspectBucket(0, 0, 0)  # a suspect bucket that a second read of a shifting source no longer holds


def read_suspects(
    sink: DataFrame,
    sink_keys: set[BucketKey],
    source: DataFrame | None,
    source_keys: set[BucketKey],
    needs_bitmaps: Callable[[BucketKey, SuspectBucket], bool],
) -> dict[BucketKey, SuspectBucket]:
    """Pass 2 on the suspect buckets: exact counts of all, and bitmaps of those that `needs_bitmaps` (of at most
    MAX_BITMAP_BUCKETS of them: the driver holds at most that many bitmaps of each side)."""
    if len(sink_keys | source_keys) <= MAX_BITMAP_BUCKETS:
        return exact_buckets(sink, sink_keys, source, source_keys, with_bitmaps=True)
    exact = exact_buckets(sink, sink_keys, source, source_keys, with_bitmaps=False)
    chosen = set(sorted(key for key, bucket in exact.items() if needs_bitmaps(key, bucket))[:MAX_BITMAP_BUCKETS])
    if chosen:
        exact |= exact_buckets(sink, sink_keys & chosen, source, source_keys & chosen, with_bitmaps=True)
    return exact


def exact_buckets(
    sink: DataFrame,
    sink_keys: set[BucketKey],
    source: DataFrame | None = None,
    source_keys: set[BucketKey] | frozenset[BucketKey] = frozenset(),
    *,
    with_bitmaps: bool,
) -> dict[BucketKey, SuspectBucket]:
    """Pass 2: exact counts of the given buckets of the sink (and of the source), with their bitmaps if asked.

    The rows of both sides go through one aggregate: per bucket, the bitmap of the sink's offsets, of the
    source's, and of either's; their cardinalities give missing (either - sink) and unexpected (either - source)
    offsets exactly. Without a source, only the sink's bitmap is built.
    """
    sides = [(sink, sink_keys, "sink")] + ([(source, set(source_keys), "source")] if source is not None else [])
    parts = [
        frame.filter(offset_filter(keys)).select("topic", "partition", "offset", F.lit(side).alias("side"))
        for frame, keys, side in sides
        if keys
    ]
    if not parts:
        return {}
    rows = reduce(DataFrame.unionByName, parts)
    position = F.col("offset").bitwiseAND(BUCKET_SIZE - 1)
    bitmap = {side: F.bitmap_construct_agg(F.when(F.col("side") == side, position)) for side in ("sink", "source")}
    aggregates = [bitmap["sink"].alias("sink")]
    if source is not None:
        aggregates += [bitmap["source"].alias("source"), F.bitmap_construct_agg(position).alias("either")]
    built = rows.groupBy("topic", "partition", F.shiftright("offset", BUCKET_BITS).alias("bucket")).agg(*aggregates)
    if any(covered(keys) > len(keys) for _, keys, _ in sides):
        # joined runs: keep only the wanted buckets (a semi-join of the aggregated rows, a few per bucket)
        wanted = sorted(set(sink_keys) | set(source_keys))
        keys = sink.sparkSession.createDataFrame(wanted, "topic string, partition int, bucket bigint")
        built = built.join(F.broadcast(keys), list(KEY_COLUMNS), "left_semi")
    names = [name for name in ("sink", "source", "either") if name in built.columns]
    counts = [F.bitmap_count(name).alias(f"{name}_count") for name in names]
    fetched: list[Column | str] = [*KEY_COLUMNS, *counts, *(names[:2] if with_bitmaps else [])]
    exact = {}
    for row in built.select(*fetched).collect():
        in_sink = row["sink_count"]
        in_source = row["source_count"] if source is not None else 0
        exact[(row["topic"], row["partition"], row["bucket"])] = SuspectBucket(
            in_sink,
            in_source,
            row["either_count"] if source is not None else in_sink,
            bytes(row["sink"]) if with_bitmaps and in_sink else None,
            bytes(row["source"]) if with_bitmaps and in_source else None,
        )
    return exact
