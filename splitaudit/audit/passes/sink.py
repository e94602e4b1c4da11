"""The sink checks: every (topic, partition, offset) a sink should hold exactly once, judged without sorting it.

`audit_sink` takes a sink read into (topic, partition, offset + lineage) columns (`sink_files.read_sink`,
`kafka_topic.read_kafka_sink`) through these stages, each a module the data passes once, in this order:

1. pass 1 (`parquet_pass` for local Parquet files, else `pass_one`): every bucket's rows, offset extremes and
   fingerprint, and the files that hold it;
2. the suspects (`suspects`): the buckets whose sums are not those of the offsets they should hold, whose rows
   are read once, from the files that hold them only, and kept;
3. pass 2 (`pass_two`): per suspect bucket, in one Spark job, its exact distinct, missing and unexpected offsets
   and its duplicated offsets by class, as counts and runs;
4. the judgement (`coverage`): each partition's coverage and its missing and not-in-source offsets;
5. the classification (`duplicates`): pass 2's duplicated offsets as findings, with sample rows.

Only per-bucket (per file: per bucket and file) rows, the files' runs (a few per partition and reader of each
file, kept only where they are at most one per 64 rows) and a few sample rows reach the driver: no global sort,
no row collect.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from splitaudit.audit.checks.findings import ERROR, INFO, INVALID, NOT_A_SOURCE_TOPIC, Finding, PartitionCoverage
from splitaudit.audit.passes import coverage, parquet_pass, pass_one, pass_two, suspects
from splitaudit.audit.passes.bitmaps import BucketKey, OffsetSpan
from splitaudit.audit.passes.duplicates import Lineage, classify_duplicates
from splitaudit.audit.passes.pass_one import BucketStats
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
    first = None if files is None else parquet_pass.bucket_stats(sink.sparkSession, files)
    if first is None:
        first = pass_one.bucket_stats(sink)
    stats, foreign = _source_topics_only(first.stats, source_topics)
    lineage = Lineage.of(sink.columns)
    if source is None:
        spans = suspects.DenseSpans.of(stats)
        chosen = suspects.dense_suspects(stats, spans)
        expected: dict[BucketKey, OffsetSpan | None] = {key: spans.buckets[key] for key in chosen}
    else:
        source_stats = pass_one.bucket_stats(source).stats
        chosen = suspects.source_suspects(stats, source_stats)
        expected = dict.fromkeys(chosen)
    held = chosen & stats.keys()
    known = first.runs_of(held) if source is None else {}  # suspects whose runs pass 1 kept: no second read
    rest = held - known.keys()
    if source is None:
        expected = {key: expected[key] for key in rest}
    with suspects.suspect_rows(sink, rest, first.files_holding(rest)) as rows:
        exact = pass_two.tally_runs(known, lineage, spans.buckets) if known else {}
        exact |= pass_two.read_suspects(rows, rest, lineage, expected, source)
        if source is None:
            judgement = coverage.judge_dense(stats, spans, exact)
        else:
            judgement = coverage.judge_source(stats, source_stats, chosen, exact)
        samples = sink if known else rows  # the kept rows hold only the suspects pass 1 kept no runs of
        classified = classify_duplicates(
            samples, exact, lineage=lineage, exactly_once=exactly_once, files=first.files_holding
        )
        findings = [*judgement.findings, *classified]
    if first.invalid:
        detail = "sink rows with a null topic, partition or offset, or a negative offset"
        findings.append(Finding(INVALID, ERROR, None, None, first.invalid, detail=detail))
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
