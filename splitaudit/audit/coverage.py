"""What the sink covers of each partition, judged bucket by bucket from the two bucket passes (`buckets`).

A bucket is clean when pass 1's rows and fingerprint equal those of the offsets it should hold: without the
source, the dense span first..last of its partition (`judge_dense`; the expected fingerprint costs two hashes
on the driver); with the source, the source's own bucket (`judge_source`). Only the other buckets, the suspects,
are read again by pass 2, which counts their distinct, missing and unexpected offsets exactly and, for at most
MAX_BITMAP_BUCKETS of them, fetches the bitmaps that name those offsets as ranges. The judgement gives each
partition's coverage, the missing and not-in-source findings, and every bucket's distinct offsets, from which
the buckets holding duplicates follow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from pyspark.sql import DataFrame

from splitaudit.audit import bitmaps, buckets, fingerprint
from splitaudit.audit.bitmaps import BUCKET_SIZE, BucketKey
from splitaudit.audit.buckets import BucketStats, SuspectBucket
from splitaudit.audit.findings import ERROR, MAX_RANGES, MISSING, NOT_IN_SOURCE, WARNING, Finding, PartitionCoverage

MAX_BITMAP_BUCKETS = 4096  # suspect buckets whose bitmaps are fetched (16 MiB a side); beyond, counts only

PartitionKey = tuple[str, int]  # (topic, partition)
OffsetSpan = tuple[int, int]  # first and last offset, inclusive
Runs = list[OffsetSpan] | None  # one bucket's runs of offsets; None where its bitmaps were not fetched
NO_OFFSETS = SuspectBucket(0, 0, 0)  # a suspect bucket that a second read of a shifting source no longer holds


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


@dataclass(frozen=True)
class DenseSpans:
    """Each partition's first..last sink offset, and the part of that span each bucket covers: what a bucket
    holds when its partition's offsets are dense."""

    partitions: dict[PartitionKey, OffsetSpan]
    buckets: dict[BucketKey, OffsetSpan]

    @classmethod
    def of(cls, stats: dict[BucketKey, BucketStats]) -> DenseSpans:
        partitions = _partition_spans(stats.values())
        return cls(partitions, {key: _bucket_span(key[2], partitions[key[:2]]) for key in stats})

    def offsets(self, key: BucketKey) -> int:
        """How many offsets the bucket's span holds."""
        first, last = self.buckets[key]
        return last - first + 1


def overfull_buckets(stats: dict[BucketKey, BucketStats], spans: DenseSpans) -> list[BucketKey]:
    """Buckets holding more rows than their dense span has offsets: they hold duplicates, whatever pass 2
    finds, so their duplicates can be classified while pass 2 runs. In key order."""
    return sorted(key for key, bucket in stats.items() if bucket.rows > spans.offsets(key))


def dense_suspects(stats: dict[BucketKey, BucketStats], spans: DenseSpans) -> set[BucketKey]:
    """The buckets whose pass-1 rows and fingerprint are not those of their dense span: pass 2 reads them."""
    return {
        key
        for key, bucket in stats.items()
        if (bucket.rows, bucket.fingerprint) != (spans.offsets(key), fingerprint.range_fingerprint(*spans.buckets[key]))
    }


def source_suspects(stats: dict[BucketKey, BucketStats], source_stats: dict[BucketKey, BucketStats]) -> set[BucketKey]:
    """The buckets that only one side holds, or whose pass-1 rows and fingerprint differ between the sides."""
    return {
        key
        for key in stats.keys() | source_stats.keys()
        if key not in stats or key not in source_stats or _pass_one(stats[key]) != _pass_one(source_stats[key])
    }


def judge_dense(
    sink: DataFrame, stats: dict[BucketKey, BucketStats], spans: DenseSpans, suspects: set[BucketKey]
) -> CoverageJudgement:
    """Coverage and missing findings against dense offsets first..last of each partition, from the `suspects`
    (`dense_suspects`) read again in `sink`: the sink, or any frame holding at least those buckets' rows."""
    exact = _read_suspects(sink, suspects, None, set(), lambda key, s: s.sink_offsets < spans.offsets(key))
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
    sink: DataFrame,
    stats: dict[BucketKey, BucketStats],
    source: DataFrame,
    source_stats: dict[BucketKey, BucketStats],
    suspects: set[BucketKey],
) -> CoverageJudgement:
    """Coverage, missing and not-in-source findings against the source's own offsets, from the `suspects`
    (`source_suspects`) read again in `sink` (the sink, or any frame holding at least those buckets' sink rows)
    and in the source."""
    exact = _read_suspects(
        sink,
        suspects & stats.keys(),
        source,
        suspects & source_stats.keys(),
        lambda _, s: s.union_offsets > min(s.sink_offsets, s.source_offsets),
    )
    distinct = {
        key: exact.get(key, NO_OFFSETS).sink_offsets if key in suspects else bucket.rows
        for key, bucket in stats.items()
    }
    keys_of: dict[PartitionKey, list[BucketKey]] = {}
    for key in sorted(stats.keys() | source_stats.keys()):
        keys_of.setdefault(key[:2], []).append(key)
    sink_spans, source_spans = _partition_spans(stats.values()), _partition_spans(source_stats.values())
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


def _pass_one(bucket: BucketStats) -> tuple[int, tuple[int, int]]:
    """What pass 1 knows of a bucket's offsets: its rows and their fingerprint."""
    return bucket.rows, bucket.fingerprint


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


def _read_suspects(
    sink: DataFrame,
    sink_keys: set[BucketKey],
    source: DataFrame | None,
    source_keys: set[BucketKey],
    needs_bitmaps: Callable[[BucketKey, SuspectBucket], bool],
) -> dict[BucketKey, SuspectBucket]:
    """Pass 2 on the suspect buckets: exact counts of all, and bitmaps of those that `needs_bitmaps` (of at most
    MAX_BITMAP_BUCKETS of them: the driver holds at most that many bitmaps of each side)."""
    if len(sink_keys | source_keys) <= MAX_BITMAP_BUCKETS:
        return buckets.exact_buckets(sink, sink_keys, source, source_keys, with_bitmaps=True)
    exact = buckets.exact_buckets(sink, sink_keys, source, source_keys, with_bitmaps=False)
    chosen = set(sorted(key for key, bucket in exact.items() if needs_bitmaps(key, bucket))[:MAX_BITMAP_BUCKETS])
    if chosen:
        exact |= buckets.exact_buckets(sink, sink_keys & chosen, source, source_keys & chosen, with_bitmaps=True)
    return exact


def _partition_spans(stats: Iterable[BucketStats]) -> dict[PartitionKey, OffsetSpan]:
    """First and last offset of every (topic, partition)."""
    spans: dict[PartitionKey, OffsetSpan] = {}
    for bucket in stats:
        first, last = spans.get((bucket.topic, bucket.partition), (bucket.first_offset, bucket.last_offset))
        spans[(bucket.topic, bucket.partition)] = (min(first, bucket.first_offset), max(last, bucket.last_offset))
    return spans


def _bucket_span(bucket: int, partition_span: OffsetSpan) -> OffsetSpan:
    """The offsets of `bucket` that lie within the partition's first..last offset."""
    start = max(partition_span[0], bucket * BUCKET_SIZE)
    return start, min(partition_span[1], (bucket + 1) * BUCKET_SIZE - 1)
