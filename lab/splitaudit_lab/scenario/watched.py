"""The restore scenario under the guard: `splitaudit guard` before the restore, `splitaudit watch` after it.

The first half is the restore scenario's (N records, the job, savepoint and cancel, N more records: the restored
backlog). `run_guarded_restore` (`scenario --guard`) then asks the guard about restoring that savepoint with the
jar and stops there when it is unsafe, unless forced; `run_watched_restore` restores it with the same jar. The
watch starts before the restore is submitted, with the job id the submission fixes and the savepoint's offsets
already read, so it polls the job from the moment Flink lists it and acts as asked. The result says when the
watch saw each stage of the restored job, when it found what, what it did, and, from the sink, how many of the
restored job's records were read twice by then.

`run_watched_life` lets the watch follow the restored job through its whole life while only reporting: the job
reads its backlog until its sink stops growing (with `fault`, the TaskManager is then killed, idle or while the
job reads more records, Flink restarts the job from its latest checkpoint, and it settles again), the scenario
ends it as a user would (stop-with-savepoint or cancel) or lets it finish on bounded input, and the result holds
the watch's report, final tally included, beside the sink's truth. `watching_restore` is that watch around a
restore's submission, for other scenarios too (the users' job's).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from splitaudit.clients.flink import RUN_TIMEOUT, TERMINAL_STATES
from splitaudit.errors import ExternalError, UsageError
from splitaudit.guard.lifecycle import DEFAULT_REST_TIMEOUT
from splitaudit.guard.predict import run_guard
from splitaudit.guard.results import CANCEL, REPORT, STOP, WatchReport
from splitaudit.guard.watch import RECORDS_OUT, SOURCE_METRICS, WatchSettings, restored_offsets, run_watch
from splitaudit.polling import poll
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import ScenarioRun, ScenarioSettings, wait_for_offsets, wait_until_settled
from splitaudit_lab.scenario.results import (
    JOBMANAGER_KILL,
    TASKMANAGER_KILL,
    GuardedRestore,
    WatchedLife,
    WatchedRestore,
)
from splitaudit_lab.scenario.sink import read_sink
from splitaudit_lab.stack.stack import Stack


@dataclass(frozen=True)
class WatchedCase:
    """What a watched scenario runs: one variant's job jar on a running stack, in a new run directory, with the
    scenario's settings; its steps reported to `progress`."""

    stack: Stack
    run_dir: Path
    jar: Path
    variant: str
    settings: ScenarioSettings
    progress: Progress = field(default_factory=Progress)

    def run(self, kind: str) -> ScenarioRun:
        """The case's run, its topics named after `kind` (what the scenario does) and the variant."""
        return ScenarioRun(self.stack, self.run_dir, f"{kind}-{self.variant}", self.settings, self.progress)


def run_watched_restore(
    case: WatchedCase,
    on_error: str = STOP,
    watch_seconds: float | None = None,
    probe: float = 0.0,
    interval: float = 0.25,
) -> WatchedRestore:
    """Savepoint a run of the case's jar, restore it with the same jar and watch the restored job (for at most
    `watch_seconds`, polling every `interval` seconds and triggering checkpoints for `probe` seconds after its
    first read: `WatchSettings`)."""
    run = case.run("watch")
    savepoint = first_half(run, case.jar)
    return _restore_and_watch(case, run, savepoint, on_error, watch_seconds, probe, interval)


def run_guarded_restore(case: WatchedCase, force: bool, watch_seconds: float = 30.0) -> GuardedRestore:
    """On the case's running stack, in its run directory (new): the first half, the guard on the savepoint and the
    jar, and (when safe, or with `force`) the watched restore with stop-with-savepoint, watched for at most
    `watch_seconds` (the restored job is then cancelled)."""
    run = case.run("guard")
    savepoint = first_half(run, case.jar)
    with run.steps.step("guard the restore") as out:
        parallelism = case.settings.restore_parallelism
        guard = run_guard(savepoint, case.jar, case.stack.kafka.bootstrap, parallelism, case.progress)
        out.append(guard.line)
    if not guard.safe and not force:
        return GuardedRestore(case.variant, guard, force, None)
    restore = _restore_and_watch(case, run, savepoint, STOP, watch_seconds)
    return GuardedRestore(case.variant, guard, force, restore)


def first_half(run: ScenarioRun, jar: Path) -> str:
    """The first job, savepoint and cancel, then N more records; the savepoint's location."""
    _, savepoint = run.first_job(jar)
    run.produce(run.settings.records, what=" more")
    return savepoint


def _restore_and_watch(
    case: WatchedCase,
    run: ScenarioRun,
    savepoint: str,
    on_error: str = STOP,
    watch_seconds: float | None = None,
    probe: float = 0.0,
    interval: float = 0.25,
) -> WatchedRestore:
    """Start the watch of a job id, restore `savepoint` with the case's jar as that job, then count its sink
    rows."""
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
            run.submit_restore(case.jar, savepoint, job)
        finally:
            report = watching.result()
        out.append(report.line)
    if report.job_state not in TERMINAL_STATES:
        run.flink.cancel(job)
    sink = read_sink(run.sink)
    mine = sink.filter(pc.equal(sink["job_id"], job))
    offsets = mine.group_by(["partition", "offset"]).aggregate([]).num_rows
    return WatchedRestore(case.variant, run.settings.records, round(submitted, 3), report, mine.num_rows, offsets)


@contextmanager
def watching_restore(
    run: ScenarioRun,
    jar: Path,
    savepoint: str,
    flink_rest: str | None = None,
    rest_timeout: float = DEFAULT_REST_TIMEOUT,
) -> Iterator[tuple[str, Future[WatchReport]]]:
    """Start a watch (`--on-error report`, through `flink_rest`, by default the stack's) of a new job id, then
    submit the restore of `savepoint` with `jar` as that job; the job id and the watch's report to come (it ends
    with the job)."""
    stack = run.stack
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
    with ThreadPoolExecutor(1) as pool:
        watching = pool.submit(run_watch, watch, Progress(), lambda _event: None)
        try:
            run.submit_restore(jar, savepoint, job)
            yield job, watching
        except BaseException:
            # The watch follows the job to its end: a run that fails ends the job, or the watch never ends.
            with suppress(ExternalError):
                if run.flink.job_state(job) not in TERMINAL_STATES:
                    run.flink.cancel(job)
            raise


def run_watched_life(
    case: WatchedCase,
    end: str,
    fault: str | None = None,
    flink_rest: str | None = None,
    before_end: Callable[[], None] | None = None,
    rest_timeout: float = DEFAULT_REST_TIMEOUT,
) -> WatchedLife:
    """Savepoint a run of the case's jar, restore it as a job the watch (`--on-error report`, through `flink_rest`, by
    default the stack's) follows from its submission; wait until every offset is in the sink and checkpoints add no
    rows. With `fault`, kill the TaskManager then (`TASKMANAGER_KILL`: its readers idle at the end) or while its
    readers read N more records (`TASKMANAGER_KILL_MID_READ`, with `triggered_checkpoints`: after an idle
    checkpoint, the only one since, the kill once the sink shows some of them read), start a new one (Flink restarts
    the job from its latest checkpoint: a new attempt), and wait so again; run `before_end` (e.g. a fault between
    the watch and Flink); `IDLE_BEFORE_END` seconds later end the job (`end`: stop with a savepoint, cancel, kill -9
    the JobManager: a standalone cluster without high availability loses its jobs, and the watch can only find it
    gone; or `FINISH`, with `finish_when_idle`: wait for the job to finish on its own once its input is drained) and
    let the watch end with it. After a JobManager or TaskManager kill the cluster is started again."""
    if end not in LIFE_ENDS or fault not in (None, *LIFE_FAULTS):
        raise UsageError(f"a watched life ends by {', '.join(LIFE_ENDS)}, after no fault or {', '.join(LIFE_FAULTS)}")
    if (end == FINISH) != bool(case.settings.finish_when_idle):
        raise UsageError(f"a watched life ends by {FINISH} exactly when its job's input is bounded (finish_when_idle)")
    if fault == TASKMANAGER_KILL_MID_READ and not case.settings.triggered_checkpoints:
        raise UsageError(f"{TASKMANAGER_KILL_MID_READ} needs triggered_checkpoints: no checkpoint while it reads")
    run = case.run("life")
    savepoint = first_half(run, case.jar)
    resumed: dict[int, dict[int, int]] = {}
    restore = watching_restore(run, case.jar, savepoint, flink_rest, rest_timeout)
    with run.steps.step("watch the restored job through its life") as out, restore as (job, watching):
        try:
            run.flink.wait_all_running(job)
            settle(run, job)
            if fault is not None:
                restored = run.flink.checkpoints(job).latest_restored
                if fault == TASKMANAGER_KILL_MID_READ:
                    _kill_taskmanager_mid_read(run, job)
                else:
                    _kill_taskmanager(run, job)
                resumed[0] = _resumed_offsets(run, job, restored.id if restored is not None else None)
                settle(run, job)
                _await_served_metrics(run, job)
            # The job idle past the watch's quiet window, as a job is ended a while after its backlog: the counts
            # the watch last sees are final ones.
            time.sleep(IDLE_BEFORE_END)
            if before_end is not None:
                before_end()
            _end(run, job, end)
        finally:
            if end != JOBMANAGER_KILL and run.flink.job_state(job) not in TERMINAL_STATES:
                run.flink.cancel(job)
            report = watching.result()
            # A JobManager killed lost its jobs; after a TaskManager killed, the JobManager served none of its
            # replacement's metrics for minutes (seen on a shared stack: the next watch saw its job's reads ~9 min
            # late). Either way the cluster is started again as new for whatever runs on the stack next.
            if end == JOBMANAGER_KILL or fault in LIFE_FAULTS:
                with run.steps.step("stop the cluster, start it again"):
                    case.stack.flink.stop()
                    case.stack.flink.start()
        out.append(f"job {job}: {report.line}")
    return WatchedLife(case.variant, end, fault, report, _read_twice_per_partition(read_sink(run.sink), job, resumed))


IDLE_BEFORE_END = 3.0  # seconds the settled job runs idle before it is ended
FINISH = "finish"  # the job's input is bounded: it finishes on its own
TASKMANAGER_KILL_MID_READ = "taskmanager-kill-mid-read"

# How `run_watched_life` ends the restored job, and its step's name.
LIFE_ENDS = {
    STOP: "stop the job with a savepoint",
    CANCEL: "cancel the job",
    JOBMANAGER_KILL: "kill -9 the JobManager (the job is lost with it)",
    FINISH: "wait for the job to finish on its own (its readers idle, its input drained)",
}
# The faults `run_watched_life` causes while the restored job runs.
LIFE_FAULTS = (TASKMANAGER_KILL, TASKMANAGER_KILL_MID_READ)


def _end(run: ScenarioRun, job: str, end: str) -> None:
    """End the job as `end` says (one of LIFE_ENDS)."""
    with run.steps.step(LIFE_ENDS[end]) as ending:
        if end == STOP:
            run.flink.wait_for_savepoint(job, run.flink.stop_with_savepoint(job, run.savepoint_target))
            # The savepoint completes before the job is FINISHED: not a job to cancel after.
            run.flink.wait_for_state(job, {"FINISHED"})
        elif end == CANCEL:
            run.flink.cancel(job)
        elif end == FINISH:
            state = poll(
                f"Flink job {job} to finish on its own",
                lambda: run.flink.job_state(job) in TERMINAL_STATES and run.flink.job_state(job),
                timeout=run.settings.timeout,
                interval=0.5,
            )
            ending.append(f"job {job}: {state}")
        else:
            ending.append(f"killed JobManager pid {run.stack.flink.kill('jobmanager')}")


def settle(run: ScenarioRun, job: str) -> None:
    """Wait until every offset produced is in the sink and checkpoints over 3 s add no rows."""
    with run.steps.step("wait for every offset in the sink, until checkpoints add no rows"):
        wait_for_offsets(run.sink, tuple(run.topics), run.total, run.settings.timeout)
        settings = run.settings
        wait_until_settled(
            run.flink, job, run.sink_rows, str(run.sink), settings.timeout, settings.triggered_checkpoints
        )


def _kill_taskmanager(run: ScenarioRun, job: str) -> None:
    """Kill -9 the TaskManager and start a new one; wait until Flink has restarted the job from its latest
    checkpoint and every vertex runs."""
    cluster = run.stack.flink
    with run.steps.step("kill -9 the TaskManager, start a new one") as out:
        out.append(f"killed TaskManager pid {cluster.kill('taskmanager')}")
        cluster.start_taskmanager()
        run.flink.wait_all_running(job)
        out.append(f"job {job}: {run.flink.job_state(job)}")


def _kill_taskmanager_mid_read(run: ScenarioRun, job: str) -> None:
    """Take a checkpoint of the idle job (the only one it takes before the kill), wait, produce N more records and
    kill the TaskManager once the sink shows some of them read: the job restarts from that checkpoint, so its
    readers' counts at it are steady ones, and what they read after it is read again."""
    time.sleep(IDLE_BEFORE_END)  # steady counts, polled before the checkpoint is triggered
    with run.steps.step("a checkpoint of the idle job") as out:
        out.append(f"checkpoint {run.checkpoint(job)}")
    time.sleep(IDLE_BEFORE_END)  # and after it completed
    read_before = run.total
    run.produce(run.settings.records, what=" more")
    with run.steps.step("wait until the sink shows the job reading them"):
        wait_for_offsets(run.sink, tuple(run.topics), read_before + 1, run.settings.timeout)
    _kill_taskmanager(run, job)


def _await_served_metrics(run: ScenarioRun, job: str) -> None:
    """Wait until Flink's REST API serves the restarted attempt's metrics: each source subtask's numRecordsOut is
    the rows the sink holds from that subtask since the restart. The JobManager's metric fetcher starts a fetch
    only once the one before has ended, and one that asks the killed TaskManager waits for `web.timeout` (the
    stack's 60 s): runs saw the new attempt's metrics 15 s after the restart, and one not before the job was
    stopped a minute later (the watch then had no counts of the attempt at all, and said so). A user ends a job
    later than that."""
    sink = read_sink(run.sink)
    mine = sink.filter(pc.and_(pc.equal(sink["job_id"], job), pc.greater(sink["attempt"], 0))).to_pylist()
    emitted = {subtask: sum(1 for row in mine if row["subtask"] == subtask) for subtask in {r["subtask"] for r in mine}}
    vertices = run.flink.job(job).get("vertices", [])
    source = next(v for v in vertices if str(v.get("name", "")).startswith("Source:"))
    served: dict[int, int] = {}

    def current() -> bool:
        for subtask in range(int(source["parallelism"])):
            metrics = run.flink.subtask_metrics(job, source["id"], subtask, SOURCE_METRICS)
            out = [v for name, v in metrics.items() if name.endswith(RECORDS_OUT) and v.isdigit()]
            served[subtask] = int(out[0]) if out else -1
        return all(served.get(subtask) == count for subtask, count in emitted.items())

    with run.steps.step("wait until Flink serves the restarted attempt's metrics") as out:
        poll("the restarted attempt's source metrics", current, timeout=run.settings.timeout, interval=1.0,
             last_seen=lambda: f"numRecordsOut {served}, the sink {emitted}")  # fmt: skip
        out.append(f"numRecordsOut per subtask {served}")


def _resumed_offsets(run: ScenarioRun, job: str, before: int | None) -> dict[int, int]:
    """Per partition of the job's topic, the offset the restarted job resumed from: the checkpoint Flink says it
    restored, once its statistics name another than `before` (what the job restored before the restart), read
    with the pure-Python reader."""

    def restored() -> str | None:
        latest = run.flink.checkpoints(job).latest_restored
        return latest.external_path if latest is not None and latest.id != before else None

    path = poll(f"Flink job {job} to name the checkpoint it restarted from", restored, timeout=run.settings.timeout)
    return {partition: offset for (_, partition), offset in restored_offsets(path).items()}


def _read_twice_per_partition(sink: pa.Table, job: str, resumed: Mapping[int, Mapping[int, int]]) -> dict[int, int]:
    """Per partition, the records `job` read twice as its sink shows them: per attempt, its rows minus its distinct
    offsets, summed. An attempt the job restarted from a checkpoint counts only its rows of offsets below those
    the next attempt resumed from (`resumed`, by attempt): the restart rolled it back to that checkpoint, and the
    next attempt reads the rest again (a replay, not a double read) and counts it."""
    mine = sink.filter(pc.equal(sink["job_id"], job)).select(["partition", "attempt", "offset"]).to_pylist()
    rows: dict[int, int] = {}
    distinct: dict[int, set[tuple[int, int]]] = {}
    for row in mine:
        partition, attempt, offset = row["partition"], row["attempt"], row["offset"]
        until = resumed.get(attempt, {}).get(partition)
        if until is not None and offset >= until:
            continue
        rows[partition] = rows.get(partition, 0) + 1
        distinct.setdefault(partition, set()).add((attempt, offset))
    return {partition: rows[partition] - len(distinct[partition]) for partition in sorted(rows)}
