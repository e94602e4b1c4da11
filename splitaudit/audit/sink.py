"""The sink checks: duplicate (topic, partition, offset) keys, classified, and offsets missing from the sink.

Pass 1 (`buckets.bucket_stats`) is one scan of codegen'd aggregates per (topic, partition, 32,768-offset bucket):
rows, first and last offset, and a fingerprint of the offsets (`fingerprint`). A bucket is clean when its rows
and fingerprint equal those of the offsets it should hold: the dense span first..last of its partition (two
hashes on the driver per bucket), or, given the source's offsets, the source's own bucket (the same aggregate
over the source). Pass 2 (`buckets.exact_buckets`) reads only the suspect buckets again, through offset-range
filters that the file reader pushes down (Parquet row-group statistics skip the rest), as bitmaps that count
distinct, missing and unexpected offsets exactly and name them. A third query, filtered the same way,
classifies the duplicates of the buckets that have any; for buckets whose row count alone proves duplicates,
it runs in a second thread while pass 2 does. Only per-bucket rows and at most MAX_BITMAP_BUCKETS
bitmaps per side reach the driver: no global sort, no row collect.

Measured with benchmarks/sink_audit.py on local[2] (2 cores shared with other work, load 2-5, best of 2), on a
one-topic Parquet sink: 100 M rows 8.3 s against 3.4 s for a bare scan of the three columns (2.4x; 0.67x a
scan taking max(topic), the earlier floor), 53x faster than the naive groupBy + lag audit; 10 M rows 3.0 s
against 0.63 s, where the few small queries on suspects weigh most. Spark driver JVM peak RSS 1.88 GiB at 10 M,
1.95 GiB at 100 M; Python driver 130 MiB at both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np
import numpy.typing as npt
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from splitaudit.audit import bitmaps, buckets, fingerprint
from splitaudit.audit.bitmaps import BUCKET_SIZE, BucketKey
from splitaudit.audit.buckets import BucketExact, BucketStats
from splitaudit.audit.findings import (
    DOUBLE_ASSIGNMENT,
    DUPLICATE,
    ERROR,
    INVALID,
    MISSING,
    NOT_IN_SOURCE,
    REPLAY,
    WARNING,
    Finding,
    PartitionCoverage,
)
from splitaudit.audit.request import FILE_FORMATS, SinkColumns
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
    if sink_format not in FILE_FORMATS:
        raise UsageError(f"--sink-format must be one of {', '.join(FILE_FORMATS)}, not {sink_format!r}")
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
    # Parquet and ORC keep row-group statistics, from which pass 1 can prove a single topic (`buckets`)
    statistics = {buckets.FILE_STATISTICS: sink_format in ("parquet", "orc")}
    selected = [
        F.col(columns.topic).cast("string").alias("topic", metadata=statistics),
        F.col(columns.partition).cast("int").alias("partition"),
        F.col(columns.offset).cast("long").alias("offset"),
    ]
    selected += [F.col(c) for c in LINEAGE_COLUMNS if c in frame.columns and c not in wanted.values()]
    return frame.select(*selected)


def audit_sink(sink: DataFrame, *, exactly_once: bool = False, source: DataFrame | None = None) -> SinkAudit:
    """Duplicates and missing offsets per (topic, partition), exact, in one pass plus work on suspects only.

    Without `source`, each partition's offsets are expected dense between its lowest and highest sink offset.
    With `source`, a DataFrame (topic, partition, offset) of the offsets that really exist in the source topic,
    exactly those offsets are expected, whatever the sink's extremes: the judged range of a partition is the
    source's offsets, so an offset of the source below the sink's first or above its last is missing too, and
    holes of the source (transaction markers, compaction) are not. Sink offsets the source lacks are reported
    as NOT_IN_SOURCE. The source is read twice (pass 1, then its suspect buckets): it must be bounded, the same
    offsets both times. Pass 1 fingerprints every 32,768-offset bucket of both (`buckets.bucket_stats`); a
    bucket is clean when the sink's rows and fingerprint equal the expected count and fingerprint; only the
    others are read again, as bitmaps, and only buckets with duplicates are classified.
    """
    stats, invalid = buckets.bucket_stats(sink)
    classified = all(c in sink.columns for c in LINEAGE_COLUMNS)
    classify = partial(_duplicate_findings, sink, classified=classified, exactly_once=exactly_once)
    with ThreadPoolExecutor(1) as pool:
        # buckets with more rows than offsets to hold surely have duplicates: classify them while pass 2 runs
        if source is None:
            bounds, spans = _dense_spans(stats)
            surely = sorted(_surely_duplicated(stats, spans))
            early = pool.submit(classify, surely) if surely else None
            coverage, findings, distinct = _judge_dense(sink, stats, bounds, spans)
        else:
            surely, early = [], None
            coverage, findings, distinct = _judge_source(sink, stats, source, buckets.bucket_stats(source)[0])
        duplicate_buckets = sorted(key for key, b in stats.items() if b.rows > distinct.get(key, b.rows))
        if early is not None and duplicate_buckets == surely:
            findings += early.result()
        elif duplicate_buckets:  # others too (duplicates and gaps in one bucket): classify them all together
            findings += classify(duplicate_buckets)
    if invalid:
        detail = "sink rows with a null topic, partition or offset, or a negative offset"
        findings.append(Finding(INVALID, ERROR, None, None, invalid, detail=detail))
    return SinkAudit(tuple(coverage), tuple(findings), classified)


Judged = tuple[list[PartitionCoverage], list[Finding], dict[BucketKey, int]]


def _dense_spans(
    stats: dict[BucketKey, BucketStats],
) -> tuple[dict[tuple[str, int], tuple[int, int]], dict[BucketKey, tuple[int, int]]]:
    """Each partition's first..last offset, and the part of it each bucket spans (what it holds when dense)."""
    bounds = _bounds(stats.values())
    return bounds, {key: _bucket_span(key[2], bounds[key[:2]]) for key in stats}


def _surely_duplicated(stats: dict[BucketKey, BucketStats], spans: dict[BucketKey, tuple[int, int]]) -> list[BucketKey]:
    """Buckets holding more rows than their dense span has offsets: duplicates, whatever pass 2 finds."""
    return [key for key, b in stats.items() if b.rows > spans[key][1] - spans[key][0] + 1]


def _judge_dense(
    sink: DataFrame,
    stats: dict[BucketKey, BucketStats],
    bounds: dict[tuple[str, int], tuple[int, int]],
    spans: dict[BucketKey, tuple[int, int]],
) -> Judged:
    """Coverage and missing findings against dense offsets first..last of each partition (`_dense_spans`); the
    exact distinct count of every suspect bucket."""
    size = {key: end - start + 1 for key, (start, end) in spans.items()}
    suspects = {
        key
        for key, b in stats.items()
        if (b.rows, b.fingerprint) != (size[key], fingerprint.range_fingerprint(*spans[key]))
    }
    exact = _exact(sink, suspects, None, set(), lambda key, e: e.sink < size[key])
    distinct = {key: exact[key].sink if key in exact else b.rows for key, b in stats.items()}
    present: dict[tuple[str, int], list[int]] = {}
    for key in sorted(stats):
        present.setdefault(key[:2], []).append(key[2])
    coverage, findings = [], []
    for part, (lo, hi) in sorted(bounds.items()):
        held = sum(distinct[(*part, bucket)] for bucket in present[part])
        rows = sum(stats[(*part, bucket)].rows for bucket in present[part])
        cover = PartitionCoverage(part[0], part[1], rows, held, lo, hi, (hi - lo + 1) - held)
        coverage.append(cover)
        if cover.missing:
            pieces = _dense_missing_runs(part, present[part], spans, exact)
            detail = f"the sink holds offsets {lo}..{hi} of this partition but {cover.missing} of them are absent"
            findings.append(_finding(MISSING, ERROR, part, cover.missing, pieces, detail))
    return coverage, findings, distinct


def _dense_missing_runs(
    part: tuple[str, int],
    present: list[int],
    spans: dict[BucketKey, tuple[int, int]],
    exact: dict[BucketKey, BucketExact],
) -> Iterator[list[tuple[int, int]] | None]:
    """The missing runs of one partition, bucket by bucket in offset order: the offsets of buckets absent from
    the sink, and the unset bits of suspect buckets' spans (None where a bitmap was not fetched)."""
    cursor = spans[(*part, present[0])][0]
    for bucket in present:
        start, end = spans[(*part, bucket)]
        if start > cursor:
            yield [(cursor, start - 1)]  # whole buckets without a single sink row
        cursor = end + 1
        e = exact.get((*part, bucket))
        if e is None or e.sink == end - start + 1:
            continue
        if not e.complete:
            yield None
            continue
        yield bitmaps.offset_runs(bucket, bitmaps.span_bits(bucket, start, end) & ~bitmaps.bitmap_bits(e.sink_bitmap))


def _judge_source(
    sink: DataFrame, stats: dict[BucketKey, BucketStats], source: DataFrame, expected: dict[BucketKey, BucketStats]
) -> Judged:
    """Coverage, missing and not-in-source findings against the source's own offsets; the exact distinct count
    of every suspect bucket of the sink."""
    suspects = {
        key
        for key in stats.keys() | expected.keys()
        if key not in stats or key not in expected or _summary(stats[key]) != _summary(expected[key])
    }
    exact = _exact(
        sink, suspects & stats.keys(), source, suspects & expected.keys(), lambda _, e: e.either > min(e.sink, e.source)
    )
    none = BucketExact(0, 0, 0)  # a suspect bucket that a second read of a shifting source no longer holds
    distinct = {key: exact.get(key, none).sink if key in suspects else b.rows for key, b in stats.items()}
    keys_of: dict[tuple[str, int], list[BucketKey]] = {}
    for key in sorted(stats.keys() | expected.keys()):
        keys_of.setdefault(key[:2], []).append(key)
    sink_bounds, source_bounds = _bounds(stats.values()), _bounds(expected.values())
    coverage, findings = [], []
    for part, keys in keys_of.items():
        suspect = [(key, exact.get(key, none)) for key in keys if key in suspects]
        missing = sum(e.either - e.sink for _, e in suspect)
        unexpected = sum(e.either - e.source for _, e in suspect)
        lo, hi = sink_bounds.get(part) or source_bounds[part]
        rows = sum(stats[key].rows for key in keys if key in stats)
        coverage.append(PartitionCoverage(*part, rows, sum(distinct.get(k, 0) for k in keys), lo, hi, missing))
        if missing:
            first, last = source_bounds[part]
            known = sum(e.source for _, e in suspect) + sum(expected[k].rows for k in keys if k not in suspects)
            pieces = _bit_runs(suspect, lambda e: e.either > e.sink, lambda held, source: source & ~held)
            detail = f"{missing} of the {known} offsets the source holds in {first}..{last} are absent from the sink"
            findings.append(_finding(MISSING, ERROR, part, missing, pieces, detail))
        if unexpected:
            pieces = _bit_runs(suspect, lambda e: e.either > e.source, lambda held, source: held & ~source)
            detail = (
                f"the sink holds {unexpected} offsets that the source does not: outside what the source was read "
                "over, deleted since they were read (retention, compaction), or not this topic's records"
            )
            findings.append(_finding(NOT_IN_SOURCE, WARNING, part, unexpected, pieces, detail))
    return coverage, findings, distinct


def _summary(b: BucketStats) -> tuple[int, tuple[int, int]]:
    return b.rows, b.fingerprint


def _bit_runs(
    suspect: list[tuple[BucketKey, BucketExact]],
    affected: Callable[[BucketExact], bool],
    select: Callable[[npt.NDArray[np.bool_], npt.NDArray[np.bool_]], npt.NDArray[np.bool_]],
) -> Iterator[list[tuple[int, int]] | None]:
    """Per affected bucket in offset order, the runs of `select(sink bits, source bits)` (None where a bitmap
    was not fetched)."""
    for key, e in suspect:
        if affected(e):
            bits = select(bitmaps.bitmap_bits(e.sink_bitmap), bitmaps.bitmap_bits(e.source_bitmap))
            yield bitmaps.offset_runs(key[2], bits) if e.complete else None


def _finding(
    kind: str,
    severity: str,
    part: tuple[str, int],
    count: int,
    pieces: Iterable[list[tuple[int, int]] | None],
    detail: str,
) -> Finding:
    """A finding with the first MAX_RANGES runs of `pieces` (joined where one continues across a bucket edge);
    truncated when there are more, or when a piece is unknown (beyond MAX_BITMAP_BUCKETS)."""
    ranges: list[tuple[int, int]] = []
    truncated = False
    for piece in pieces:
        if piece is None:
            truncated = True
            continue
        for first, last in piece:
            if ranges and first == ranges[-1][1] + 1:
                ranges[-1] = (ranges[-1][0], last)
            else:
                ranges.append((first, last))
        if len(ranges) > MAX_RANGES:
            truncated = True
            break
    return Finding(kind, severity, part[0], part[1], count, tuple(ranges[:MAX_RANGES]), truncated, detail=detail)


def _exact(
    sink: DataFrame,
    sink_keys: set[BucketKey],
    source: DataFrame | None,
    source_keys: set[BucketKey],
    needs_bitmaps: Callable[[BucketKey, BucketExact], bool],
) -> dict[BucketKey, BucketExact]:
    """Pass 2 on the suspect buckets: exact counts of all, and bitmaps of those that `needs_bitmaps` (of at most
    MAX_BITMAP_BUCKETS of them: the driver holds at most that many bitmaps of each side)."""
    if len(sink_keys | source_keys) <= MAX_BITMAP_BUCKETS:
        return buckets.exact_buckets(sink, sink_keys, source, source_keys, with_bitmaps=True)
    exact = buckets.exact_buckets(sink, sink_keys, source, source_keys, with_bitmaps=False)
    chosen = set(sorted(key for key, e in exact.items() if needs_bitmaps(key, e))[:MAX_BITMAP_BUCKETS])
    if chosen:
        exact |= buckets.exact_buckets(sink, sink_keys & chosen, source, source_keys & chosen, with_bitmaps=True)
    return exact


def _bounds(stats: Iterable[BucketStats]) -> dict[tuple[str, int], tuple[int, int]]:
    """First and last offset of every (topic, partition)."""
    bounds: dict[tuple[str, int], tuple[int, int]] = {}
    for b in stats:
        lo, hi = bounds.get((b.topic, b.partition), (b.lo, b.hi))
        bounds[(b.topic, b.partition)] = (min(lo, b.lo), max(hi, b.hi))
    return bounds


def _bucket_span(bucket: int, bounds: tuple[int, int]) -> tuple[int, int]:
    """The offsets of `bucket` that lie within the partition's first..last offset."""
    start = max(bounds[0], bucket * BUCKET_SIZE)
    return start, min(bounds[1], (bucket + 1) * BUCKET_SIZE - 1)


def _duplicate_findings(
    sink: DataFrame, duplicate_buckets: list[BucketKey], *, classified: bool, exactly_once: bool
) -> list[Finding]:
    """A pass over the buckets with duplicates only (and any clean ones that the filter's joined runs span,
    which have none): classify each duplicated offset by its lineage.

    Two readers emitting it within one attempt is double assignment; a later attempt emitting it again is a
    replay; without lineage columns (or one reader twice in one attempt) it is a plain duplicate.
    """
    rows = sink.filter(buckets.offset_filter(duplicate_buckets))  # pushed down: the rows of those buckets only
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
        .collect()
    )
    summary.sort(key=lambda r: (r["topic"], r["partition"], r["kind"]))  # a few rows: no Spark sort (a job)
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
    exact = [
        (F.col("topic") == F.lit(t)) & (F.col("partition") == F.lit(p)) & (F.col("offset") == F.lit(o))
        for t, p, o in keys
    ]
    rank = F.row_number().over(Window.partitionBy("topic", "partition", "offset").orderBy(*sink.columns))
    chosen = sink.filter(buckets.any_of(exact)).withColumn("_rank", rank).filter(F.col("_rank") <= SAMPLE_ROWS)
    samples: dict[tuple[str, int, int], list[dict[str, object]]] = {}
    for row in chosen.drop("_rank").collect():
        samples.setdefault((row["topic"], row["partition"], row["offset"]), []).append(row.asDict())
    return {key: tuple(value) for key, value in samples.items()}
