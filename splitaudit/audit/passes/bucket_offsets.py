"""Pass 2's per-bucket work: one suspect bucket's offsets worked out from runs of consecutive offsets, with numpy.

A sink's rows come in runs: a Kafka partition's records reach a file in offset order, and a twin reader or a
replay re-reads a contiguous range, so however many rows a bucket (32,768 offsets, `bitmaps`) holds, a few runs
(first..last, each one row of every offset between, with the reader and generation that emitted it) say
everything pass 2 needs: how many distinct offsets the sink holds, which the expectation (the dense span of the
partition, or the source's own offsets) lacks or adds, and which the sink holds more than once. With the sink's
lineage columns, each duplicated offset is classified as `duplicates` defines (two readers within a generation,
one reader in each of several, or neither). The runs' ends cut the bucket into segments whose offsets are
alike, and everything is counted per segment: the cost follows the runs, not the rows or the offsets, so a
bucket read twice end to end costs what a clean one does. What leaves the bucket is counts and runs of offsets
(the first RUNS_PER_BUCKET of each kind): never a row.

The runs come from pass 1 (`parquet_pass`, which cuts every file into runs anyway) or from the suspects' rows
(`pass_two`, run-length coded batch by batch in the Python workers before anything is shuffled); a row is a run
of one, so any order of rows gives the same result.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from splitaudit.audit.checks.findings import DOUBLE_ASSIGNMENT, DUPLICATE, MAX_RANGES, REPLAY
from splitaudit.audit.passes.bitmaps import BUCKET_SIZE, OffsetSpan
from splitaudit.audit.passes.row_runs import codes, key_codes

Int64s = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
RUNS_PER_BUCKET = MAX_RANGES + 1  # runs a bucket reports of each kind: one more than a finding lists
KIND_ORDER = (DOUBLE_ASSIGNMENT, DUPLICATE, REPLAY)  # the classes' order in a bucket's result (by name)


@dataclass(frozen=True)
class OffsetRuns:
    """Some offsets of one bucket: how many, and their first RUNS_PER_BUCKET runs (`capped`: there are more)."""

    count: int
    runs: tuple[OffsetSpan, ...]
    capped: bool


NO_RUNS = OffsetRuns(0, (), False)


def joined_runs(buckets: Iterable[OffsetRuns]) -> tuple[tuple[OffsetSpan, ...], bool]:
    """The first MAX_RANGES runs of some buckets' offsets, given in offset order, joined where a run continues
    across a bucket edge; and whether there are more (more runs, or a bucket whose runs were capped)."""
    ranges: list[OffsetSpan] = []
    for bucket in buckets:
        for first, last in bucket.runs:
            if ranges and first == ranges[-1][1] + 1:
                ranges[-1] = (ranges[-1][0], last)
            else:
                ranges.append((first, last))
        if bucket.capped or len(ranges) > MAX_RANGES:
            return tuple(ranges[:MAX_RANGES]), True
    return tuple(ranges), False


@dataclass(frozen=True)
class DuplicatedOffsets:
    """The offsets of one bucket duplicated in one class: the rows beyond the first of each, and their runs."""

    kind: str
    extra_rows: int
    offsets: OffsetRuns


@dataclass(frozen=True)
class BucketOffsets:
    """One suspect bucket after pass 2: the distinct offsets the sink holds, the source holds and either holds;
    the expected offsets the sink lacks (`missing`) and the sink's offsets the source lacks (`unexpected`, only
    against a source); the duplicated offsets by class, in KIND_ORDER."""

    sink_offsets: int
    source_offsets: int
    union_offsets: int
    missing: OffsetRuns
    unexpected: OffsetRuns
    duplicated: tuple[DuplicatedOffsets, ...]


NO_OFFSETS = BucketOffsets(0, 0, 0, NO_RUNS, NO_RUNS, ())  # a suspect bucket no side holds a row of


class BucketTally:
    """The runs of one bucket's rows, fed piece by piece; `result` gives its BucketOffsets.

    A run first..last stands for one row of each of its offsets (a row is a run of one): a bucket costs its
    runs, not its rows. `generation` names the sink's lineage columns that make a generation
    (`duplicates.Lineage`), () when the sink has none: its duplicates are then all DUPLICATE.
    """

    def __init__(self, bucket: int, generation: tuple[str, ...]) -> None:
        self.bucket = bucket
        self.generation = generation
        self.sink: list[tuple[Int64s, Int64s]] = []
        self.source: list[tuple[Int64s, Int64s]] = []
        self.lineage: list[pa.Table] = []  # per sink run: its generation columns and reader_id

    def add_sink(self, offsets: pa.Array | pa.ChunkedArray, lineage: pa.Table | None = None) -> None:
        """Sink rows of this bucket: their offsets, and (when classified) their generation and reader_id."""
        values = self._within(offsets)
        self.add_sink_runs(values, values, lineage)

    def add_sink_runs(self, first: Int64s, last: Int64s, lineage: pa.Table | None = None) -> None:
        """Sink runs of this bucket: each one row of every offset first..last, and (when classified) each run's
        generation and reader_id."""
        self._check(first, last)
        self.sink.append((first, last))
        if self.generation:
            if lineage is None or len(lineage) != len(first):
                raise ValueError("a classified bucket's sink runs need their lineage, one row per run")
            self.lineage.append(lineage.select([*self.generation, "reader_id"]))

    def add_source(self, offsets: pa.Array | pa.ChunkedArray) -> None:
        """Source offsets of this bucket (each once: a source holds an offset once)."""
        values = self._within(offsets)
        self.add_source_runs(values, values)

    def add_source_runs(self, first: Int64s, last: Int64s) -> None:
        """Source runs of this bucket (each offset once)."""
        self._check(first, last)
        self.source.append((first, last))

    def _within(self, offsets: pa.Array | pa.ChunkedArray) -> Int64s:
        values = np.asarray(offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        self._check(values, values)
        return values

    def _check(self, first: Int64s, last: Int64s) -> None:
        base = self.bucket * BUCKET_SIZE
        if len(first) and (first.min() < base or last.max() >= base + BUCKET_SIZE or bool(np.any(last < first))):
            raise ValueError(f"offsets outside bucket {self.bucket} given to its tally")

    def result(self, expected: OffsetSpan | None) -> BucketOffsets:
        """The bucket's offsets against `expected`, the span of offsets it should hold (dense: its partition's
        first..last within it), or None: exactly the source's offsets.

        The runs' ends cut the bucket into segments whose offsets are alike (the same runs hold each): every
        count and class is worked out per segment, so the cost follows the runs, not the offsets."""
        base = self.bucket * BUCKET_SIZE
        sink_first, sink_last = _joined(self.sink)
        source_first, source_last = _joined(self.source)
        edges = [sink_first, sink_last + 1, source_first, source_last + 1, np.array([base, base + BUCKET_SIZE])]
        if expected is not None:
            edges.append(np.array([expected[0], expected[1] + 1]))
        segments = Segments(np.unique(np.concatenate(edges)))
        rows = segments.cover(sink_first, sink_last)
        source = segments.cover(source_first, source_last) > 0
        held = rows > 0
        if expected is None:
            wanted, unexpected = source, segments.runs(held & ~source)
        else:
            wanted, unexpected = (segments.start >= expected[0]) & (segments.start <= expected[1]), NO_RUNS
        return BucketOffsets(
            segments.count(held),
            segments.count(source),
            segments.count(held | source),
            segments.runs(wanted & ~held),
            unexpected,
            self._duplicated(segments, rows),
        )

    def _duplicated(self, segments: Segments, rows: Int64s) -> tuple[DuplicatedOffsets, ...]:
        """The duplicated offsets by class (`duplicates`' rules), in KIND_ORDER; none of a class, no entry."""
        duplicated = rows > 1
        if not duplicated.any():
            return ()
        kinds = {DUPLICATE: duplicated}
        if self.generation:
            kinds = self._classified(segments, duplicated)
        extra = np.maximum(rows - 1, 0) * segments.length
        return tuple(
            DuplicatedOffsets(kind, int(extra[kinds[kind]].sum()), segments.runs(kinds[kind]))
            for kind in KIND_ORDER
            if kind in kinds and kinds[kind].any()
        )

    def _classified(self, segments: Segments, duplicated: Bools) -> dict[str, Bools]:
        """Per class, which duplicated segments it holds: two or more readers of an offset within one
        generation is DOUBLE_ASSIGNMENT; else more than one generation is REPLAY; else DUPLICATE. Readers are
        distinct non-null reader ids; a null generation column is a generation of its own (Spark's groupBy)."""
        first, last = _joined(self.sink)
        generation, reader = _lineage_codes(pa.concat_tables(self.lineage), self.generation)
        most_readers = np.zeros(len(segments), dtype=np.int64)
        generations = np.zeros(len(segments), dtype=np.int64)
        for code in np.unique(generation).tolist():
            mine = generation == code
            readers = np.zeros(len(segments), dtype=np.int64)
            for one in np.unique(reader[mine & (reader >= 0)]).tolist():
                its = mine & (reader == one)
                readers += segments.cover(first[its], last[its]) > 0
            most_readers = np.maximum(most_readers, readers)
            generations += segments.cover(first[mine], last[mine]) > 0
        double = duplicated & (most_readers > 1)
        replay = duplicated & ~double & (generations > 1)
        return {DOUBLE_ASSIGNMENT: double, REPLAY: replay, DUPLICATE: duplicated & ~double & ~replay}


class Segments:
    """A bucket cut at the ends of its runs (`edges`: sorted, distinct, the bucket's own ends among them): segment
    i is offsets edges[i]..edges[i + 1] - 1, within which every offset is held by the same runs."""

    def __init__(self, edges: Int64s) -> None:
        self.edges = edges
        self.start = edges[:-1]
        self.length = np.diff(edges)

    def __len__(self) -> int:
        return len(self.start)

    def cover(self, first: Int64s, last: Int64s) -> Int64s:
        """How many of these runs hold each segment's offsets."""
        size = len(self.edges)
        opened = np.bincount(np.searchsorted(self.edges, first), minlength=size)
        closed = np.bincount(np.searchsorted(self.edges, last + 1), minlength=size)
        return np.cumsum(opened - closed)[:-1]

    def count(self, chosen: Bools) -> int:
        """How many offsets the chosen segments hold."""
        return int(self.length[chosen].sum())

    def runs(self, chosen: Bools) -> OffsetRuns:
        """The chosen segments' offsets as runs: their count and first RUNS_PER_BUCKET runs."""
        starts, ends = self.start[chosen], self.start[chosen] + self.length[chosen] - 1
        if len(starts) == 0:
            return NO_RUNS
        joins = np.flatnonzero(starts[1:] != ends[:-1] + 1)
        firsts = np.concatenate((starts[:1], starts[joins + 1]))
        lasts = np.concatenate((ends[joins], ends[-1:]))
        runs = tuple((int(a), int(b)) for a, b in zip(firsts[:RUNS_PER_BUCKET], lasts[:RUNS_PER_BUCKET], strict=True))
        return OffsetRuns(self.count(chosen), runs, len(firsts) > RUNS_PER_BUCKET)


def _joined(runs: list[tuple[Int64s, Int64s]]) -> tuple[Int64s, Int64s]:
    if not runs:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    return np.concatenate([first for first, _ in runs]), np.concatenate([last for _, last in runs])


def _lineage_codes(lineage: pa.Table, generation: tuple[str, ...]) -> tuple[Int64s, Int64s]:
    """Per run, a number for its generation (a null column value is a value of its own) and for its reader
    (-1: a null reader_id, which is no reader)."""
    generations = key_codes([lineage.column(name) for name in generation])
    code = np.zeros(len(lineage), dtype=np.int64) if generations is None else generations.astype(np.int64)
    reader, _ = codes(lineage.column("reader_id"))
    nulls = lineage.column("reader_id").is_null().to_numpy(zero_copy_only=False)
    return code, np.where(nulls, -1, reader)
