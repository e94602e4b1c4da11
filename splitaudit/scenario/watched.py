"""The restore scenario under the guard: `splitaudit guard` before the restore, `splitaudit watch` after it.

The first half is the restore scenario's (N records, the job, savepoint and cancel, N more records: the restored
backlog). `run_guarded_restore` (`scenario --guard`) then asks the guard about restoring that savepoint with the
jar and stops there when it is unsafe, unless forced; `run_watched_restore` restores it with the same jar. The
watch starts before the restore is submitted, with the job id the submission fixes and the savepoint's offsets
already read, so it polls the job from the moment Flink lists it and acts as asked. The result says when the
watch saw each stage of the restored job, when it found what, what it did, and, from the sink, how many of the
restored job's records were read twice by then.

`run_watched_life` lets the watch follow the restored job through its whole life while only reporting: the job
reads its backlog until its sink stops growing (with `fault`, the TaskManager is then killed, Flink restarts the
job from its latest checkpoint, and it settles again), the scenario ends it as a user would (stop-with-savepoint
or cancel), and the result holds the watch's report, final tally included, beside the sink's truth.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from splitaudit.clients.flink import RUN_TIMEOUT, TERMINAL_STATES
from splitaudit.errors import UsageError
from splitaudit.guard.lifecycle import DEFAULT_REST_TIMEOUT
from splitaudit.guard.predict import run_guard
from splitaudit.guard.results import CANCEL, REPORT, STOP
from splitaudit.guard.watch import WatchSettings, run_watch
from splitaudit.progress import Progress
from splitaudit.scenario.restore import ScenarioRun, ScenarioSettings, wait_for_offsets, wait_until_settled
from splitaudit.scenario.results import (
    JOBMANAGER_KILL,
    TASKMANAGER_KILL,
    GuardedRestore,
    WatchedLife,
    WatchedRestore,
)
from splitaudit.scenario.sink import read_sink
from splitaudit.stack.stack import Stack


def run_watched_restore(
    stack: Stack,
    run_dir: Path,
    jar: Path,
    variant: str,
    progress: Progress,
    settings: ScenarioSettings,
    on_error: str = STOP,
    watch_seconds: float | None = None,
    probe: float = 0.0,
    interval: float = 0.25,
) -> WatchedRestore:
    """Savepoint a run of `jar`, restore it with `jar` and watch the restored job (for at most `watch_seconds`,
    polling every `interval` seconds and triggering checkpoints for `probe` seconds after its first read:
    `WatchSettings`)."""
    run = ScenarioRun(stack, run_dir, f"watch-{variant}", settings, progress)
    savepoint = _first_half(run, jar)
    return _restore_and_watch(run, jar, variant, savepoint, on_error, watch_seconds, probe, interval)


def run_guarded_restore(
    stack: Stack,
    run_dir: Path,
    jar: Path,
    variant: str,
    progress: Progress,
    settings: ScenarioSettings,
    force: bool,
    watch_seconds: float = 30.0,
) -> GuardedRestore:
    """On a running `stack`, in `run_dir` (new): the first half, the guard on the savepoint and `jar`, and (when
    safe, or with `force`) the watched restore with stop-with-savepoint, watched for at most `watch_seconds`
    (the restored job is then cancelled)."""
    run = ScenarioRun(stack, run_dir, f"guard-{variant}", settings, progress)
    savepoint = _first_half(run, jar)
    with run.steps.step("guard the restore") as out:
        guard = run_guard(savepoint, jar, stack.kafka.bootstrap, settings.restore_parallelism, progress)
        out.append(guard.line)
    if not guard.safe and not force:
        return GuardedRestore(variant, guard, force, None)
    restore = _restore_and_watch(run, jar, variant, savepoint, STOP, watch_seconds)
    return GuardedRestore(variant, guard, force, restore)


def _first_half(run: ScenarioRun, jar: Path) -> str:
    """The first job, savepoint and cancel, then N more records; the savepoint's location."""
    _, savepoint = run.first_job(jar)
    run.produce(run.settings.records, what=" more")
    return savepoint


def _restore_and_watch(
    run: ScenarioRun,
    jar: Path,
    variant: str,
    savepoint: str,
    on_error: str = STOP,
    watch_seconds: float | None = None,
    probe: float = 0.0,
    interval: float = 0.25,
) -> WatchedRestore:
    """Start the watch of a job id, restore `savepoint` with `jar` as that job, then count its sink rows."""
    stack = run.stack
    job = uuid.uuid4().hex
    watch = WatchSettings(
        stack.flink.rest_url,
        job,
        stack.kafka.bootstrap,
        on_error,
        interval,
        duration=watch_seconds,
        savepoint_dir=run.savepoints.as_uri(),
        savepoint=savepoint,
        wait=RUN_TIMEOUT,
        probe=probe,
    )
    with ThreadPoolExecutor(1) as pool, run.steps.step(f"watch job {job} from its submission") as out:
        started = time.monotonic()
        watching = pool.submit(run_watch, watch, Progress(), lambda _event: None)
        submitted = time.monotonic() - started
        try:
            run.submit_restore(jar, savepoint, job)
        finally:
            report = watching.result()
        out.append(report.line)
    if report.job_state not in TERMINAL_STATES:
        run.flink.cancel(job)
    sink = read_sink(run.sink)
    mine = sink.filter(pc.equal(sink["job_id"], job))
    offsets = mine.group_by(["partition", "offset"]).aggregate([]).num_rows
    return WatchedRestore(variant, run.settings.records, round(submitted, 3), report, mine.num_rows, offsets)


def run_watched_life(
    stack: Stack,
    run_dir: Path,
    jar: Path,
    variant: str,
    progress: Progress,
    settings: ScenarioSettings,
    end: str,
    fault: str | None = None,
    flink_rest: str | None = None,
    before_end: Callable[[], None] | None = None,
    rest_timeout: float = DEFAULT_REST_TIMEOUT,
) -> WatchedLife:
    """Savepoint a run of `jar`, restore it as a job the watch (`--on-error report`, through `flink_rest`, by
    default the stack's) follows from its submission; wait until every offset is in the sink and a checkpoint
    adds no rows; with `fault`, kill the TaskManager then and start a new one (Flink restarts the job from its
    latest checkpoint: a new attempt), and wait so again; run `before_end` (e.g. a fault between the watch and
    Flink); `IDLE_BEFORE_END` seconds later end the job (`end`: stop with a savepoint, cancel, or kill -9 the
    JobManager: a standalone cluster without high availability loses its jobs, and the watch can only find it
    gone) and let the watch end with it. After a JobManager or TaskManager kill the cluster is started again."""
    if end not in LIFE_ENDS or fault not in (None, TASKMANAGER_KILL):
        raise UsageError(f"a watched life ends by {', '.join(LIFE_ENDS)}, after no fault or {TASKMANAGER_KILL}")
    run = ScenarioRun(stack, run_dir, f"life-{variant}", settings, progress)
    savepoint = _first_half(run, jar)
    job = uuid.uuid4().hex
    watch = WatchSettings(
        flink_rest or stack.flink.rest_url,
        job,
        stack.kafka.bootstrap,
        REPORT,
        savepoint=savepoint,
        wait=RUN_TIMEOUT,
        rest_timeout=rest_timeout,
    )
    with ThreadPoolExecutor(1) as pool, run.steps.step(f"watch job {job} through its life") as out:
        watching = pool.submit(run_watch, watch, Progress(), lambda _event: None)
        try:
            run.submit_restore(jar, savepoint, job)
            run.flink.wait_all_running(job)
            _settle(run, job)
            if fault is not None:
                _kill_taskmanager(run, job)
                _settle(run, job)
            # The job idle past the watch's quiet window, as a job is ended a while after its backlog: the counts
            # the watch last sees are final ones.
            time.sleep(IDLE_BEFORE_END)
            if before_end is not None:
                before_end()
            with run.steps.step(LIFE_ENDS[end]) as ending:
                if end == STOP:
                    run.flink.wait_for_savepoint(job, run.flink.stop_with_savepoint(job, run.savepoint_target))
                elif end == CANCEL:
                    run.flink.cancel(job)
                else:
                    ending.append(f"killed JobManager pid {stack.flink.kill('jobmanager')}")
        finally:
            if end != JOBMANAGER_KILL and run.flink.job_state(job) not in TERMINAL_STATES:
                run.flink.cancel(job)
            report = watching.result()
            # A JobManager killed lost its jobs; after a TaskManager killed, the JobManager served none of its
            # replacement's metrics for minutes (seen on a shared stack: the next watch saw its job's reads ~9 min
            # late). Either way the cluster is started again as new for whatever runs on the stack next.
            if end == JOBMANAGER_KILL or fault == TASKMANAGER_KILL:
                with run.steps.step("stop the cluster, start it again"):
                    stack.flink.stop()
                    stack.flink.start()
        out.append(report.line)
    return WatchedLife(variant, end, fault, report, _read_twice_per_partition(read_sink(run.sink), job))


IDLE_BEFORE_END = 3.0  # seconds the settled job runs idle before it is ended

# How `run_watched_life` ends the restored job, and its step's name.
LIFE_ENDS = {
    STOP: "stop the job with a savepoint",
    CANCEL: "cancel the job",
    JOBMANAGER_KILL: "kill -9 the JobManager (the job is lost with it)",
}


def _settle(run: ScenarioRun, job: str) -> None:
    """Wait until every offset produced is in the sink and a whole checkpoint interval adds no rows."""
    with run.steps.step("wait for every offset in the sink, until a checkpoint adds no rows"):
        wait_for_offsets(run.sink, tuple(run.topics), run.total, run.settings.timeout)
        wait_until_settled(run.flink, job, run.sink_rows, str(run.sink), run.settings.timeout)


def _kill_taskmanager(run: ScenarioRun, job: str) -> None:
    """Kill -9 the TaskManager and start a new one; wait until Flink has restarted the job from its latest
    checkpoint and every vertex runs."""
    cluster = run.stack.flink
    with run.steps.step("kill -9 the TaskManager, start a new one") as out:
        out.append(f"killed TaskManager pid {cluster.kill('taskmanager')}")
        cluster.start_taskmanager()
        run.flink.wait_all_running(job)
        out.append(f"job {job}: {run.flink.job_state(job)}")


def _read_twice_per_partition(sink: pa.Table, job: str) -> dict[int, int]:
    """Per partition, the rows `job` wrote minus its distinct offsets, attempt by attempt, summed."""
    mine = sink.filter(pc.equal(sink["job_id"], job))
    rows = mine.group_by(["partition", "attempt"]).aggregate([([], "count_all")])
    distinct = mine.group_by(["partition", "attempt", "offset"]).aggregate([]).group_by(["partition", "attempt"])
    offsets = distinct.aggregate([([], "count_all")])
    twice: dict[int, int] = {}
    for row in rows.to_pylist():
        twice[row["partition"]] = twice.get(row["partition"], 0) + row["count_all"]
    for row in offsets.to_pylist():
        twice[row["partition"]] -= row["count_all"]
    return dict(sorted(twice.items()))
