"""Result of the users'-job scenario (`splitaudit users-job-scenario`), rendered by an Output: the truth per
partition, found by matching each output record back to its input record by the record's own identity."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from splitaudit.audit.findings import offset_range
from splitaudit.progress import TimedStep

if TYPE_CHECKING:
    from splitaudit.guard.results import GuardReport

# How the job's Kafka consumer starts (the pipeline's --consumer): no group.id (Kafka's auto.offset.reset=latest),
# a group with offsets committed on checkpoint finalization (earliest), or no group with earliest. Here, beside the
# results, so the command line names them without importing the scenario's Kafka and pyarrow code.
CONSUMERS = ("none", "group", "earliest")

OffsetRange = tuple[int, int]  # first and last offset, both included


def offset_runs(offsets: Iterable[int]) -> tuple[OffsetRange, ...]:
    """The runs of consecutive offsets among `offsets`, in order: 0, 1, 2, 5 -> (0, 2), (5, 5)."""
    runs: list[OffsetRange] = []
    for offset in sorted(set(offsets)):
        if runs and runs[-1][1] == offset - 1:
            runs[-1] = (runs[-1][0], offset)
        else:
            runs.append((offset, offset))
    return tuple(runs)


def runs_text(runs: tuple[OffsetRange, ...]) -> str:
    """Offset runs for people: "0..499, 700" (or "-" when there are none)."""
    return ", ".join(offset_range(first, last) for first, last in runs) or "-"


def _runs_json(runs: tuple[OffsetRange, ...]) -> list[list[int]]:
    return [list(run) for run in runs]


@dataclass(frozen=True)
class OutputTruth:
    """What one output (the output topic, or the Parquet files) holds of one input partition, each output record
    matched to the input offset whose record carries the same identity."""

    rows: int  # output records matched to this partition
    produced_offsets: int  # offsets produced to the partition (the same for every output of it)
    read_twice: tuple[OffsetRange, ...]  # offsets in the output exactly twice
    read_more: tuple[OffsetRange, ...]  # offsets in the output three times or more
    missing: tuple[OffsetRange, ...]  # produced offsets not in the output

    @property
    def extra_rows(self) -> int:
        """Rows beyond one per offset: what a consumer of the output sees as duplicates."""
        return self.rows - (self.produced_offsets - self.missing_count)

    @property
    def read_twice_count(self) -> int:
        return sum(last - first + 1 for first, last in self.read_twice)

    @property
    def missing_count(self) -> int:
        return sum(last - first + 1 for first, last in self.missing)

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "extra_rows": self.extra_rows,
            "read_twice": self.read_twice_count,
            "read_twice_ranges": _runs_json(self.read_twice),
            "read_more_ranges": _runs_json(self.read_more),
            "missing": self.missing_count,
            "missing_ranges": _runs_json(self.missing),
        }


@dataclass(frozen=True)
class PartitionTruth:
    """One input partition: the offsets produced in each phase and what each output holds of them."""

    partition: int
    before: OffsetRange | None  # produced before the savepoint (the first job read them)
    down: OffsetRange | None  # produced while the job was down (the backlog of the restore)
    after: OffsetRange | None  # produced after the restored job ran
    topic: OutputTruth  # the output topic
    parquet: OutputTruth  # the Parquet files

    def to_json(self) -> dict[str, Any]:
        def phase(run: OffsetRange | None) -> list[int] | None:
            return None if run is None else list(run)

        return {
            "partition": self.partition,
            "produced": {"before": phase(self.before), "down": phase(self.down), "after": phase(self.after)},
            "output_topic": self.topic.to_json(),
            "parquet": self.parquet.to_json(),
        }


@dataclass(frozen=True)
class UsersJobReport:
    """One run of the users' job (beam_pipelines/java/users-job) through a savepoint restore, with the truth per
    partition: the test oracle, independent of splitaudit's audit."""

    variant: str  # "stock" | "patched"
    consumer: str  # one of CONSUMERS
    lineage: bool  # the Parquet rows carry the lineage kit's columns
    jar: str
    run_dir: str
    input_topic: str
    output_topic: str
    parquet_dir: str
    job_id_before: str
    job_id_after: str
    savepoint_before: str
    savepoint_after: str
    records: tuple[int, int, int]  # produced per partition before the savepoint, while down, after the restore
    partitions: tuple[PartitionTruth, ...]
    unmatched_rows: tuple[int, int]  # output records (topic, Parquet) whose identity no input record carries
    steps: tuple[TimedStep, ...]
    guard: GuardReport  # `splitaudit guard` on the savepoint and the jar, judged just before the restore

    @property
    def clean(self) -> bool:
        """Every produced offset exactly once in both outputs, and nothing else in them."""
        return self.unmatched_rows == (0, 0) and all(
            out.rows == out.produced_offsets and not out.missing and not out.read_twice and not out.read_more
            for p in self.partitions
            for out in (p.topic, p.parquet)
        )

    def to_json(self) -> dict[str, Any]:
        before, down, after = self.records
        return {
            "variant": self.variant,
            "consumer": self.consumer,
            "lineage": self.lineage,
            "jar": self.jar,
            "run_dir": self.run_dir,
            "input_topic": self.input_topic,
            "output_topic": self.output_topic,
            "parquet_dir": self.parquet_dir,
            "job_id_before": self.job_id_before,
            "job_id_after": self.job_id_after,
            "savepoint_before": self.savepoint_before,
            "savepoint_after": self.savepoint_after,
            "records_per_partition": {"before": before, "down": down, "after": after},
            "clean": self.clean,
            "unmatched_rows": {"output_topic": self.unmatched_rows[0], "parquet": self.unmatched_rows[1]},
            "partitions": [p.to_json() for p in self.partitions],
            "steps": [s.to_json() for s in self.steps],
            "guard": self.guard.to_json(),
        }
