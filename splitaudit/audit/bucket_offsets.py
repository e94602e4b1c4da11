"""Pass 2's per-bucket work: one suspect bucket's rows counted offset by offset, with numpy, in a Python worker.

A bucket holds at most 32,768 offsets (`bitmaps`), so whatever its rows, one array of counts per side says
everything pass 2 needs: how many distinct offsets the sink holds, which the expectation (the dense span of the
partition, or the source's own offsets) lacks or adds, and which the sink holds more than once. With the sink's
lineage columns, each duplicated offset is classified as `duplicates` defines (two readers within a generation,
one reader in each of several, or neither), from the distinct (offset, generation, reader) the rows hold. What
leaves the bucket is counts and runs of offsets (the first RUNS_PER_BUCKET of each kind): never a row.

`BucketTally` takes the bucket's rows batch by batch (Arrow record batches as Spark hands them over), so a bucket
costs its counts and its distinct lineage triples, not its rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from splitaudit.audit.bitmaps import BUCKET_SIZE, OffsetSpan, offset_runs, span_bits
from splitaudit.audit.findings import DOUBLE_ASSIGNMENT, DUPLICATE, MAX_RANGES, REPLAY

RUNS_PER_BUCKET = MAX_RANGES + 1  # runs a bucket reports of each kind: one more than a finding lists
KIND_ORDER = (DOUBLE_ASSIGNMENT, DUPLICATE, REPLAY)  # the classes' order in a bucket's result (by name)


@dataclass(frozen=True)
class OffsetRuns:
    """Some offsets of one bucket: how many, and their first RUNS_PER_BUCKET runs (`capped`: there are more)."""

    count: int
    runs: tuple[OffsetSpan, ...]
    capped: bool

    @classmethod
    def of(cls, bucket: int, bits: npt.NDArray[np.bool_]) -> OffsetRuns:
        runs = offset_runs(bucket, bits)
        return cls(int(np.count_nonzero(bits)), tuple(runs[:RUNS_PER_BUCKET]), len(runs) > RUNS_PER_BUCKET)


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
    """The running counts of one bucket's rows, fed batch by batch; `result` gives its BucketOffsets.

    `generation` names the sink's lineage columns that make a generation (`duplicates.Lineage`), () when the
    sink has none: its duplicates are then all DUPLICATE.
    """

    def __init__(self, bucket: int, generation: tuple[str, ...]) -> None:
        self.bucket = bucket
        self.generation = generation
        self.sink = np.zeros(BUCKET_SIZE, dtype=np.int64)
        self.source = np.zeros(BUCKET_SIZE, dtype=np.bool_)
        self.lineage: list[pa.Table] = []  # distinct (position, generation..., reader_id) of each batch

    def add_sink(self, offsets: pa.Array | pa.ChunkedArray, lineage: pa.Table | None = None) -> None:
        """Sink rows of this bucket: their offsets, and (when classified) their generation and reader_id."""
        positions = self._positions(offsets)
        self.sink += np.bincount(positions, minlength=BUCKET_SIZE)
        if self.generation and lineage is not None:
            keys = ["position", *self.generation, "reader_id"]
            triples = lineage.select([*self.generation, "reader_id"]).add_column(0, "position", pa.array(positions))
            self.lineage.append(triples.group_by(keys).aggregate([]))

    def add_source(self, offsets: pa.Array | pa.ChunkedArray) -> None:
        """Source offsets of this bucket (each once: a source holds an offset once)."""
        self.source[self._positions(offsets)] = True

    def _positions(self, offsets: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.int64]:
        values = np.asarray(offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        positions = values - self.bucket * BUCKET_SIZE
        if len(positions) and (positions.min() < 0 or positions.max() >= BUCKET_SIZE):
            raise ValueError(f"offsets outside bucket {self.bucket} given to its tally")
        return positions

    def result(self, expected: OffsetSpan | None) -> BucketOffsets:
        """The bucket's offsets against `expected`, the span of offsets it should hold (dense: its partition's
        first..last within it), or None: exactly the source's offsets."""
        held = self.sink > 0
        if expected is None:
            wanted, unexpected = self.source, OffsetRuns.of(self.bucket, held & ~self.source)
        else:
            wanted, unexpected = span_bits(self.bucket, *expected), NO_RUNS
        return BucketOffsets(
            int(np.count_nonzero(held)),
            int(np.count_nonzero(self.source)),
            int(np.count_nonzero(held | self.source)),
            OffsetRuns.of(self.bucket, wanted & ~held),
            unexpected,
            self._duplicated(),
        )

    def _duplicated(self) -> tuple[DuplicatedOffsets, ...]:
        """The duplicated offsets by class (`duplicates`' rules), in KIND_ORDER; none of a class, no entry."""
        extra = np.maximum(self.sink - 1, 0)
        duplicated = extra > 0
        if not duplicated.any():
            return ()
        kinds = {DUPLICATE: duplicated}
        if self.generation:
            kinds = self._classified(duplicated)
        return tuple(
            DuplicatedOffsets(kind, int(extra[kinds[kind]].sum()), OffsetRuns.of(self.bucket, kinds[kind]))
            for kind in KIND_ORDER
            if kind in kinds and kinds[kind].any()
        )

    def _classified(self, duplicated: npt.NDArray[np.bool_]) -> dict[str, npt.NDArray[np.bool_]]:
        """Per class, which duplicated positions it holds: two or more readers of an offset within one
        generation is DOUBLE_ASSIGNMENT; else more than one generation is REPLAY; else DUPLICATE. Readers are
        distinct non-null reader ids; a null generation column is a generation of its own (Spark's groupBy)."""
        keys = ["position", *self.generation, "reader_id"]
        triples = pa.concat_tables(self.lineage).group_by(keys).aggregate([])
        triples = triples.filter(pc.is_in(triples["position"], pa.array(np.flatnonzero(duplicated))))
        per_generation = triples.group_by(["position", *self.generation]).aggregate([("reader_id", "count")])
        per_offset = per_generation.group_by("position").aggregate([("reader_id_count", "max"), ([], "count_all")])
        positions = per_offset["position"].to_numpy()
        most_readers = np.zeros(BUCKET_SIZE, dtype=np.int64)
        generations = np.zeros(BUCKET_SIZE, dtype=np.int64)
        most_readers[positions] = per_offset["reader_id_count_max"].to_numpy()
        generations[positions] = per_offset["count_all"].to_numpy()
        double = duplicated & (most_readers > 1)
        replay = duplicated & ~double & (generations > 1)
        return {DOUBLE_ASSIGNMENT: double, REPLAY: replay, DUPLICATE: duplicated & ~double & ~replay}
