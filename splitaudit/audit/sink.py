"""The sink checks: duplicate (topic, partition, offset) keys, classified, and offsets missing from the sink.

Pass 1 is one scan of codegen'd aggregates: per (topic, partition, 32,768-offset bucket), rows, first and last
offset, and a fingerprint of the offsets (`fingerprint`). A bucket whose row count and fingerprint equal those
of the offsets it should hold is clean. Pass 2 reads only the suspect buckets again, as offset bitmaps built in
the Python workers (`bitmaps`) and ORed by Spark, to count their distinct offsets exactly and name the missing
ones; a third step classifies the duplicates of the buckets that have any. Only per-bucket rows and the
bitmaps of buckets with gaps reach the driver: no global sort, no row collect.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from splitaudit.audit import bitmaps, fingerprint
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
from splitaudit.audit.request import SINK_FORMATS, SinkColumns
from splitaudit.errors import UsageError

LINEAGE_COLUMNS = ("reader_id", "attempt")
MAX_RANGES = 100  # offset ranges listed per finding; the count is always exact
MAX_BITMAP_BUCKETS = 4096  # gap buckets whose bitmaps are read (16 MiB); beyond, counts only
SAMPLE_ROWS = 5


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
    """Duplicates and dense-offset gaps per (topic, partition), exact, in one pass plus work on suspects only.

    Pass 1 fingerprints every 32,768-offset bucket with codegen'd aggregates (`fingerprint`). Buckets whose
    fingerprint matches the offsets they should hold are clean; only the others are read again, as bitmaps,
    to count their distinct offsets and name the missing ones; only buckets with duplicates are classified.
    """
    stats, invalid = _fingerprints(sink)
    bounds = _bounds(stats)
    suspects = [b for b in stats if not _clean(b, bounds[b.key[:2]])]
    exact = _bitmaps(sink, suspects, bounds)
    distinct = {b.key: exact[b.key][0] if b.key in exact else b.rows for b in stats}
    rows: dict[tuple[str, int], int] = dict.fromkeys(bounds, 0)
    held: dict[tuple[str, int], int] = dict.fromkeys(bounds, 0)
    for b in stats:  # one pass over the buckets, not one per partition
        rows[b.key[:2]] += b.rows
        held[b.key[:2]] += distinct[b.key]
    coverage = {
        key: PartitionCoverage(key[0], key[1], rows[key], held[key], lo, hi, (hi - lo + 1) - held[key])
        for key, (lo, hi) in sorted(bounds.items())
    }
    findings = _missing_findings(coverage, distinct, exact)
    classified = all(c in sink.columns for c in LINEAGE_COLUMNS)
    duplicate_buckets = [b.key for b in stats if b.rows > distinct[b.key]]
    if duplicate_buckets:
        findings += _duplicate_findings(sink, duplicate_buckets, classified, exactly_once)
    if invalid:
        detail = "sink rows with a null topic, partition or offset, or a negative offset"
        findings.append(Finding(INVALID, ERROR, None, None, invalid, detail=detail))
    return SinkAudit(tuple(coverage.values()), tuple(findings), classified)


@dataclass(frozen=True)
class BucketStats:
    """One (topic, partition, bucket) after pass 1: rows, offset extremes, and the xxhash64 half sums."""

    topic: str
    partition: int
    bucket: int
    rows: int
    lo: int
    hi: int
    hash_high: int
    hash_low: int

    @property
    def key(self) -> tuple[str, int, int]:
        return self.topic, self.partition, self.bucket


def _fingerprints(sink: DataFrame) -> tuple[list[BucketStats], int]:
    """Pass 1: per (topic, partition, bucket), count, min, max and the two xxhash64 half sums; and the number of
    invalid rows (null key, negative offset), which land in groups with a null or negative bucket."""
    hashed = F.xxhash64("offset")
    rows = (
        sink.groupBy("topic", "partition", F.shiftright("offset", bitmaps.BUCKET_BITS).alias("bucket"))
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.min("offset").alias("lo"),
            F.max("offset").alias("hi"),
            F.sum(F.shiftright(hashed, 32)).alias("hash_high"),
            F.sum(hashed.bitwiseAND(0xFFFFFFFF)).alias("hash_low"),
        )
        .collect()
    )
    valid = [r for r in rows if None not in (r["topic"], r["partition"], r["bucket"]) and r["bucket"] >= 0]
    stats = [
        BucketStats(r["topic"], r["partition"], r["bucket"], r["rows"], r["lo"], r["hi"], r["hash_high"], r["hash_low"])
        for r in valid
    ]
    return stats, sum(r["rows"] for r in rows) - sum(b.rows for b in stats)


def _bounds(stats: list[BucketStats]) -> dict[tuple[str, int], tuple[int, int]]:
    """First and last offset of every (topic, partition)."""
    bounds: dict[tuple[str, int], tuple[int, int]] = {}
    for b in stats:
        lo, hi = bounds.get((b.topic, b.partition), (b.lo, b.hi))
        bounds[(b.topic, b.partition)] = (min(lo, b.lo), max(hi, b.hi))
    return bounds


def _bucket_span(bucket: int, bounds: tuple[int, int]) -> tuple[int, int]:
    """The offsets of `bucket` that lie within the partition's first..last offset."""
    start = max(bounds[0], bucket * bitmaps.BUCKET_SIZE)
    return start, min(bounds[1], (bucket + 1) * bitmaps.BUCKET_SIZE - 1)


def _span_size(bucket: int, bounds: tuple[int, int]) -> int:
    """How many offsets the bucket holds when nothing is missing (dense offsets)."""
    start, end = _bucket_span(bucket, bounds)
    return end - start + 1


def _clean(b: BucketStats, bounds: tuple[int, int]) -> bool:
    """True when the bucket holds every offset of its span exactly once (count and fingerprint agree)."""
    if b.rows != _span_size(b.bucket, bounds):
        return False
    return (b.hash_high, b.hash_low) == fingerprint.range_fingerprint(*_bucket_span(b.bucket, bounds))


def _bitmaps(
    sink: DataFrame, suspects: list[BucketStats], bounds: dict[tuple[str, int], tuple[int, int]]
) -> dict[tuple[str, int, int], tuple[int, bytes | None]]:
    """Pass 2, suspect buckets only: each one's distinct offsets, and the bitmap of those with gaps (of at most
    MAX_BITMAP_BUCKETS of them; None beyond)."""
    if not suspects:
        return {}
    keys = sink.sparkSession.createDataFrame([b.key for b in suspects], "topic string, partition int, bucket bigint")
    exact = (
        sink.withColumn("bucket", F.shiftright("offset", bitmaps.BUCKET_BITS))
        .join(F.broadcast(keys), ["topic", "partition", "bucket"])
        .select("topic", "partition", "offset")
        .mapInArrow(bitmaps.map_batches, bitmaps.BUCKET_DDL)
        .groupBy("topic", "partition", "bucket")
        .agg(F.bitmap_or_agg("bitmap").alias("bitmap"))
        .withColumn("distinct", F.bitmap_count("bitmap"))
        .persist()
    )
    try:
        counts = {(r["topic"], r["partition"], r["bucket"]): r["distinct"] for r in exact.drop("bitmap").collect()}
        gapped = [key for key, n in counts.items() if n < _span_size(key[2], bounds[key[:2]])][:MAX_BITMAP_BUCKETS]
        fetched: dict[tuple[str, int, int], bytes] = {}
        if gapped:
            wanted = sink.sparkSession.createDataFrame(gapped, "topic string, partition int, bucket bigint")
            for r in exact.join(F.broadcast(wanted), ["topic", "partition", "bucket"]).collect():
                fetched[(r["topic"], r["partition"], r["bucket"])] = bytes(r["bitmap"])
    finally:
        exact.unpersist()
    return {key: (n, fetched.get(key)) for key, n in counts.items()}


def _missing_findings(
    coverage: dict[tuple[str, int], PartitionCoverage],
    distinct: dict[tuple[str, int, int], int],
    exact: dict[tuple[str, int, int], tuple[int, bytes | None]],
) -> list[Finding]:
    """One finding per partition with gaps, with the exact missing ranges: whole absent buckets, and the unset
    bits of suspect buckets' bitmaps."""
    findings = []
    for key, part in coverage.items():
        if part.missing == 0:
            continue
        bounds = (part.first_offset, part.last_offset)
        ranges: list[tuple[int, int]] = []
        truncated = False
        for bucket in range(part.first_offset >> bitmaps.BUCKET_BITS, (part.last_offset >> bitmaps.BUCKET_BITS) + 1):
            seen = distinct.get((*key, bucket))
            if seen == _span_size(bucket, bounds):
                continue
            bitmap = exact[(*key, bucket)][1] if seen is not None else None
            if seen is not None and bitmap is None:
                truncated = True  # beyond MAX_BITMAP_BUCKETS: the count stays exact, the ranges are partial
                continue
            for first, last in bitmaps.missing_ranges(bucket, bitmap, *_bucket_span(bucket, bounds)):
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
