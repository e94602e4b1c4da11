"""Result of the users'-job scenario (`splitaudit users-job-scenario`), rendered by an Output: the truth per
partition, found by matching each output record back to its input record by the record's own identity."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from splitaudit.audit.checks.findings import offset_range
from splitaudit.progress import TimedStep

if TYPE_CHECKING:
    from splitaudit.guard.results import GuardReport, WatchReport

# How the job's Kafka consumer starts (the pipeline's --consumer): no group.id (Kafka's auto.offset.reset=latest),
# a group with offsets committed on checkpoint finalization (earliest), or no group with earliest. Here, beside the
# results, so the command line names them without importing the scenario's Kafka and pyarrow code.
CONSUMERS = ("none", "group", "earliest")

# What happens to the consumer group's committed offsets between the savepoint and the restore (with the `group`
# consumer, whose stock twin starts at them): left as the job committed them, the group deleted (the twin starts
# at auto.offset.reset=earliest, the log start), or set per partition to the middle of a window that closed before
# the savepoint (the twin re-reads that window only in part).
GROUP_OFFSETS = ("committed", "deleted", "mid-window")

OffsetRange = tuple[int, int]  # first and last offset, both included
Window = tuple[int, int]  # a fixed window of event time: start (included) and end (excluded), epoch milliseconds


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


def _count(runs: tuple[OffsetRange, ...]) -> int:
    return sum(last - first + 1 for first, last in runs)


def window_text(window: Window) -> str:
    """A window for people, as Beam writes it into file names: "2025-06-01T00:00:02.000Z-2025-06-01T00:00:04.000Z"."""

    def iso(millis: int) -> str:
        return datetime.fromtimestamp(millis / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"

    return f"{iso(window[0])}-{iso(window[1])}"


@dataclass(frozen=True)
class OutputTruth:
    """What one output (the output topic, or the Parquet files) holds of one input partition, each output record
    matched to the input offset whose record carries the same identity."""

    rows: int  # output records matched to this partition
    produced_offsets: int  # offsets produced to the partition (the same for every output of it)
    read_twice: tuple[OffsetRange, ...]  # offsets in the output exactly twice
    read_more: tuple[OffsetRange, ...]  # offsets in the output three times or more
    missing: tuple[OffsetRange, ...]  # produced offsets not in the output
    # File sinks only (always empty for the output topic, which gets every record the job reads, with no dedupe):
    # offsets read twice (twice in the output topic) but in the sink once, their second copy having replaced the
    # file of the first; and offsets the sink held after the first job that it lacks at the end (a file replaced
    # by one with fewer rows).
    masked_duplicates: tuple[OffsetRange, ...] = ()
    lost_by_rewrite: tuple[OffsetRange, ...] = ()

    @property
    def extra_rows(self) -> int:
        """Rows beyond one per offset: what a consumer of the output sees as duplicates."""
        return self.rows - (self.produced_offsets - self.missing_count)

    @property
    def read_twice_count(self) -> int:
        return _count(self.read_twice)

    @property
    def missing_count(self) -> int:
        return _count(self.missing)

    @property
    def masked_count(self) -> int:
        return _count(self.masked_duplicates)

    @property
    def lost_count(self) -> int:
        return _count(self.lost_by_rewrite)

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "extra_rows": self.extra_rows,
            "read_twice": self.read_twice_count,
            "read_twice_ranges": _runs_json(self.read_twice),
            "read_more_ranges": _runs_json(self.read_more),
            "missing": self.missing_count,
            "missing_ranges": _runs_json(self.missing),
            "masked_duplicates": self.masked_count,
            "masked_duplicates_ranges": _runs_json(self.masked_duplicates),
            "lost_by_rewrite": self.lost_count,
            "lost_by_rewrite_ranges": _runs_json(self.lost_by_rewrite),
        }


@dataclass(frozen=True)
class ReplacedFile:
    """A finalized file of a file sink that the restored job wrote again under the same name (another inode or
    modification time, or other rows than the first job left), and the window its rows' records fall in (by their
    log-append times; None for a file without rows)."""

    name: str
    window: Window | None
    rows_before: int  # after the first job was cancelled
    rows_after: int  # at the end

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "window": None if self.window is None else list(self.window),
            "window_text": None if self.window is None else window_text(self.window),
            "rows_before": self.rows_before,
            "rows_after": self.rows_after,
        }


@dataclass(frozen=True)
class TempFile:
    """A file left in a Beam temporary folder (`.temp-beam*`) of a file sink: written, never finalized."""

    path: str  # relative to the sink's directory
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size}


@dataclass(frozen=True)
class FileSinkTruth:
    """One file sink's files, compared between the end of the first job and the end of the run."""

    name: str  # "text" (TextIO JSON lines) or "parquet" (FileIO + ParquetIO)
    directory: str
    files_before: int  # finalized files after the first job was cancelled
    files_after: int  # finalized files at the end
    replaced: tuple[ReplacedFile, ...]  # by name
    temp_files: tuple[TempFile, ...]  # unfinalized, at the end

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "directory": self.directory,
            "files_before": self.files_before,
            "files_after": self.files_after,
            "replaced": [f.to_json() for f in self.replaced],
            "temp_files": [f.to_json() for f in self.temp_files],
        }


@dataclass(frozen=True)
class MidWindowOffset:
    """Where `mid-window` set a partition's committed offset before the restore: half-way through its offsets in a
    window that closed before the savepoint."""

    partition: int
    offset: int  # the committed offset set (the next offset the group reads)
    window: Window
    window_offsets: OffsetRange  # the partition's offsets in the window

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "offset": self.offset,
            "window": list(self.window),
            "window_text": window_text(self.window),
            "window_offsets": list(self.window_offsets),
        }


@dataclass(frozen=True)
class PartitionTruth:
    """One input partition: the offsets produced in each phase and what each output holds of them."""

    partition: int
    before: OffsetRange | None  # produced before the savepoint (the first job read them)
    down: OffsetRange | None  # produced while the job was down (the backlog of the restore)
    after: OffsetRange | None  # produced after the restored job ran
    topic: OutputTruth  # the output topic
    text: OutputTruth  # the TextIO JSON lines files
    parquet: OutputTruth  # the Parquet files

    def to_json(self) -> dict[str, Any]:
        def phase(run: OffsetRange | None) -> list[int] | None:
            return None if run is None else list(run)

        return {
            "partition": self.partition,
            "produced": {"before": phase(self.before), "down": phase(self.down), "after": phase(self.after)},
            "output_topic": self.topic.to_json(),
            "text": self.text.to_json(),
            "parquet": self.parquet.to_json(),
        }


@dataclass(frozen=True)
class UsersJobReport:
    """One run of the users' job (beam_pipelines/java/users-job) through a savepoint restore, with the truth per
    partition: the test oracle, independent of splitaudit's audit."""

    variant: str  # "stock" | "patched"
    consumer: str  # one of CONSUMERS
    group_offsets: str  # one of GROUP_OFFSETS
    lineage: bool  # the Parquet rows carry the lineage kit's columns
    window_seconds: int  # the length of the file sinks' fixed windows
    jar: str
    run_dir: str
    input_topic: str
    output_topic: str
    text_dir: str
    parquet_dir: str
    job_id_before: str
    job_id_after: str
    savepoint_before: str
    savepoint_after: str
    records: tuple[int, int, int]  # produced per partition before the savepoint, while down, after the restore
    partitions: tuple[PartitionTruth, ...]
    unmatched_rows: tuple[int, int, int]  # output records (topic, text, Parquet) whose identity no input carries
    windows_before: tuple[Window, ...]  # the windows of the records produced before the savepoint
    mid_window: tuple[MidWindowOffset, ...]  # where `mid-window` set the group's offsets (else none)
    file_sinks: tuple[FileSinkTruth, FileSinkTruth]  # text, Parquet
    steps: tuple[TimedStep, ...]
    guard: GuardReport  # `splitaudit guard` on the savepoint and the jar, judged just before the restore
    watch: WatchReport | None = None  # `splitaudit watch --on-error report` of the restored job, when asked

    @property
    def clean(self) -> bool:
        """Every produced offset exactly once in every output, nothing else in them, no file replaced."""
        return (
            self.unmatched_rows == (0, 0, 0)
            and all(
                out.rows == out.produced_offsets and not out.missing and not out.read_twice and not out.read_more
                for p in self.partitions
                for out in (p.topic, p.text, p.parquet)
            )
            and not any(sink.replaced for sink in self.file_sinks)
        )

    def to_json(self) -> dict[str, Any]:
        before, down, after = self.records
        return {
            "variant": self.variant,
            "consumer": self.consumer,
            "group_offsets": self.group_offsets,
            "lineage": self.lineage,
            "window_seconds": self.window_seconds,
            "jar": self.jar,
            "run_dir": self.run_dir,
            "input_topic": self.input_topic,
            "output_topic": self.output_topic,
            "text_dir": self.text_dir,
            "parquet_dir": self.parquet_dir,
            "job_id_before": self.job_id_before,
            "job_id_after": self.job_id_after,
            "savepoint_before": self.savepoint_before,
            "savepoint_after": self.savepoint_after,
            "records_per_partition": {"before": before, "down": down, "after": after},
            "clean": self.clean,
            "unmatched_rows": dict(zip(("output_topic", "text", "parquet"), self.unmatched_rows, strict=True)),
            "windows_before": [list(w) for w in self.windows_before],
            "mid_window": [m.to_json() for m in self.mid_window],
            "file_sinks": [sink.to_json() for sink in self.file_sinks],
            "partitions": [p.to_json() for p in self.partitions],
            "steps": [s.to_json() for s in self.steps],
            "guard": self.guard.to_json(),
            "watch": None if self.watch is None else self.watch.to_json(),
        }
