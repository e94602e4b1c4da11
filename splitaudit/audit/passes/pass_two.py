"""Pass 2, over the suspect buckets only, in one Spark job: per bucket its exact distinct, missing and unexpected
offsets and its duplicated offsets by class, as counts and runs.

The suspects' rows (the sink's, and the source's of the same buckets) are run-length coded where they are read,
batch by batch in Spark's Python workers (`mapInArrow`, `row_runs`): runs of consecutive offsets of one
(topic, partition, generation, reader), cut at bucket edges. Only the runs are grouped by bucket and handed to
a Python worker (`applyInArrow`), where `bucket_offsets.BucketTally` works each bucket out from its runs: a twin
reader that re-read a whole partition adds a run per file, not a row per offset, so the shuffle and the count
follow the runs. Each bucket gives one small result: counts and the first runs of each kind of offset, never a
row, so the driver's share does not grow with the suspects' rows. `tally_runs` does the same on the driver for
runs pass 1 already holds (`parquet_pass`).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, StructField, StructType

from splitaudit.audit.passes.bitmaps import BucketKey, OffsetSpan
from splitaudit.audit.passes.bucket_offsets import BucketOffsets, BucketTally
from splitaudit.audit.passes.duplicates import Lineage
from splitaudit.audit.passes.filters import offset_filter
from splitaudit.audit.passes.offset_runs import Int64s
from splitaudit.audit.passes.row_runs import BUCKET, FIRST, LAST, batch_runs

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
    names = [*lineage.generation, "reader_id"] if lineage.classified else []
    columns = ["topic", "partition", "offset"]
    parts = []
    if sink_keys:
        parts.append(sink.filter(offset_filter(sink_keys)).select(*columns, *names, F.lit(True).alias(SIDE)))
    if source is not None and expected:
        parts.append(source.filter(offset_filter(expected)).select(*columns, F.lit(False).alias(SIDE)))
    if not parts:
        return {}
    rows = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1], allowMissingColumns=True)
    keys = ["topic", "partition", *names, SIDE]
    runs_schema = StructType(
        [
            *(rows.schema[name] for name in keys[:-1]),
            StructField(SIDE, BooleanType(), False),
            *(StructField(name, LongType(), False) for name in (BUCKET, FIRST, LAST)),
        ]
    )

    def runs(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from batch_runs(batch, keys).to_batches()

    generation = lineage.generation

    def tally(key: tuple[pa.Scalar, ...], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # typed in full: Spark tells the iterator form of a grouped Arrow function by its type hints
        return _tally(key, batches, expected=expected, generation=generation)

    pieces = rows.mapInArrow(runs, runs_schema)
    results = pieces.groupBy("topic", "partition", BUCKET).applyInArrow(tally, RESULT_SCHEMA).collect()
    return {(row["topic"], row["partition"], row["bucket"]): pickle.loads(row["result"]) for row in results}


def tally_runs(
    runs: dict[BucketKey, pa.Table], lineage: Lineage, expected: Mapping[BucketKey, OffsetSpan]
) -> dict[BucketKey, BucketOffsets]:
    """Pass 2 on the driver, for suspect buckets whose sink runs (`row_runs` tables) are already known (dense
    expectations only: no source)."""
    found = {}
    for key, table in runs.items():
        tally = BucketTally(key[2], lineage.generation)
        tally.add_sink_runs(*_ends(table), table if lineage.classified else None)
        found[key] = tally.result(expected[key])
    return found


def _ends(table: pa.Table | pa.RecordBatch) -> tuple[Int64s, Int64s]:
    return tuple(  # type: ignore[return-value]
        np.asarray(table.column(name).to_numpy(zero_copy_only=False), dtype=np.int64) for name in (FIRST, LAST)
    )


def _tally(
    key: tuple[pa.Scalar, ...],
    batches: Iterator[pa.RecordBatch],
    *,
    expected: dict[BucketKey, OffsetSpan | None],
    generation: tuple[str, ...],
) -> Iterator[pa.RecordBatch]:
    """One bucket's runs, worked out in a Spark Python worker: its BucketOffsets, pickled, or nothing for a bucket
    that is not a suspect."""
    topic, partition, bucket = (scalar.as_py() for scalar in key)
    if (topic, partition, bucket) not in expected:
        return
    tally = BucketTally(bucket, generation)
    for batch in batches:
        side = batch.column(SIDE)
        sink = batch.filter(side)
        if len(sink):
            tally.add_sink_runs(*_ends(sink), pa.Table.from_batches([sink]) if generation else None)
        if len(sink) < len(batch):
            tally.add_source_runs(*_ends(batch.filter(pc.invert(side))))
    result = tally.result(expected[(topic, partition, bucket)])
    yield pa.RecordBatch.from_pydict(
        {"topic": [topic], "partition": [partition], "bucket": [bucket], "result": [pickle.dumps(result)]},
        schema=pa.schema(
            [("topic", pa.string()), ("partition", pa.int32()), ("bucket", pa.int64()), ("result", pa.binary())]
        ),
    )
