"""Kafka coordinates recovered from a record identity: a sink that carries no topic, partition or offset, mapped
back to the source records it was made from.

Users' pipelines write what their records mean (a timestamp, a station, a temperature), not where they were read.
When each source record carries something unique that the job copies into its output (an event id, a timestamp,
the whole payload of a pass-through job), two Spark SQL expressions name it: `sink_key` over the sink's columns,
`source_key` over the source record as Spark's Kafka source gives it (`key`, `value`, `topic`, `partition`,
`offset`, `timestamp`, `timestampType`, `headers`). Both are compared as strings (binary as its UTF-8 text), so
they must give the same text for the same record; the payload mode compares the record value's bytes with the
sink's `value` column (or `sink_key`).

The mapping is one join of fingerprints (two 64-bit hashes of the identity, so equal identities meet and unequal
ones do not, short of a 128-bit coincidence) between the sink and the source topics read from their log start to
their end. A source identity held by more than one record is never guessed at: those records and the sink rows
carrying them are findings, and the sink rows are not judged. Sink rows whose identity no source record holds are
`unmatched_sink_rows`; source records without an identity (the expression gave null) are set aside and counted.
What remains is the sink as `read_sink` shapes it (topic, partition, offset and the lineage columns the sink
has), which the sink checks judge exactly as a sink with coordinates. Nothing row-level reaches the driver but
bounded samples.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from splitaudit.audit.checks.findings import (
    AMBIGUOUS_IDENTITY,
    ERROR,
    INVALID,
    NO_IDENTITY,
    UNMATCHED,
    WARNING,
    Finding,
)
from splitaudit.audit.passes.duplicates import LINEAGE_COLUMNS
from splitaudit.audit.request import IdentityMatch
from splitaudit.errors import UsageError, printable, summary

SAMPLE_ROWS = 5  # sink rows or source records shown with each identity finding
_ID = ("_id_high", "_id_low")  # the identity's fingerprint: two differently seeded 64-bit hashes
_IDENTITY = "_splitaudit_identity"  # the identity's text, before it is hashed
JOIN_ROWS = 2_000_000  # source identities per shuffle partition a hash join's task holds (~150 MB); beyond, sort-merge
# source records per shuffle partition of the identities, when their number is known: each task's aggregation and
# hash join hold a map of 1 M identities at most (100 M records on local[2]: aggregated in 38 s at 1 M per task, 85 s
# at 12.5 M; joined to the sink by hash in 50 s, by sort-merge at 12.5 M per task in 88 s)
IDENTITY_ROWS = 1_000_000
# Spark 4.3's setting that plans an aggregate as one Complete-mode aggregation after the shuffle, without the partial
# aggregate before it: identities are (nearly) all distinct, so a partial aggregate would hash every record to reduce
# nothing
BYPASS_PARTIAL_AGGREGATION = "spark.sql.execution.bypassPartialAggregation"


@dataclass(frozen=True)
class IdentityMapping:
    """The sink mapped to source coordinates, the source offsets it is judged against, and what could not be
    mapped (as findings)."""

    sink: DataFrame  # topic, partition, offset (+ the sink's lineage columns): every row that mapped to one record
    source: DataFrame  # topic, partition, offset of every source record with a unique identity
    findings: tuple[Finding, ...]
    note: str  # how the rows were mapped, and how many matched one source record


@contextmanager
def _conf(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """The session's setting `key` at `value` while the block plans a query, then as it was (the user's session
    is left as it came)."""
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def _fingerprinted(frame: DataFrame, identity: Column, *columns: Column | str) -> DataFrame:
    """The frame's `columns` with the identity's two hashes (null when the identity is null).

    The identity is evaluated once per row, in a projection of its own: inside the hashes' null guards, which are
    conditional, Spark does not share it between the two and evaluated it again for each (a JSON path over every
    record of 10 M: 23 s where 13 s read, parse, hash and shuffle them)."""
    keyed = frame.select(*columns, identity.cast("string").alias(_IDENTITY))
    text = F.col(_IDENTITY)
    return keyed.select(
        "*",
        F.when(text.isNotNull(), F.xxhash64(text)).alias(_ID[0]),
        F.when(text.isNotNull(), F.xxhash64(F.lit("splitaudit"), text)).alias(_ID[1]),
    ).drop(_IDENTITY)


def _expression(text: str, option: str, frame: DataFrame, side: str) -> Column:
    """The user's expression, checked against the frame's columns now (a usage error, not a failed Spark job)."""
    try:
        column = F.expr(text)
        _ = frame.select(column.alias("_identity")).schema  # analysis only: unknown columns, bad functions
    except Exception as ex:  # Spark raises ParseException / AnalysisException for what the user wrote
        columns = ", ".join(frame.columns)
        raise UsageError(
            f"{option} {printable(text)!r} cannot be evaluated over the {side} (columns {columns}): {summary(ex)}"
        ) from None
    return column


@contextmanager
def map_to_source(
    sink: DataFrame,
    source_records: DataFrame,
    topics: tuple[str, ...],
    match: IdentityMatch,
    *,
    records: int | None = None,
) -> Iterator[IdentityMapping]:
    """The sink's rows mapped to the (topic, partition, offset) of the source record whose identity each carries.

    `sink` is the sink as read (its own columns), `source_records` the source `topics` as Spark's Kafka source
    reads them, and `records` how many records they hold at most (`kafka_topic.topic_records`), if known. The
    source's identities (one row each: how many records hold it, and the record when it is one) and the mapped
    sink are kept on local disk while the block runs (a 4 GiB driver's heap holds neither at 100 M records): the
    sink checks read them several times, and a topic that grows meanwhile must not change the answer.

    The identities are aggregated over fixed-width columns only (the topic as its index in `topics`), which
    Spark's hash aggregate keeps in place; a string or struct minimum would make it sort every record. They are
    aggregated once, after the shuffle: a partial aggregate before it would hash every record to reduce nothing,
    as nearly every identity is held by one record. With `records`, they are shuffled into partitions of
    IDENTITY_ROWS at most (never fewer than the session's shuffle partitions), which the join keeps: the sink
    is shuffled to them. The join is a shuffled hash join (neither side is sorted) while the identities fit
    JOIN_ROWS per partition, else a sort-merge join, whose sorts spill to disk.
    """
    sink_identity = _expression(match.sink_key, "--sink-key", sink, "sink")
    source_identity = _expression(match.source_key, "--source-key", source_records, "source records")
    lineage = [c for c in LINEAGE_COLUMNS if c in sink.columns]
    names = F.array(*[F.lit(t) for t in topics])
    fingerprinted_source = _fingerprinted(
        source_records,
        source_identity,
        F.array_position(names, F.col("topic")).cast("int").alias("_topic"),
        "partition",
        "offset",
    )
    partitions = int(sink.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
    if records is not None:
        partitions = max(partitions, -(-records // IDENTITY_ROWS))
        fingerprinted_source = fingerprinted_source.repartition(partitions, *_ID)
    grouped = fingerprinted_source.groupBy(*_ID).agg(
        F.count(F.lit(1)).alias("_holders"),
        F.min("_topic").alias("_topic"),
        F.min("partition").alias("_partition"),
        F.min("offset").alias("_offset"),
    )
    with _conf(sink.sparkSession, BYPASS_PARTIAL_AGGREGATION, "true"):
        identities = grouped.persist(StorageLevel.DISK_ONLY)  # planned here: the setting holds for its plan
    fingerprinted = _fingerprinted(sink, sink_identity, *lineage)
    held = identities.count()  # fills the kept identities, and says which join fits the memory
    if held > JOIN_ROWS * partitions:
        # a hash join task holds a hash map of its partition of the identities, which does not spill: beyond
        # JOIN_ROWS identities per task it outgrows the task's memory (at 100 M identities on local[2] with 4 GiB,
        # even 50 partitions of 2 M each ran the JVM out of heap beside the kept identities); a sort-merge join
        # spills its sorts to disk instead
        joined = fingerprinted.join(identities.hint("merge"), list(_ID), "left")
    else:
        joined = fingerprinted.join(identities.hint("shuffle_hash"), list(_ID), "left")
    mapped = joined.persist(StorageLevel.DISK_ONLY)
    try:
        findings, matched = _findings(identities, mapped, match)
        findings = tuple(
            _with_sample(f, sink, sink_identity, fingerprinted_source, identities, names) for f in findings
        )
        record = [
            F.element_at(names, F.col("_topic")).alias("topic"),
            F.col("_partition").alias("partition"),
            F.col("_offset").alias("offset"),
        ]
        judged = mapped.filter(F.col("_holders") == 1).select(*record, *lineage)
        unique = identities.filter(F.col(_ID[0]).isNotNull() & (F.col("_holders") == 1)).select(*record)
        note = (
            f"sink rows mapped to source records by identity ({match.described}): {matched} of them matched one "
            "source record, whose coordinates they are judged by"
        )
        yield IdentityMapping(judged, unique, findings, note)
    finally:
        mapped.unpersist()
        identities.unpersist()


def _with_sample(
    finding: Finding,
    sink: DataFrame,
    sink_identity: Column,
    source: DataFrame,
    identities: DataFrame,
    names: Column,
) -> Finding:
    """The finding with its sample rows: sink rows for the sink's findings, the records sharing an identity for
    an ambiguous one. Read only for a finding there is (each is one more read of that side)."""
    if finding.kind in (INVALID, UNMATCHED):
        rows = _fingerprinted(sink, sink_identity, "*").join(identities, list(_ID), "left_anti")
        rows = rows.filter(F.col(_ID[0]).isNull() if finding.kind == INVALID else F.col(_ID[0]).isNotNull())
        return replace(
            finding, sample=tuple(r.asDict() for r in rows.select(*sink.columns).limit(SAMPLE_ROWS).collect())
        )
    if finding.kind == AMBIGUOUS_IDENTITY:
        shared = identities.filter(F.col(_ID[0]).isNotNull() & (F.col("_holders") > 1)).orderBy(*_ID).limit(SAMPLE_ROWS)
        records = (
            source.join(F.broadcast(shared.select(*_ID, "_holders")), list(_ID))
            .select(F.element_at(names, F.col("_topic")).alias("topic"), "partition", "offset", "_holders", *_ID)
            .orderBy(*_ID, "topic", "partition", "offset")
            .limit(SAMPLE_ROWS)
            .collect()
        )
        sample = tuple(
            {"topic": r["topic"], "partition": r["partition"], "offset": r["offset"], "records": r["_holders"]}
            for r in records
        )
        return replace(finding, sample=sample)
    return finding


def _findings(identities: DataFrame, mapped: DataFrame, match: IdentityMatch) -> tuple[tuple[Finding, ...], int]:
    """What could not be mapped, counted in one aggregation per side (the samples are read later, `_with_sample`)."""
    sink_counts = mapped.agg(
        F.count_if(F.col(_ID[0]).isNull()).alias("null_key"),
        F.count_if(F.col(_ID[0]).isNotNull() & F.col("_holders").isNull()).alias("unmatched"),
        F.count_if(F.col("_holders") > 1).alias("ambiguous"),
        F.count_if(F.col("_holders") == 1).alias("matched"),
    ).collect()[0]
    keyed = F.col(_ID[0]).isNotNull()
    source_counts = identities.agg(
        F.sum(F.when(~keyed, F.col("_holders"))).alias("null_key"),
        F.sum(F.when(keyed & (F.col("_holders") > 1), F.col("_holders"))).alias("shared"),
        F.count_if(keyed & (F.col("_holders") > 1)).alias("identities"),
    ).collect()[0]
    findings: list[Finding] = []
    if sink_counts["null_key"]:
        detail = f"sink rows whose --sink-key ({match.sink_key}) is null: they cannot be mapped to a source record"
        findings.append(Finding(INVALID, ERROR, None, None, sink_counts["null_key"], detail=detail))
    if sink_counts["unmatched"]:
        detail = (
            f"sink rows whose identity ({match.sink_key}) no record of the source topics holds ({match.source_key}): "
            "written by something else, or made from records since deleted from the topics"
        )
        findings.append(Finding(UNMATCHED, ERROR, None, None, sink_counts["unmatched"], detail=detail))
    if source_counts["identities"]:
        detail = (
            f"{source_counts['identities']} identities ({match.source_key}) are each held by more than one source "
            f"record ({source_counts['shared']} records; the sample shows those of the first identities): their "
            f"{sink_counts['ambiguous']} sink rows are not judged (no guess at which record a row came from); "
            "choose a --source-key/--sink-key that is unique per record"
        )
        count = int(source_counts["shared"])
        findings.append(Finding(AMBIGUOUS_IDENTITY, ERROR, None, None, count, detail=detail))
    if source_counts["null_key"]:
        detail = (
            f"source records whose --source-key ({match.source_key}) is null: they have no identity to find in the "
            "sink and are not judged (neither missing nor present)"
        )
        count = int(source_counts["null_key"])
        findings.append(Finding(NO_IDENTITY, WARNING, None, None, count, detail=detail))
    return tuple(findings), int(sink_counts["matched"])
