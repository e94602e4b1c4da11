"""The sink checks: every (topic, partition, offset) a sink should hold exactly once, judged without sorting it.

`audit_sink` takes a sink read into (topic, partition, offset + lineage) columns (`sink_files.read_sink`,
`kafka_topic.read_kafka_sink`) and runs pass 1 over all of it (`buckets.bucket_stats`), judges every bucket's
coverage of its partition from that, reading only the suspect buckets again (`coverage`), and classifies the
duplicates of the buckets that hold any (`duplicates`). The suspects' rows are read from the sink once
(`buckets.suspect_rows`), and from a sink of files only out of the files that hold them: on a sink whose files
mix partitions, where row-group statistics prune little, any other read costs about a full scan. Only
per-bucket (per file: per bucket and file) rows, a bounded number of bitmaps and a few sample rows reach the
driver: no global sort, no row collect.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

from pyspark.sql import DataFrame

from splitaudit.audit import buckets, parquet_pass
from splitaudit.audit.bitmaps import BucketKey
from splitaudit.audit.buckets import BucketStats
from splitaudit.audit.coverage import (
    DenseSpans,
    dense_suspects,
    judge_dense,
    judge_source,
    overfull_buckets,
    source_suspects,
)
from splitaudit.audit.duplicates import Lineage, classify_duplicates
from splitaudit.audit.findings import ERROR, INFO, INVALID, NOT_A_SOURCE_TOPIC, Finding, PartitionCoverage
from splitaudit.errors import UsageError, printable


@dataclass(frozen=True)
class SinkAudit:
    """What the sink checks found, per (topic, partition), and what the sink's lineage could tell."""

    coverage: tuple[PartitionCoverage, ...]
    findings: tuple[Finding, ...]
    lineage: Lineage

    @property
    def classified(self) -> bool:
        """True when duplicates were classified (the sink has reader_id and attempt columns)."""
        return self.lineage.classified


def audit_sink(
    sink: DataFrame,
    *,
    exactly_once: bool = False,
    source: DataFrame | None = None,
    source_topics: frozenset[str] = frozenset(),
    files: parquet_pass.ParquetFiles | None = None,
) -> SinkAudit:
    """Duplicates and missing offsets per (topic, partition), exact, in one pass plus work on suspects only.

    Without `source`, each partition's offsets are expected dense between its lowest and highest sink offset.
    With `source`, a DataFrame (topic, partition, offset) of the offsets that really exist in the source topic,
    exactly those offsets are expected, whatever the sink's extremes: the judged range of a partition is the
    source's offsets, so an offset of the source below the sink's first or above its last is missing too, and
    holes of the source (transaction markers, compaction) are not. Sink offsets the source lacks are reported
    as NOT_IN_SOURCE. The source is read twice (pass 1, then its suspect buckets): it must be bounded, the same
    offsets both times. Duplicates are classified by lineage (`duplicates`); replays are errors when
    `exactly_once`.

    `source_topics`, when known (the savepoint's sources, or --topic), are the topics the sink's coordinates
    must name: a sink naming none of them is refused (a UsageError: its coordinates are its own, not its
    source's), and rows of any other topic are left out of every check and reported as NOT_A_SOURCE_TOPIC, so
    no gap of a topic the job does not read is ever called missing.

    `files` (`parquet_pass.parquet_files` of this very sink) lets pass 1 read the sink's Parquet files itself,
    without Spark's hash grouping of every row; the result is the same.
    """
    pass_one = None if files is None else parquet_pass.bucket_stats(sink.sparkSession, files)
    if pass_one is None:
        pass_one = buckets.bucket_stats(sink)
    stats, foreign = _source_topics_only(pass_one.stats, source_topics)
    lineage = Lineage.of(sink.columns)
    source_stats: dict[BucketKey, BucketStats] = {}
    if source is None:
        spans = DenseSpans.of(stats)
        suspects = dense_suspects(stats, spans)
    else:
        source_stats = buckets.bucket_stats(source).stats
        suspects = source_suspects(stats, source_stats)
    # every later read of the sink is of suspect buckets (duplicated and overfull ones are suspects too): one
    # read of their rows, kept, serves pass 2, the classification and the samples
    held = suspects & stats.keys()
    with buckets.suspect_rows(sink, held, pass_one.files_holding(held)) as rows, ThreadPoolExecutor(1) as pool:
        classify = partial(classify_duplicates, rows, lineage=lineage, exactly_once=exactly_once)
        early: Future[list[Finding]] | None = None
        overfull: list[BucketKey] = []
        if source is None:
            overfull = overfull_buckets(stats, spans)
            if overfull:  # surely duplicated: classify them while pass 2 runs
                early = pool.submit(classify, overfull)
            judgement = judge_dense(rows, stats, spans, suspects)
        else:
            judgement = judge_source(rows, stats, source, source_stats, suspects)
        findings = list(judgement.findings)
        duplicated = judgement.duplicated_buckets(stats)
        if early is not None and duplicated == overfull:
            findings += early.result()
        elif duplicated:  # others too (duplicates and gaps in one bucket): classify them all together
            findings += classify(duplicated)
    if pass_one.invalid:
        detail = "sink rows with a null topic, partition or offset, or a negative offset"
        findings.append(Finding(INVALID, ERROR, None, None, pass_one.invalid, detail=detail))
    for topic, count in sorted(foreign.items()):
        detail = f"sink rows naming topic {printable(topic)!r}, which no source reads: not judged"
        findings.append(Finding(NOT_A_SOURCE_TOPIC, INFO, topic, None, count, detail=detail))
    return SinkAudit(judgement.coverage, tuple(findings), lineage)


def _source_topics_only(
    stats: dict[BucketKey, BucketStats], source_topics: frozenset[str]
) -> tuple[dict[BucketKey, BucketStats], dict[str, int]]:
    """The buckets of source topics, and the rows of every other topic the sink names; a sink that names no
    source topic at all is refused. No `source_topics`: every bucket is judged."""
    if not source_topics:
        return stats, {}
    foreign: dict[str, int] = {}
    for (topic, _, _), bucket in stats.items():
        if topic not in source_topics:
            foreign[topic] = foreign.get(topic, 0) + bucket.rows
    if foreign and len(foreign) == len({key[0] for key in stats}):
        named = ", ".join(printable(t) for t in sorted(foreign))
        raise UsageError(
            f"the sink's coordinates name only topic(s) {named}, which no source reads (the sources read "
            f"{', '.join(printable(t) for t in sorted(source_topics))}): they are the sink's own coordinates, not "
            "its source records'. Map the sink's columns that hold the source coordinates with --topic-col, "
            "--partition-col and --offset-col, or map its rows to source records by identity with --sink-key and "
            "--source-key (or --match-payload) and --bootstrap"
        )
    return {key: bucket for key, bucket in stats.items() if key[0] in source_topics}, foreign
