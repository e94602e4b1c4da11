"""The restore scenario under the guard: `splitaudit guard` before the restore, `splitaudit watch` after it.

The first half is the restore scenario's (N records, the job, savepoint and cancel, N more records: the restored
backlog). `run_guarded_restore` (`scenario --guard`) then asks the guard about restoring that savepoint with the
jar and stops there when it is unsafe, unless forced; `run_watched_restore` restores it with the same jar. The
watch starts before the restore is submitted, with the job id the submission fixes and the savepoint's offsets
already read, so it polls the job from the moment Flink lists it and acts as asked. The result says when the
watch saw each stage of the restored job, when it found what, what it did, and, from the sink, how many of the
restored job's records were read twice by then.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.compute as pc

from splitaudit.clients.flink import RUN_TIMEOUT, TERMINAL_STATES
from splitaudit.guard.predict import run_guard
from splitaudit.guard.results import STOP
from splitaudit.guard.watch import WatchSettings, run_watch
from splitaudit.progress import Progress
from splitaudit.scenario.restore import ScenarioRun, ScenarioSettings
from splitaudit.scenario.results import GuardedRestore, WatchedRestore
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
    return _restore_and_watch(run, jar, variant, progress, savepoint, on_error, watch_seconds, probe, interval)


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
    restore = _restore_and_watch(run, jar, variant, progress, savepoint, STOP, watch_seconds)
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
    progress: Progress,
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
