"""Flink's own `FileSource` (flink-connector-files) restored from a savepoint: `FileLineageJob` of
beam_pipelines/java/flink-jobs on the stack's Flink, reading a folder of text files, judged by `guard` before
the restore and `audit` after it.

One run (`run_file_source_restore`):

1. write F files of L lines each, every line `<file name> <line number, 6 digits>`;
2. run the job (parallelism K, each reader paced) until the sink holds `savepoint_after_rows` rows: the readers
   are mid-file; stop it with a savepoint SP0 (so the sink holds exactly the lines read before it);
3. optionally remove one input file (`remove`: one a reader was reading, or one no reader had started), as the
   sink says, never the savepoint;
4. check SP0's assignment (every file of the folder held once), and `guard` the restore from it (which stats the
   files its splits still have to read, `splitaudit/guard/split_files.py`);
5. restore from SP0 at parallelism K' (unpaced); with every file still there, wait until every line is in the
   sink and checkpoints add no rows, stop with a savepoint SP1 and audit the sink against SP0 and SP1 (a bounded
   job: wait until it finishes, and audit the sink against SP0); with a file removed, wait for the job's end
   (its restart strategy gives up) and keep its root exception;
6. the truth, per file, from the sink's rows (lines, rows, lines read twice, lines missing).

A sink row names its file as Flink's `Path.toString` writes it (`topic`), partition 0 (the split's start byte) and
its line number (`offset`), so the audit reads it as it reads a Kafka sink's, and the savepoint's file splits
describe themselves in the same tables (`splitaudit/splits/flink_file.py`).
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from splitaudit.audit.checks.assignment import AssignmentCheck, PartitionList, check_assignment
from splitaudit.audit.checks.findings import Findings
from splitaudit.audit.checks.savepoint_tables import tables_of
from splitaudit.audit.request import AuditRequest
from splitaudit.errors import ExternalError
from splitaudit.guard.predict import run_guard
from splitaudit.guard.results import GuardReport
from splitaudit.polling import poll
from splitaudit.progress import Progress, StepLog
from splitaudit.savepoint_view import inspect_savepoint
from splitaudit_lab.scenario.flink_kafka import kafka_source_job
from splitaudit_lab.scenario.restore import wait_until_settled
from splitaudit_lab.scenario.sink import count_rows, read_sink
from splitaudit_lab.stack.stack import Stack

FILE_SOURCE_JOB = "dev.splitaudit.flinkjobs.FileLineageJob"  # an entry class of the KafkaSource job's jar
REMOVE_HELD = "held"  # remove a file a reader was reading at the savepoint
REMOVE_PENDING = "pending"  # remove a file no reader had started at the savepoint
TERMINAL = {"FAILED", "FINISHED", "CANCELED"}


@dataclass(frozen=True)
class FileSourceSettings:
    """One run's knobs: the input's shape, the job's parallelism before and after the restore, its folder
    monitoring (milliseconds; 0: bounded), each reader's pace before the savepoint, when to take it, and which
    file to remove before the restore (None, `REMOVE_HELD` or `REMOVE_PENDING`)."""

    files: int = 3
    lines: int = 2000
    parallelism: int = 2
    restore_parallelism: int = 2
    monitor_interval_ms: int = 1000
    lines_per_second: int = 200
    savepoint_after_rows: int = 400
    remove: str | None = None
    timeout: float = 180.0


@dataclass(frozen=True)
class FileTruth:
    """What the sink holds of one input file: its lines, the sink's rows of it (in all, and of the job before the
    restore: the lines read before the savepoint, as it was stopped with it), lines in it more than once, lines
    not in it, and the subtasks of the restored job that emitted its lines (how the restore spread the files)."""

    path: str
    lines: int
    rows: int
    rows_before: int
    read_twice: int
    missing: int
    restored_subtasks: tuple[int, ...]


@dataclass(frozen=True)
class FileSourceRestore:
    """One run of the FileSource job: the assignment check of SP0 (its files listed from the input folder) and
    the guard's verdict on restoring it, the restored job's end
    (its state, and its root exception when it failed), the truth per file, and the audit (None when the restored
    job failed and left no savepoint to audit)."""

    input_paths: tuple[str, ...]  # every input file, as the job's rows name them
    removed: str | None
    savepoint_before: str
    savepoint_after: str | None
    assignment_before: AssignmentCheck
    guard: GuardReport
    restored_state: str
    restored_exception: str
    truth: tuple[FileTruth, ...]
    audit: Findings | None


def flink_path(path: Path) -> str:
    """A local file's path as Flink's `Path.toString` writes a `file:` URI's (`file:/abs/path`)."""
    return "file:" + str(path)


def write_input(folder: Path, files: int, lines: int) -> tuple[Path, ...]:
    """`files` text files of `lines` lines, every line `<file name> <line number, 6 digits>`."""
    folder.mkdir(parents=True)
    written = []
    for index in range(files):
        path = folder / f"part-{index}.txt"
        path.write_text("".join(f"{path.name} {n:06d}\n" for n in range(lines)))
        written.append(path)
    return tuple(written)


def sink_truth(sink: Path, inputs: tuple[Path, ...], lines: int, first_job: str) -> tuple[FileTruth, ...]:
    """Per input file, from the sink's rows: rows (and those `first_job` emitted), lines read more than once,
    lines never read, and the subtasks of any later job that emitted some."""
    rows = read_sink(sink).select(["topic", "offset", "job_id", "subtask"]).to_pylist()
    counts = Counter((r["topic"], r["offset"]) for r in rows)
    truth = []
    for path in inputs:
        name = flink_path(path)
        seen = [counts.get((name, line), 0) for line in range(lines)]
        before = sum(1 for r in rows if r["topic"] == name and r["job_id"] == first_job)
        after = tuple(sorted({r["subtask"] for r in rows if r["topic"] == name and r["job_id"] != first_job}))
        truth.append(FileTruth(name, lines, sum(seen), before, sum(1 for n in seen if n > 1), seen.count(0), after))
    return tuple(truth)


def run_file_source_restore(
    stack: Stack, run_dir: Path, progress: Progress, settings: FileSourceSettings
) -> FileSourceRestore:
    """Run the FileSource job through a savepoint and a restore on a running `stack`; everything it writes goes
    under `run_dir`."""
    steps = StepLog(progress)
    flink = stack.flink.client()
    sink, savepoints = run_dir / "sink", run_dir / "savepoints"
    savepoints.mkdir(parents=True)
    with steps.step(f"write {settings.files} files of {settings.lines} lines"):
        inputs = write_input(run_dir / "input", settings.files, settings.lines)
    paths = tuple(flink_path(p) for p in inputs)
    base = [
        f"--inputDir={run_dir / 'input'}",
        f"--sinkDir={sink}",
        f"--monitorIntervalMs={settings.monitor_interval_ms}",
    ]
    jar = flink.upload_jar(kafka_source_job())
    with steps.step(f"run the FileSource job (parallelism {settings.parallelism})") as out:
        job = flink.run_jar(
            jar,
            program_args=[
                *base,
                f"--parallelism={settings.parallelism}",
                f"--linesPerSecond={settings.lines_per_second}",
            ],
            entry_class=FILE_SOURCE_JOB,
            job_id=uuid.uuid4().hex,
        )
        flink.wait_all_running(job)
        out.append(f"job {job}")
    with steps.step(f"wait for {settings.savepoint_after_rows} rows in the sink, stop with a savepoint") as out:
        poll(
            f"{settings.savepoint_after_rows} rows in {sink}",
            lambda: count_rows(sink) >= settings.savepoint_after_rows,
            timeout=settings.timeout,
            interval=0.2,
        )
        # Stopped with the savepoint: no checkpoint after it adds rows to the sink, so the sink holds exactly the
        # lines read before the savepoint's barrier.
        savepoint_before = flink.wait_for_savepoint(job, flink.stop_with_savepoint(job, savepoints.as_uri()))
        flink.wait_for_state(job, TERMINAL)
        out.append(savepoint_before)
    removed = _remove(sink, inputs, settings, job) if settings.remove else None
    with steps.step("check the savepoint's assignment (the folder's files listed)") as out:
        listed = PartitionList(frozenset((path, 0) for path in paths), "the input folder")
        assignment_before = check_assignment(tables_of(inspect_savepoint(savepoint_before)), listed)
        out.append(f"{len(assignment_before.findings)} findings")
    with steps.step(f"guard a restore of {savepoint_before} at parallelism {settings.restore_parallelism}") as out:
        guard = run_guard(savepoint_before, kafka_source_job(), None, settings.restore_parallelism, progress)
        out.append(guard.line)
    with steps.step(f"restore from the savepoint (parallelism {settings.restore_parallelism})") as out:
        args = [*base, f"--parallelism={settings.restore_parallelism}"]
        if removed is None and settings.monitor_interval_ms > 0:
            # runs until stopped: proven through REST to have restored from SP0 once all its vertices run
            restored, _ = flink.restore(jar, savepoint_before, program_args=args, entry_class=FILE_SOURCE_JOB)
        else:  # may finish, or fail on the removed file, before all its vertices are seen running: submitted only
            restored = flink.run_jar(
                jar, program_args=args, entry_class=FILE_SOURCE_JOB, savepoint_path=savepoint_before
            )
        out.append(f"job {restored}")
    if removed is not None:
        with steps.step("wait for the restored job to end") as out:
            state = flink.wait_for_state(restored, TERMINAL, timeout=settings.timeout)
            exception = flink.job_exceptions(restored)
            out.append(state)
        truth = sink_truth(sink, inputs, settings.lines, job)
        return FileSourceRestore(
            paths, removed, savepoint_before, None, assignment_before, guard, state, exception, truth, None
        )
    total = settings.files * settings.lines
    savepoint_after: str | None = None
    if settings.monitor_interval_ms <= 0:
        with steps.step("wait for the bounded job to finish") as out:
            state = flink.wait_for_state(restored, TERMINAL, timeout=settings.timeout)
            out.append(state)
    else:
        with steps.step("wait for every line in the sink, until checkpoints add no rows") as out:
            poll(f"{total} rows in {sink}", lambda: count_rows(sink) >= total, timeout=settings.timeout, interval=0.5)
            checkpoint = wait_until_settled(flink, restored, lambda: count_rows(sink), str(sink), settings.timeout)
            out.append(f"checkpoint {checkpoint}")
            state = flink.job_state(restored)
        with steps.step("stop with a savepoint") as out:
            savepoint_after = flink.wait_for_savepoint(
                restored, flink.stop_with_savepoint(restored, savepoints.as_uri())
            )
            flink.wait_for_state(restored, TERMINAL)
            out.append(savepoint_after)
    truth = sink_truth(sink, inputs, settings.lines, job)
    request = AuditRequest(
        sink=str(sink),
        sink_format="json",
        # a bounded job ends with no savepoint: the sink is judged against the one it restored from
        savepoint=savepoint_after or savepoint_before,
        before=savepoint_before if savepoint_after else None,
        topics=paths,
        partitions=tuple((path, 1) for path in paths),
    )
    from splitaudit.audit.run import run_audit  # imports pyspark: not when the CLI merely starts

    with steps.step("audit the sink and the savepoints on Spark") as out:
        audit = run_audit(request, progress)
        out.append(f"{len(audit.findings)} findings")
    return FileSourceRestore(
        paths, None, savepoint_before, savepoint_after, assignment_before, guard, state, "", truth, audit
    )


def _remove(sink: Path, inputs: tuple[Path, ...], settings: FileSourceSettings, job: str) -> str:
    """Remove the first input file the sink shows partly read (`REMOVE_HELD`) or not read at all
    (`REMOVE_PENDING`); its path as the rows name it."""
    truth = sink_truth(sink, inputs, settings.lines, job)
    for path, file in zip(inputs, truth, strict=True):
        partly = 0 < file.rows < file.lines
        if (settings.remove == REMOVE_HELD and partly) or (settings.remove == REMOVE_PENDING and file.rows == 0):
            path.unlink()
            return file.path
    raise ExternalError(f"no input file fits remove={settings.remove} at the savepoint: {truth}")
