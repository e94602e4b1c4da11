"""Classifying the sink's duplicated offsets by who emitted them: double assignment, replay, or unexplained.

A sink row's lineage columns say who emitted it: `reader_id` (one source reader instance), `attempt` (Flink's
attempt number of the reader's subtask: 0 in a new job, one more after each failover) and `job_id`. A
generation is one run of the job's readers: (job_id, attempt) when the sink has `job_id`, else `attempt` alone.
A job restored from a savepoint is a new Flink job, whose attempts start again at 0: only `job_id` tells its
generation from that of the job it was restored from. Per duplicated (topic, partition, offset):

- two or more distinct readers within one generation: DOUBLE_ASSIGNMENT, the partition was assigned twice (an
  error), whether or not other generations emitted the offset too;
- else more than one generation, one reader in each: REPLAY, read again after a restore or failover from a
  position before it (a warning; an error when the sink must be exactly once);
- else (one reader emitted it twice, or the sink has no lineage): DUPLICATE, an error.

The classes need no order between generations: an offset emitted in two of them is replayed whichever came
first. None is assumed either: Flink job ids are random and a sink row carries no time.

Pass 2 classifies each suspect bucket's duplicated offsets by these rules (`bucket_offsets`); here they become
one finding per (topic, partition, kind): the count of extra rows, the first MAX_RANGES runs of offsets, and
SAMPLE_ROWS rows of the first run's first offset, read in one bounded query: nothing else row-level.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import groupby

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F

from splitaudit.audit.checks.findings import (
    BY_LINEAGE,
    DOUBLE_ASSIGNMENT,
    ERROR,
    MAX_RANGES,
    REPLAY,
    WARNING,
    Finding,
)
from splitaudit.audit.passes.bitmaps import BUCKET_BITS, BucketKey
from splitaudit.audit.passes.bucket_offsets import BucketOffsets, joined_runs
from splitaudit.audit.passes.filters import FILE_COLUMN, FileKey, any_of, file_filter

# Lineage columns a sink may carry besides its coordinates, with the Spark types a Kafka sink's JSON is read as:
# the reference pipeline's sink columns (beam_pipelines/java/README.md).
LINEAGE_COLUMNS = {"reader_id": "string", "attempt": "int", "subtask": "int", "job_id": "string"}
SAMPLE_ROWS = 5

OffsetKey = tuple[str, int, int]  # (topic, partition, offset)


@dataclass(frozen=True)
class Lineage:
    """What the sink's columns can tell about its duplicates: nothing, or readers within generations."""

    generation: tuple[str, ...]  # the columns that name a generation; () when duplicates cannot be classified

    @classmethod
    def of(cls, columns: Iterable[str]) -> Lineage:
        """The lineage of a sink with these columns: classified when it has reader_id and attempt."""
        present = set(columns)
        if not {"reader_id", "attempt"} <= present:
            return cls(())
        return cls(("job_id", "attempt") if "job_id" in present else ("attempt",))

    @property
    def classified(self) -> bool:
        return bool(self.generation)

    @property
    def by_job(self) -> bool:
        """True when generations are told apart by job as well as attempt."""
        return "job_id" in self.generation

    @property
    def generation_name(self) -> str:
        return ", ".join(self.generation).join("()") if self.by_job else "attempt"

    @property
    def note(self) -> str:
        """How this sink's duplicates were classified, for the audit's notes."""
        if not self.classified:
            return "the sink has no reader_id/attempt columns: duplicates are not classified"
        if self.by_job:
            return (
                "duplicates are classified by generation, one per (job_id, attempt): two readers of an offset in "
                "one generation are double assignment, one reader in each of several generations is replay"
            )
        return (
            "the sink has no job_id column: duplicates are classified by attempt alone, and a job restored from a "
            "savepoint starts again at attempt 0, so offsets it reads again that the job before it read after "
            "the savepoint count as double assignment, not replay"
        )


@dataclass(frozen=True)
class DuplicateRuns:
    """The duplicated offsets of one class in one (topic, partition): the rows beyond the first of each offset,
    and the first MAX_RANGES runs of consecutive offsets (truncated: there are more)."""

    kind: str
    topic: str
    partition: int
    extra_rows: int
    ranges: tuple[tuple[int, int], ...]
    truncated: bool

    @property
    def first_offset(self) -> OffsetKey:
        return self.topic, self.partition, self.ranges[0][0]


def classify_duplicates(
    sink: DataFrame,
    exact: dict[BucketKey, BucketOffsets],
    *,
    lineage: Lineage,
    exactly_once: bool,
    files: Callable[[Iterable[BucketKey]], set[FileKey] | None] | None = None,
) -> list[Finding]:
    """One finding per (topic, partition, class) of the duplicated offsets pass 2 found in the suspect buckets
    (`exact`), in topic, partition, kind order. `sink` is the sink, or any frame holding at least the rows of
    the suspects (`suspects.suspect_rows`): the sample rows are read from it, from only the files that hold
    their buckets when `files` (`PassOne.files_holding`) names them."""
    pieces = sorted(
        (
            ((*key[:2], duplicated.kind, key[2]), duplicated)
            for key, bucket in exact.items()
            for duplicated in bucket.duplicated
        ),
        key=lambda piece: piece[0],
    )
    runs = []
    for (topic, partition, kind), group in groupby(pieces, key=lambda piece: piece[0][:3]):
        found = [duplicated for _, duplicated in group]  # in bucket order
        ranges, truncated = joined_runs(d.offsets for d in found)
        runs.append(DuplicateRuns(kind, topic, partition, sum(d.extra_rows for d in found), ranges, truncated))
    keys = [r.first_offset for r in runs]
    holding = None if files is None or not keys else files({(t, p, o >> BUCKET_BITS) for t, p, o in keys})
    samples = _samples(sink if holding is None else sink.filter(file_filter(holding)), keys)
    return [_finding(r, samples.get(r.first_offset, ()), lineage, exactly_once) for r in runs]


def runs_per_kind(duplicated: DataFrame) -> list[DuplicateRuns]:
    """Per (topic, partition, kind) of a frame of (topic, partition, offset, extra_rows, kind): the extra rows and
    the runs of consecutive offsets, collected (a few rows). Any per-offset class gives its runs this way."""
    # consecutive offsets of one kind share offset - rank: the run they belong to
    run: Column = F.col("offset") - F.row_number().over(
        Window.partitionBy("topic", "partition", "kind").orderBy("offset")
    )
    collected = (
        duplicated.withColumn("run", run)
        .groupBy("topic", "partition", "kind", "run")
        .agg(F.min("offset").alias("first"), F.max("offset").alias("last"), F.sum("extra_rows").alias("extra_rows"))
        .groupBy("topic", "partition", "kind")
        .agg(
            F.sum("extra_rows").alias("extra_rows"),
            F.count(F.lit(1)).alias("runs"),
            F.slice(F.array_sort(F.collect_list(F.struct("first", "last"))), 1, MAX_RANGES).alias("ranges"),
        )
        .collect()
    )
    runs = [_duplicate_runs(row) for row in collected]
    return sorted(runs, key=lambda r: (r.topic, r.partition, r.kind))  # a few rows: no Spark sort (a job)


def _duplicate_runs(row: Row) -> DuplicateRuns:
    return DuplicateRuns(
        row["kind"],
        row["topic"],
        row["partition"],
        int(row["extra_rows"]),
        tuple((int(r["first"]), int(r["last"])) for r in row["ranges"]),
        row["runs"] > MAX_RANGES,
    )


def _finding(
    runs: DuplicateRuns, sample: tuple[dict[str, object], ...], lineage: Lineage, exactly_once: bool
) -> Finding:
    severity = WARNING if runs.kind == REPLAY and not exactly_once else ERROR
    return Finding(
        runs.kind,
        severity,
        runs.topic,
        runs.partition,
        runs.extra_rows,
        runs.ranges,
        runs.truncated,
        sample,
        _detail(runs.kind, lineage),
        BY_LINEAGE if lineage.classified else None,
    )


def _detail(kind: str, lineage: Lineage) -> str:
    """What a class of duplicates means, and how this sink's generations were told apart."""
    if kind == DOUBLE_ASSIGNMENT:
        caveat = "" if lineage.by_job else " (or replayed by a job restored from a savepoint: no job_id column)"
        return (
            f"emitted by two or more readers within one generation, one {lineage.generation_name}: the partition "
            f"was assigned twice{caveat}"
        )
    if kind == REPLAY:
        return (
            f"emitted in more than one generation ({lineage.generation_name}), by one reader in each: read again "
            "after a restore or failover (expected with an at-least-once sink)"
        )
    if lineage.classified:
        return "emitted more than once by one reader within one generation"
    return "emitted more than once (no reader_id/attempt columns to tell double assignment from replay)"


def _samples(sink: DataFrame, keys: list[OffsetKey]) -> dict[OffsetKey, tuple[dict[str, object], ...]]:
    """Up to SAMPLE_ROWS sink rows for each (topic, partition, offset), in one bounded query."""
    if not keys:
        return {}
    exact = [
        (F.col("topic") == F.lit(t)) & (F.col("partition") == F.lit(p)) & (F.col("offset") == F.lit(o))
        for t, p, o in keys
    ]
    columns = [c for c in sink.columns if c != FILE_COLUMN]  # the sink's own columns
    rank = F.row_number().over(Window.partitionBy("topic", "partition", "offset").orderBy(*columns))
    chosen = sink.filter(any_of(exact)).select(*columns).withColumn("_rank", rank).filter(F.col("_rank") <= SAMPLE_ROWS)
    samples: dict[OffsetKey, list[dict[str, object]]] = {}
    for row in chosen.drop("_rank").collect():
        samples.setdefault((row["topic"], row["partition"], row["offset"]), []).append(row.asDict())
    return {key: tuple(value) for key, value in samples.items()}
