"""The judgement: what the sink covers of each partition, from pass 1's sums and pass 2's exact counts of the
suspects, on the driver.

Clean buckets hold their expected offsets once each; a suspect bucket's distinct, missing and unexpected offsets
are pass 2's (`pass_two`), and where its bitmaps were fetched, they name those offsets as ranges. The judgement
gives each partition's coverage, the missing and not-in-source findings, and every bucket's distinct offsets,
from which the buckets holding duplicates follow. `dense_bitmaps_needed` and `source_bitmaps_needed` say which
suspects' bitmaps the judgement names offsets from, for pass 2 to fetch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from splitaudit.audit import bitmaps
from splitaudit.audit.bitmaps import BucketKey
from splitaudit.audit.findings import ERROR, MAX_RANGES, MISSING, NOT_IN_SOURCE, WARNING, Finding, PartitionCoverage
from splitaudit.audit.pass_one import BucketStats
from splitaudit.audit.pass_two import NO_OFFSETS, SuspectBucket
from splitaudit.audit.suspects import DenseSpans, OffsetSpan, PartitionKey, partition_spans

Runs = list[OffsetSpan] | None  # one bucket's runs of offsets; None where its bitmaps were not fetched


@dataclass(frozen=True)
class CoverageJudgement:
    """Each partition's coverage, the missing and not-in-source findings, and the distinct offsets the sink
    holds in every bucket (exact for suspects; for clean buckets their rows, each offset once)."""

    coverage: tuple[PartitionCoverage, ...]
    findings: tuple[Finding, ...]
    distinct_offsets: dict[BucketKey, int]

    def duplicated_buckets(self, stats: dict[BucketKey, BucketStats]) -> list[BucketKey]:
        """The buckets whose rows outnumber their distinct offsets, in key order."""
        return sorted(key for key, bucket in stats.items() if bucket.rows > self.distinct_offsets.get(key, bucket.rows))


def dense_bitmaps_needed(spans: DenseSpans) -> Callable[[BucketKey, SuspectBucket], bool]:
    """Against dense offsets, a suspect's bitmap names its missing offsets: needed where it lacks some."""
    return lambda key, suspect: suspect.sink_offsets < spans.offsets(key)


def source_bitmaps_needed(_: BucketKey, suspect: SuspectBucket) -> bool:
    """Against the source, a suspect's bitmaps name its missing and unexpected offsets: needed where it has any."""
    return suspect.union_offsets > min(suspect.sink_offsets, suspect.source_offsets)


def judge_dense(
    stats: dict[BucketKey, BucketStats], spans: DenseSpans, exact: dict[BucketKey, SuspectBucket]
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
    return CoverageJudgement(tuple(coverage), tuple(findings), distinct)


def _dense_missing_runs(
    keys: list[BucketKey], spans: DenseSpans, exact: dict[BucketKey, SuspectBucket]
) -> Iterator[Runs]:
    """The missing runs of one partition, bucket by bucket in offset order: the offsets of buckets absent from
    the sink, and the unset bits of suspect buckets' spans."""
    cursor = spans.buckets[keys[0]][0]
    for key in keys:
        start, end = spans.buckets[key]
        if start > cursor:
            yield [(cursor, start - 1)]  # whole buckets without a single sink row
        cursor = end + 1
        suspect = exact.get(key)
        if suspect is None or suspect.sink_offsets == end - start + 1:
            continue
        if not suspect.bitmaps_known:
            yield None
            continue
        expected = bitmaps.span_bits(key[2], start, end)
        yield bitmaps.offset_runs(key[2], expected & ~bitmaps.bitmap_bits(suspect.sink_bitmap))


def judge_source(
    stats: dict[BucketKey, BucketStats],
    source_stats: dict[BucketKey, BucketStats],
    suspects: set[BucketKey],
    exact: dict[BucketKey, SuspectBucket],
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
            runs = _bit_runs(suspect, lambda s: s.union_offsets > s.sink_offsets, lambda held, src: src & ~held)
            detail = (
                f"{missing} of the {known} offsets the source holds in {source_first}..{source_last} are absent "
                "from the sink"
            )
            findings.append(_finding(MISSING, ERROR, part, missing, runs, detail))
        if unexpected:
            runs = _bit_runs(suspect, lambda s: s.union_offsets > s.source_offsets, lambda held, src: held & ~src)
            detail = (
                f"the sink holds {unexpected} offsets that the source does not: outside what the source was read "
                "over, deleted since they were read (retention, compaction), or not this topic's records"
            )
            findings.append(_finding(NOT_IN_SOURCE, WARNING, part, unexpected, runs, detail))
    return CoverageJudgement(tuple(coverage), tuple(findings), distinct)


def _bit_runs(
    suspect: list[tuple[BucketKey, SuspectBucket]],
    affected: Callable[[SuspectBucket], bool],
    select: Callable[[npt.NDArray[np.bool_], npt.NDArray[np.bool_]], npt.NDArray[np.bool_]],
) -> Iterator[Runs]:
    """Per affected bucket in offset order, the runs of `select(sink bits, source bits)`."""
    for key, bucket in suspect:
        if affected(bucket):
            if not bucket.bitmaps_known:
                yield None
                continue
            bits = select(bitmaps.bitmap_bits(bucket.sink_bitmap), bitmaps.bitmap_bits(bucket.source_bitmap))
            yield bitmaps.offset_runs(key[2], bits)


def _finding(kind: str, severity: str, part: PartitionKey, count: int, runs: Iterable[Runs], detail: str) -> Finding:
    """A finding with the first MAX_RANGES of the runs (joined where one continues across a bucket edge);
    truncated when there are more, or when a bucket's runs are unknown (beyond MAX_BITMAP_BUCKETS)."""
    ranges: list[OffsetSpan] = []
    truncated = False
    for bucket_runs in runs:
        if bucket_runs is None:
            truncated = True
            continue
        for first, last in bucket_runs:
            if ranges and first == ranges[-1][1] + 1:
                ranges[-1] = (ranges[-1][0], last)
            else:
                ranges.append((first, last))
        if len(ranges) > MAX_RANGES:
            truncated = True
            break
    return Finding(kind, severity, part[0], part[1], count, tuple(ranges[:MAX_RANGES]), truncated, detail=detail)
