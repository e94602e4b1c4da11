"""The judgement: what the sink covers of each partition, from pass 1's sums and pass 2's exact counts of the
suspects, on the driver.

Clean buckets hold their expected offsets once each; a suspect bucket's distinct, missing and unexpected offsets,
with their first runs, are pass 2's (`pass_two`). The judgement gives each partition's coverage and the missing
and not-in-source findings, their runs joined across bucket edges.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from splitaudit.audit.checks.findings import ERROR, MISSING, NOT_IN_SOURCE, WARNING, Finding, PartitionCoverage
from splitaudit.audit.passes.bitmaps import BucketKey
from splitaudit.audit.passes.bucket_offsets import NO_OFFSETS, BucketOffsets, OffsetRuns, joined_runs
from splitaudit.audit.passes.pass_one import BucketStats
from splitaudit.audit.passes.suspects import DenseSpans, PartitionKey, partition_spans


@dataclass(frozen=True)
class CoverageJudgement:
    """Each partition's coverage, and the missing and not-in-source findings."""

    coverage: tuple[PartitionCoverage, ...]
    findings: tuple[Finding, ...]


def judge_dense(
    stats: dict[BucketKey, BucketStats], spans: DenseSpans, exact: dict[BucketKey, BucketOffsets]
) -> CoverageJudgement:
    """Coverage and missing findings against dense offsets first..last of each partition, from pass 2's `exact`
    counts of the suspects (`suspects.dense_suspects`)."""
    distinct = {key: exact[key].sink_offsets if key in exact else bucket.rows for key, bucket in stats.items()}
    buckets_of: dict[PartitionKey, list[int]] = {}
    for key in sorted(stats):
        buckets_of.setdefault(key[:2], []).append(key[2])
    coverage, findings = [], []
    for part, (first, last) in sorted(spans.partitions.items()):
        keys = [(*part, bucket) for bucket in buckets_of[part]]
        held = sum(distinct[key] for key in keys)
        rows = sum(stats[key].rows for key in keys)
        partition_coverage = PartitionCoverage(*part, rows, held, first, last, (last - first + 1) - held)
        coverage.append(partition_coverage)
        if partition_coverage.missing:
            runs = _dense_missing_runs(keys, spans, exact)
            detail = (
                f"the sink holds offsets {first}..{last} of this partition but {partition_coverage.missing} of them "
                "are absent"
            )
            findings.append(_finding(MISSING, ERROR, part, partition_coverage.missing, runs, detail))
    return CoverageJudgement(tuple(coverage), tuple(findings))


def _dense_missing_runs(
    keys: list[BucketKey], spans: DenseSpans, exact: dict[BucketKey, BucketOffsets]
) -> Iterator[OffsetRuns]:
    """The missing runs of one partition, bucket by bucket in offset order: the offsets of buckets absent from
    the sink, and those pass 2 found absent from suspect buckets' spans."""
    cursor = spans.buckets[keys[0]][0]
    for key in keys:
        start, end = spans.buckets[key]
        if start > cursor:  # whole buckets without a single sink row
            yield OffsetRuns(start - cursor, ((cursor, start - 1),), False)
        cursor = end + 1
        if key in exact:
            yield exact[key].missing


def judge_source(
    stats: dict[BucketKey, BucketStats],
    source_stats: dict[BucketKey, BucketStats],
    suspects: set[BucketKey],
    exact: dict[BucketKey, BucketOffsets],
) -> CoverageJudgement:
    """Coverage, missing and not-in-source findings against the source's own offsets, from pass 2's `exact`
    counts of the `suspects` (`suspects.source_suspects`) on both sides."""
    distinct = {
        key: exact.get(key, NO_OFFSETS).sink_offsets if key in suspects else bucket.rows
        for key, bucket in stats.items()
    }
    keys_of: dict[PartitionKey, list[BucketKey]] = {}
    for key in sorted(stats.keys() | source_stats.keys()):
        keys_of.setdefault(key[:2], []).append(key)
    sink_spans, source_spans = partition_spans(stats.values()), partition_spans(source_stats.values())
    coverage, findings = [], []
    for part, keys in keys_of.items():
        suspect = [(key, exact.get(key, NO_OFFSETS)) for key in keys if key in suspects]
        missing = sum(s.union_offsets - s.sink_offsets for _, s in suspect)
        unexpected = sum(s.union_offsets - s.source_offsets for _, s in suspect)
        first, last = sink_spans.get(part) or source_spans[part]
        rows = sum(stats[key].rows for key in keys if key in stats)
        held = sum(distinct.get(key, 0) for key in keys)
        coverage.append(PartitionCoverage(*part, rows, held, first, last, missing))
        if missing:
            source_first, source_last = source_spans[part]
            known = sum(s.source_offsets for _, s in suspect) + sum(
                source_stats[key].rows for key in keys if key not in suspects
            )
            runs = (s.missing for _, s in suspect)
            detail = (
                f"{missing} of the {known} offsets the source holds in {source_first}..{source_last} are absent "
                "from the sink"
            )
            findings.append(_finding(MISSING, ERROR, part, missing, runs, detail))
        if unexpected:
            runs = (s.unexpected for _, s in suspect)
            detail = (
                f"the sink holds {unexpected} offsets that the source does not: outside what the source was read "
                "over, deleted since they were read (retention, compaction), or not this topic's records"
            )
            findings.append(_finding(NOT_IN_SOURCE, WARNING, part, unexpected, runs, detail))
    return CoverageJudgement(tuple(coverage), tuple(findings))


def _finding(
    kind: str, severity: str, part: PartitionKey, count: int, runs: Iterable[OffsetRuns], detail: str
) -> Finding:
    """A finding with the first MAX_RANGES of the buckets' runs, joined where one continues across a bucket edge."""
    ranges, truncated = joined_runs(runs)
    return Finding(kind, severity, part[0], part[1], count, ranges, truncated, detail=detail)
