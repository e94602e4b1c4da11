"""The restored job under the watch through a new attempt the cluster makes of it: a JobManager failover or a
rescale by the adaptive scheduler.

The first half is the restore scenario's (N records, the job, savepoint and cancel, N more records: the restored
backlog). `run_watched_recovery` restores the savepoint as a job that `splitaudit watch --on-error report`
follows from its submission, waits until the backlog is in the sink and checkpoints add no rows, lets it idle
past the watch's quiet window, and then makes a new attempt of the job:

- `jobmanager-failover` (a highly available stack): kill -9 the JobManager and start a new one, which recovers
  the job, same id, from its latest checkpoint (the TaskManager stays);
- `rescale` (a stack with the adaptive scheduler): ask Flink through REST for another parallelism; the scheduler
  restarts the job from its latest checkpoint at it.

The new attempt then reads `more` records produced to each topic, the job settles again, runs idle past the
watch's quiet window and is stopped with a savepoint. The result holds the watch's report (the attempts it saw
and the final tally) beside the truth counted in the sink: per partition its rows minus its distinct offsets.
Nothing is replayed to count there: the new attempt restores a checkpoint taken once the sink held every offset
and stopped growing, so each attempt reads offsets of its own, which the count checks (no reader wrote offsets
both below and from a partition's end at the new attempt). The sink's `attempt` column cannot tell the attempts
apart here: a recovered job's subtasks count from 0 again, as do the subtasks a rescale adds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from splitaudit.clients.flink import TERMINAL_STATES
from splitaudit.errors import ExternalError, UsageError
from splitaudit.guard.lifecycle import DEFAULT_REST_TIMEOUT
from splitaudit.guard.results import STOP
from splitaudit.polling import poll
from splitaudit_lab.scenario.restore import ScenarioRun
from splitaudit_lab.scenario.results import WatchedLife
from splitaudit_lab.scenario.sink import read_sink
from splitaudit_lab.scenario.watched import IDLE_BEFORE_END, WatchedCase, first_half, settle, watching_restore

JOBMANAGER_FAILOVER, RESCALE = "jobmanager-failover", "rescale"
RECOVERY_TIMEOUT = 180.0  # seconds for the job to run again after a failover or a rescale


def run_watched_recovery(
    case: WatchedCase,
    fault: str,
    more: int,
    parallelism: int | None = None,
    rest_timeout: float = DEFAULT_REST_TIMEOUT,
) -> WatchedLife:
    """Savepoint a run of the case's jar, restore it as a job the watch follows (with `rest_timeout`: `WatchSettings`),
    let it settle, make a new attempt of it by `fault` (a rescale to `parallelism`), produce `more` records to
    each topic, let it settle again and stop it with a savepoint. A failover needs a highly available stack, a
    rescale one with the adaptive scheduler."""
    if fault not in (JOBMANAGER_FAILOVER, RESCALE) or (fault == RESCALE) != (parallelism is not None):
        raise UsageError(f"a watched recovery is a {JOBMANAGER_FAILOVER}, or a {RESCALE} to a parallelism")
    run = case.run(fault)
    savepoint = first_half(run, case.jar)
    restore = watching_restore(run, case.jar, savepoint, rest_timeout=rest_timeout)
    with run.steps.step(f"watch the restored job through a {fault}") as out, restore as (job, watching):
        try:
            run.flink.wait_all_running(job)
            settle(run, job)
            # Idle past the watch's quiet window, as after the backlog: the first attempt's last counts are final.
            time.sleep(IDLE_BEFORE_END)
            if parallelism is None:
                _fail_over(run, job)
            else:
                _rescale(run, job, parallelism)
            ends = {partition: count for (_, partition), count in run.produced.items()}
            run.produce(more, what=f" more after the {fault}")
            settle(run, job)
            time.sleep(IDLE_BEFORE_END)  # and so the new attempt's
            with run.steps.step("stop the job with a savepoint"):
                run.flink.wait_for_savepoint(job, run.flink.stop_with_savepoint(job, run.savepoint_target))
                # The savepoint completes before the job is FINISHED: not a job to cancel below.
                run.flink.wait_for_state(job, {"FINISHED"})
        finally:
            if run.flink.job_state(job) not in TERMINAL_STATES:
                run.flink.cancel(job)
            report = watching.result()
        out.append(f"job {job}: {report.line}")
    return WatchedLife(case.variant, STOP, fault, report, _read_twice_in_sink(read_sink(run.sink), job, ends))


def _fail_over(run: ScenarioRun, job: str) -> None:
    """Kill -9 the JobManager and start a new one; wait until it has recovered the job and every vertex runs."""
    cluster = run.stack.flink
    with run.steps.step("kill -9 the JobManager, start a new one; it recovers the job") as out:
        out.append(f"killed JobManager pid {cluster.kill('jobmanager')}")
        cluster.start_jobmanager(RECOVERY_TIMEOUT)
        run.forget_jars()
        out.append(f"job {job} {_wait_running(run, job, lambda _vertex: True)} again")


def _rescale(run: ScenarioRun, job: str, parallelism: int) -> None:
    """Ask the adaptive scheduler for `parallelism`; wait until every vertex runs at it."""
    with run.steps.step(f"rescale the job to parallelism {parallelism} (REST resource requirements)") as out:
        run.flink.rescale(job, parallelism)
        out.append(f"job {job} {_wait_running(run, job, lambda vertex: vertex['parallelism'] == parallelism)}")


def _wait_running(run: ScenarioRun, job: str, wanted: Callable[[dict[str, Any]], bool]) -> str:
    """Wait until the job runs with every vertex running and `wanted(vertex)`; its vertices' parallelism then. The
    REST API may refuse or answer 503 meanwhile (a JobManager starting, or not leading yet)."""
    seen = ["nothing"]

    def running() -> str | None:
        try:
            document = run.flink.job(job)
        except ExternalError as ex:
            seen[0] = str(ex)
            return None
        vertices = document.get("vertices", [])
        states = ", ".join(f"{v.get('status')} x{v.get('parallelism')}" for v in vertices)
        seen[0] = f"{document.get('state')}: {states}"
        ready = document.get("state") == "RUNNING" and vertices
        if ready and all(v.get("status") == "RUNNING" and wanted(v) for v in vertices):
            return f"runs at parallelism {', '.join(str(v['parallelism']) for v in vertices)}"
        return None

    return poll(f"Flink job {job} to run again", running, timeout=RECOVERY_TIMEOUT, interval=0.5,
                last_seen=lambda: seen[0])  # fmt: skip


def _read_twice_in_sink(sink: pa.Table, job: str, ends: Mapping[int, int]) -> dict[int, int]:
    """Per partition, the rows `job` wrote minus its distinct offsets: its records read twice, when no attempt read
    what another did. Refused (an ExternalError) when a reader wrote offsets both below and from a partition's end
    offset when the new attempt began (`ends`): a replay, or a reader of one attempt reading the other's offsets."""
    rows: dict[int, int] = {}
    offsets: dict[int, set[int]] = {}
    sides: dict[str, set[bool]] = {}
    for row in sink.filter(pc.equal(sink["job_id"], job)).to_pylist():
        partition, offset = row["partition"], row["offset"]
        rows[partition] = rows.get(partition, 0) + 1
        offsets.setdefault(partition, set()).add(offset)
        sides.setdefault(row["reader_id"], set()).add(offset >= ends.get(partition, 0))
    crossing = sorted(reader for reader, side in sides.items() if len(side) > 1)
    if crossing:
        raise ExternalError(f"readers {', '.join(crossing)} of job {job} wrote offsets of both attempts")
    return {partition: rows[partition] - len(offsets[partition]) for partition in sorted(rows)}
