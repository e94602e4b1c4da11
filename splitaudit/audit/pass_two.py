"""Pass 2, over the suspect buckets only, in one Spark job: per bucket its exact distinct, missing and unexpected
offsets and its duplicated offsets by class, as counts and runs.

The suspects' rows (the sink's, and the source's of the same buckets) are grouped by bucket and handed to a
Python worker batch by batch (`applyInArrow`), where `bucket_offsets.BucketTally` counts them offset by offset:
a bucket costs one array of 32,768 counts, whatever its rows. Each bucket gives one small result: counts and the
first runs of each kind of offset, never a row, so the driver's share does not grow with the suspects' rows.
Before this pass, the same answers took a bitmap aggregate for the counts, then per class of duplicate a chain of
grouped aggregates and a window for the runs: about ten Spark jobs where this takes one.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from splitaudit.audit.bitmaps import BUCKET_BITS, BucketKey, OffsetSpan
from splitaudit.audit.bucket_offsets import BucketOffsets, BucketTally
from splitaudit.audit.duplicates import Lineage
from splitaudit.audit.filters import offset_filter

RESULT_SCHEMA = "topic string, partition int, bucket bigint, result binary"  # result: a pickled BucketOffsets
SIDE = "_side"  # which frame a row came from: the sink or the source


def read_suspects(
    sink: DataFrame,
    sink_keys: set[BucketKey],
    lineage: Lineage,
    expected: dict[BucketKey, OffsetSpan | None],
    source: DataFrame | None = None,
) -> dict[BucketKey, BucketOffsets]:
    """Pass 2 on the suspect buckets: each one's offsets (`BucketOffsets`), against `expected`: per suspect, the
    dense span its sink rows should fill, or None: exactly the source's offsets of that bucket (`source` holds
    them). `sink` is the sink, or any frame holding at least the rows of `sink_keys`, the suspects the sink
    holds rows of (`suspects.suspect_rows`). Buckets that only the filters' joined runs let through are dropped
    in the workers; a suspect no side holds a row of is absent from the result."""
    extra = [F.col(c) for c in (*lineage.generation, "reader_id") if lineage.classified]
    columns = ["topic", "partition", "offset"]
    parts = []
    if sink_keys:
        parts.append(sink.filter(offset_filter(sink_keys)).select(*columns, *extra, F.lit(True).alias(SIDE)))
    if source is not None and expected:
        parts.append(source.filter(offset_filter(expected)).select(*columns, F.lit(False).alias(SIDE)))
    if not parts:
        return {}
    rows = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1], allowMissingColumns=True)
    bucket = F.shiftright("offset", BUCKET_BITS).alias("bucket")
    generation = lineage.generation

    def tally(key: tuple[pa.Scalar, ...], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # typed in full: Spark tells the iterator form of a grouped Arrow function by its type hints
        return _tally(key, batches, expected=expected, generation=generation)

    results = rows.groupBy("topic", "partition", bucket).applyInArrow(tally, RESULT_SCHEMA).collect()
    return {(row["topic"], row["partition"], row["bucket"]): pickle.loads(row["result"]) for row in results}


def _tally(
    key: tuple[pa.Scalar, ...],
    batches: Iterator[pa.RecordBatch],
    *,
    expected: dict[BucketKey, OffsetSpan | None],
    generation: tuple[str, ...],
) -> Iterator[pa.RecordBatch]:
    """One bucket's rows, counted in a Spark Python worker: its BucketOffsets, pickled, or nothing for a bucket
    that is not a suspect."""
    topic, partition, bucket = (scalar.as_py() for scalar in key)
    if (topic, partition, bucket) not in expected:
        return
    tally = BucketTally(bucket, generation)
    for batch in batches:
        side = batch.column(SIDE)
        sink = batch.filter(side)
        if len(sink):
            tally.add_sink(sink.column("offset"), pa.Table.from_batches([sink]) if generation else None)
        if len(sink) < len(batch):
            tally.add_source(batch.filter(pc.invert(side)).column("offset"))
    result = tally.result(expected[(topic, partition, bucket)])
    yield pa.RecordBatch.from_pydict(
        {"topic": [topic], "partition": [partition], "bucket": [bucket], "result": [pickle.dumps(result)]},
        schema=pa.schema(
            [("topic", pa.string()), ("partition", pa.int32()), ("bucket", pa.int64()), ("result", pa.binary())]
        ),
    )
