"""Pass 2's per-bucket tally: exact counts, runs and classes of one bucket's offsets, fed batch by batch."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pytest

from splitaudit.audit.checks.findings import DOUBLE_ASSIGNMENT, DUPLICATE, MAX_RANGES, REPLAY
from splitaudit.audit.passes.bitmaps import BUCKET_SIZE
from splitaudit.audit.passes.bucket_offsets import (
    RUNS_PER_BUCKET,
    BucketTally,
    DuplicatedOffsets,
    OffsetRuns,
    joined_runs,
)

BASE = 3 * BUCKET_SIZE  # bucket 3's first offset


def _offsets(*ranges: Iterable[int]) -> pa.Array:
    return pa.array([BASE + o for r in ranges for o in r], pa.int64())


def test_a_dense_bucket_names_its_missing_and_duplicated_offsets_across_batches() -> None:
    tally = BucketTally(3, ())
    tally.add_sink(_offsets(range(0, 100)))  # first batch: 0..99
    tally.add_sink(_offsets(range(90, 95), range(200, 300)))  # 90..94 again; 100..199 never
    result = tally.result((BASE, BASE + 299))
    assert (result.sink_offsets, result.source_offsets, result.union_offsets) == (200, 0, 200)
    assert result.missing == OffsetRuns(100, ((BASE + 100, BASE + 199),), False)
    assert result.unexpected == OffsetRuns(0, (), False)
    assert result.duplicated == (DuplicatedOffsets(DUPLICATE, 5, OffsetRuns(5, ((BASE + 90, BASE + 94),), False)),)


def test_against_the_source_its_holes_are_not_missing_and_offsets_beyond_it_are_unexpected() -> None:
    tally = BucketTally(3, ())
    tally.add_source(_offsets(range(0, 50), range(51, 100)))  # 50 is a transaction marker
    tally.add_sink(_offsets(range(10, 100), range(120, 122)))
    result = tally.result(None)
    assert (result.sink_offsets, result.source_offsets, result.union_offsets) == (92, 99, 102)
    assert result.missing == OffsetRuns(10, ((BASE, BASE + 9),), False)
    assert result.unexpected == OffsetRuns(3, ((BASE + 50, BASE + 50), (BASE + 120, BASE + 121)), False)
    assert result.duplicated == ()


def _lineage(rows: list[tuple[str | None, int | None, str | None]]) -> pa.Table:
    job, attempt, reader = zip(*rows, strict=True)
    return pa.table({"job_id": list(job), "attempt": pa.array(attempt, pa.int32()), "reader_id": list(reader)})


def test_duplicates_are_classified_by_readers_within_a_generation_and_by_generations() -> None:
    tally = BucketTally(3, ("job_id", "attempt"))
    # offset 0: two readers of job b, attempt 0 (double assignment), and job a too
    # offset 1: job a and job b, one reader each (replay); offset 2: one reader twice (duplicate)
    # offset 3: two generations whose readers are null (replay: null readers are not counted, generations are)
    # offset 4: once
    rows = [
        (0, "a", 0, "a0"),
        (0, "b", 0, "b0"),
        (0, "b", 0, "b0-twin"),
        (1, "a", 0, "a0"),
        (1, "b", 0, "b0"),
        (2, "b", 0, "b0"),
        (2, "b", 0, "b0"),
        (3, None, 0, None),
        (3, "b", None, None),
        (4, "b", 0, "b0"),
    ]
    half = len(rows) // 2
    for batch in (rows[:half], rows[half:]):
        tally.add_sink(_offsets([o for o, *_ in batch]), _lineage([(j, a, r) for _, j, a, r in batch]))
    assert tally.result((BASE, BASE + 4)).duplicated == (
        DuplicatedOffsets(DOUBLE_ASSIGNMENT, 2, OffsetRuns(1, ((BASE, BASE),), False)),
        DuplicatedOffsets(DUPLICATE, 1, OffsetRuns(1, ((BASE + 2, BASE + 2),), False)),
        DuplicatedOffsets(REPLAY, 2, OffsetRuns(2, ((BASE + 1, BASE + 1), (BASE + 3, BASE + 3)), False)),
    )


def test_a_bucket_reports_its_first_runs_only() -> None:
    tally = BucketTally(3, ())
    tally.add_sink(_offsets(range(0, 2 * (RUNS_PER_BUCKET + 5), 2)))  # every other offset: a run of one missing each
    missing = tally.result((BASE, BASE + 2 * (RUNS_PER_BUCKET + 5) - 1)).missing
    assert (missing.count, len(missing.runs), missing.capped) == (RUNS_PER_BUCKET + 5, RUNS_PER_BUCKET, True)
    assert missing.runs[0] == (BASE + 1, BASE + 1)


def test_offsets_of_another_bucket_are_refused() -> None:
    with pytest.raises(ValueError, match="outside bucket 3"):
        BucketTally(3, ()).add_sink(pa.array([BASE - 1], pa.int64()))


def test_runs_are_joined_across_bucket_edges_and_truncated_past_max_ranges() -> None:
    edge = 4 * BUCKET_SIZE
    joined = joined_runs(
        [OffsetRuns(3, ((10, 10), (edge - 2, edge - 1)), False), OffsetRuns(5, ((edge, edge + 4),), False)]
    )
    assert joined == (((10, 10), (edge - 2, edge + 4)), False)
    many = OffsetRuns(MAX_RANGES + 1, tuple((2 * i, 2 * i) for i in range(MAX_RANGES + 1)), False)
    ranges, truncated = joined_runs([many])
    assert (len(ranges), truncated) == (MAX_RANGES, True)
    assert joined_runs([OffsetRuns(9, ((1, 1),), True)]) == (((1, 1),), True)


def test_runs_are_counted_and_classified_as_their_rows_would_be() -> None:
    tally = BucketTally(3, ("attempt",))
    first = np.array([BASE, BASE + 50, BASE + 120], dtype=np.int64)
    last = np.array([BASE + 99, BASE + 149, BASE + 129], dtype=np.int64)
    # reader a reads 0..99; its twin b 50..149 in the same attempt; a reads 120..129 again in attempt 1
    lineage = pa.table({"attempt": pa.array([0, 0, 1], pa.int32()), "reader_id": ["a", "b", "a"]})
    tally.add_sink_runs(first, last, lineage)
    result = tally.result((BASE, BASE + 199))
    assert (result.sink_offsets, result.missing) == (150, OffsetRuns(50, ((BASE + 150, BASE + 199),), False))
    assert result.duplicated == (
        DuplicatedOffsets(DOUBLE_ASSIGNMENT, 50, OffsetRuns(50, ((BASE + 50, BASE + 99),), False)),
        DuplicatedOffsets(REPLAY, 10, OffsetRuns(10, ((BASE + 120, BASE + 129),), False)),
    )
