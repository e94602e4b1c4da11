"""The sink checks: duplicate (topic, partition, offset) keys, classified, and offsets missing from the sink.

One pass of aggregations over the sink: Arrow batches become per-bucket offset bitmaps in the Python workers
(`bitmaps.map_batches`), Spark ORs them per (topic, partition, bucket) and counts bits. Only those bucket rows
(a few KB per 32,768 offsets) reach the driver; the bitmaps of buckets with gaps are read to name the exact
missing ranges. Duplicates are classified in a second pass restricted to the buckets that have any.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from splitaudit.audit import bitmaps
from splitaudit.audit.findings import (
    DOUBLE_ASSIGNMENT,
    DUPLICATE,
    ERROR,
    INVALID,
    MISSING,
    REPLAY,
    WARNING,
    Finding,
    PartitionCoverage,
)
from splitaudit.errors import UsageError

SINK_FORMATS = ("parquet", "json", "csv", "orc")
LINEAGE_COLUMNS = ("reader_id", "attempt")
MAX_RANGES = 100  # offset ranges listed per finding; the count is always exact
MAX_BITMAP_BUCKETS = 4096  # gap buckets whose bitmaps are read (16 MiB); beyond, counts only
SAMPLE_ROWS = 5


@dataclass(frozen=True)
class SinkColumns:
    """Which sink columns hold the Kafka coordinates of each record."""

    topic: str = "topic"
    partition: str = "partition"
    offset: str = "offset"


@dataclass(frozen=True)
class SinkAudit:
    """What the sink checks found, per (topic, partition)."""

    coverage: tuple[PartitionCoverage, ...]
    findings: tuple[Finding, ...]
    classified: bool


def read_sink(spark: SparkSession, path: str, sink_format: str, columns: SinkColumns) -> DataFrame:
    """The sink as a DataFrame with columns topic, partition, offset (+ lineage columns when present)."""
    if sink_format not in SINK_FORMATS:
        raise UsageError(f"--sink-format must be one of {', '.join(SINK_FORMATS)}, not {sink_format!r}")
    reader = spark.read.format(sink_format)
    if sink_format == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    try:
        frame = reader.load(path)
    except Exception as ex:  # Spark raises AnalysisException for a missing path or an unreadable format
        raise UsageError(f"{path}: cannot read as {sink_format}: {str(ex).splitlines()[0]}") from ex
    wanted = {"topic": columns.topic, "partition": columns.partition, "offset": columns.offset}
    absent = [f"{column} (--{role}-col)" for role, column in wanted.items() if column not in frame.columns]
    if absent:
        raise UsageError(f"{path}: sink has no column {', '.join(absent)}; its columns are {', '.join(frame.columns)}")
    selected = [
        F.col(columns.topic).cast("string").alias("topic"),
        F.col(columns.partition).cast("int").alias("partition"),
        F.col(columns.offset).cast("long").alias("offset"),
    ]
    selected += [F.col(c) for c in LINEAGE_COLUMNS if c in frame.columns and c not in wanted.values()]
    return frame.select(*selected)


def audit_sink(sink: DataFrame, *, exactly_once: bool = False) -> SinkAudit:
    """Count duplicates and dense-offset gaps per (topic, partition) in one pass; classify duplicates."""
    buckets = (
        sink.select("topic", "partition", "offset")
        .mapInArrow(bitmaps.map_batches, bitmaps.BUCKET_DDL)
        .groupBy("topic", "partition", "bucket")
        .agg(
            F.sum("rows").alias("rows"),
            F.min("lo").alias("lo"),
            F.max("hi").alias("hi"),
            F.bitmap_or_agg("bitmap").alias("bitmap"),
        )
        .withColumn("distinct", F.when(F.col("bucket") >= 0, F.bitmap_count("bitmap")).otherwise(F.lit(0)))
        .persist()
    )
    try:
        stats = [
            BucketStats(r["topic"], r["partition"], r["bucket"], r["rows"], r["distinct"], r["lo"], r["hi"])
            for r in buckets.drop("bitmap").collect()
        ]
        valid = [b for b in stats if b.bucket != bitmaps.INVALID_BUCKET]
        coverage = _coverage(valid)
        gaps = _gap_buckets(valid, coverage)
        findings = _missing_findings(buckets, coverage, gaps)
    finally:
        buckets.unpersist()
    classified = all(c in sink.columns for c in LINEAGE_COLUMNS)
    duplicate_buckets = [(b.topic, b.partition, b.bucket) for b in valid if b.rows > b.distinct]
    if duplicate_buckets:
        findings += _duplicate_findings(sink, duplicate_buckets, classified, exactly_once)
    invalid = sum(b.rows for b in stats if b.bucket == bitmaps.INVALID_BUCKET)
    if invalid:
        detail = "sink rows with a null topic, partition or offset, or a negative offset"
        findings.append(Finding(INVALID, ERROR, None, None, invalid, detail=detail))
    return SinkAudit(tuple(coverage.values()), tuple(findings), classified)


@dataclass(frozen=True)
class BucketStats:
    """One (topic, partition, bucket) after the first pass: rows, distinct offsets, partition extremes seen."""

    topic: str
    partition: int
    bucket: int
    rows: int
    distinct: int
    lo: int
    hi: int


def _coverage(stats: list[BucketStats]) -> dict[tuple[str, int], PartitionCoverage]:
    """Per (topic, partition): rows, distinct offsets, first and last offset, missing (dense)."""
    totals: dict[tuple[str, int], tuple[int, int, int, int]] = {}
    for b in stats:
        rows, distinct, lo, hi = totals.get((b.topic, b.partition), (0, 0, b.lo, b.hi))
        totals[(b.topic, b.partition)] = (rows + b.rows, distinct + b.distinct, min(lo, b.lo), max(hi, b.hi))
    return {
        key: PartitionCoverage(key[0], key[1], rows, distinct, lo, hi, (hi - lo + 1) - distinct)
        for key, (rows, distinct, lo, hi) in sorted(totals.items())
    }


def _bucket_span(bucket: int, part: PartitionCoverage) -> tuple[int, int]:
    """The offsets of `bucket` that lie within the partition's first..last offset."""
    start = max(part.first_offset, bucket * bitmaps.BUCKET_SIZE)
    return start, min(part.last_offset, (bucket + 1) * bitmaps.BUCKET_SIZE - 1)


def _gap_buckets(
    stats: list[BucketStats], coverage: dict[tuple[str, int], PartitionCoverage]
) -> dict[tuple[str, int], list[tuple[int, bool]]]:
    """Per partition with gaps: each bucket short of offsets, and whether the sink has any row in it."""
    distinct = {(b.topic, b.partition, b.bucket): b.distinct for b in stats}
    gaps: dict[tuple[str, int], list[tuple[int, bool]]] = {}
    for key, part in coverage.items():
        if part.missing == 0:
            continue
        first, last = part.first_offset >> bitmaps.BUCKET_BITS, part.last_offset >> bitmaps.BUCKET_BITS
        for bucket in range(first, last + 1):
            start, end = _bucket_span(bucket, part)
            seen = distinct.get((*key, bucket))
            if seen is None or seen < end - start + 1:
                gaps.setdefault(key, []).append((bucket, seen is not None))
    return gaps


def _missing_findings(
    buckets: DataFrame,
    coverage: dict[tuple[str, int], PartitionCoverage],
    gaps: dict[tuple[str, int], list[tuple[int, bool]]],
) -> list[Finding]:
    """One finding per partition with gaps, with the exact missing ranges read from the gap buckets' bitmaps."""
    wanted = [(t, p, b) for (t, p), found in gaps.items() for b, present in found if present][:MAX_BITMAP_BUCKETS]
    fetched: dict[tuple[str, int, int], bytes] = {}
    if wanted:
        keys = buckets.sparkSession.createDataFrame(wanted, "topic string, partition int, bucket bigint")
        for row in buckets.join(F.broadcast(keys), ["topic", "partition", "bucket"]).collect():
            fetched[(row["topic"], row["partition"], row["bucket"])] = bytes(row["bitmap"])
    findings = []
    for key, found in gaps.items():
        part = coverage[key]
        ranges: list[tuple[int, int]] = []
        truncated = False
        for bucket, present in found:
            bitmap = fetched.get((*key, bucket))
            if present and bitmap is None:
                truncated = True  # beyond MAX_BITMAP_BUCKETS: the count stays exact, the ranges are partial
                continue
            for first, last in bitmaps.missing_ranges(bucket, bitmap, *_bucket_span(bucket, part)):
                if ranges and first == ranges[-1][1] + 1:  # a run that continues across a bucket edge
                    ranges[-1] = (ranges[-1][0], last)
                else:
                    ranges.append((first, last))
        detail = (
            f"the sink holds offsets {part.first_offset}..{part.last_offset} of this partition "
            f"but {part.missing} of them are absent"
        )
        findings.append(
            Finding(
                MISSING,
                ERROR,
                key[0],
                key[1],
                part.missing,
                tuple(ranges[:MAX_RANGES]),
                truncated or len(ranges) > MAX_RANGES,
                detail=detail,
            )
        )
    return findings


def _duplicate_findings(
    sink: DataFrame, duplicate_buckets: list[tuple[str, int, int]], classified: bool, exactly_once: bool
) -> list[Finding]:
    """Second pass over the buckets with duplicates only: classify each duplicated offset by its lineage.

    Two readers emitting it within one attempt is double assignment; a later attempt emitting it again is a
    replay; without lineage columns (or one reader twice in one attempt) it is a plain duplicate.
    """
    spark = sink.sparkSession
    keys = spark.createDataFrame(duplicate_buckets, "topic string, partition int, bucket bigint")
    rows = sink.withColumn("bucket", F.shiftright("offset", bitmaps.BUCKET_BITS)).join(
        F.broadcast(keys), ["topic", "partition", "bucket"]
    )
    if classified:
        per_attempt = rows.groupBy("topic", "partition", "offset", "attempt").agg(
            F.count(F.lit(1)).alias("n"), F.countDistinct("reader_id").alias("readers")
        )
        per_key = per_attempt.groupBy("topic", "partition", "offset").agg(
            F.sum("n").alias("n"), F.max("readers").alias("readers"), F.count(F.lit(1)).alias("attempts")
        )
        kind = (
            F.when(F.col("readers") > 1, F.lit(DOUBLE_ASSIGNMENT))
            .when(F.col("attempts") > 1, F.lit(REPLAY))
            .otherwise(F.lit(DUPLICATE))
        )
    else:
        per_key = rows.groupBy("topic", "partition", "offset").agg(F.count(F.lit(1)).alias("n"))
        kind = F.lit(DUPLICATE)
    duplicated = per_key.filter(F.col("n") > 1).withColumn("kind", kind)
    island = F.col("offset") - F.row_number().over(Window.partitionBy("topic", "partition", "kind").orderBy("offset"))
    summary = (
        duplicated.withColumn("island", island)
        .groupBy("topic", "partition", "kind", "island")
        .agg(F.min("offset").alias("first"), F.max("offset").alias("last"), F.sum(F.col("n") - 1).alias("extra"))
        .groupBy("topic", "partition", "kind")
        .agg(
            F.sum("extra").alias("extra"),
            F.count(F.lit(1)).alias("runs"),
            F.slice(F.array_sort(F.collect_list(F.struct("first", "last"))), 1, MAX_RANGES).alias("ranges"),
        )
        .orderBy("topic", "partition", "kind")
        .collect()
    )
    samples = _samples(sink, [(r["topic"], r["partition"], r["ranges"][0]["first"]) for r in summary])
    severity = {DOUBLE_ASSIGNMENT: ERROR, REPLAY: ERROR if exactly_once else WARNING, DUPLICATE: ERROR}
    details = {
        DOUBLE_ASSIGNMENT: "emitted by two or more readers within one attempt: the partition was assigned twice",
        REPLAY: "emitted again by a later attempt after a restore (expected with an at-least-once sink)",
        DUPLICATE: "emitted more than once"
        + ("" if classified else " (no reader_id/attempt columns to tell double assignment from replay)"),
    }
    return [
        Finding(
            r["kind"],
            severity[r["kind"]],
            r["topic"],
            r["partition"],
            int(r["extra"]),
            tuple((int(x["first"]), int(x["last"])) for x in r["ranges"]),
            r["runs"] > MAX_RANGES,
            samples.get((r["topic"], r["partition"], r["ranges"][0]["first"]), ()),
            details[r["kind"]],
        )
        for r in summary
    ]


def _samples(
    sink: DataFrame, keys: list[tuple[str, int, int]]
) -> dict[tuple[str, int, int], tuple[dict[str, object], ...]]:
    """Up to SAMPLE_ROWS sink rows for each (topic, partition, offset), in one bounded query."""
    if not keys:
        return {}
    wanted = sink.sparkSession.createDataFrame(keys, "topic string, partition int, offset bigint")
    rows = sink.join(F.broadcast(wanted), ["topic", "partition", "offset"]).limit(SAMPLE_ROWS * len(keys)).collect()
    samples: dict[tuple[str, int, int], list[dict[str, object]]] = {}
    for row in rows:
        bucket = samples.setdefault((row["topic"], row["partition"], row["offset"]), [])
        if len(bucket) < SAMPLE_ROWS:
            bucket.append(row.asDict())
    return {key: tuple(value) for key, value in samples.items()}
