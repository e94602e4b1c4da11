"""`splitaudit watch` through a restored job's whole life on the real stack (Kafka, Flink, Beam 2.62.0 stock and
patched jars): the job reads its backlog, settles, and is ended as users end it; the watch's verdict, exit code
and final tally per partition against the double read counted in the sink.

Each restore has a backlog of 500 records per partition (2,000 before the savepoint, 2,000 more while the job is
down, 4 partitions); the stock restore reads each partition's 500 twice (beam#31313: the twin starts at the
restored offset), the patched one reads each once. `make test` runs the stock stop-with-savepoint and the patched
cancel; the other ends and faults are marked `watch` (`make watch`).

"Read twice since the restore", when the TaskManager dies while the readers read: Flink restarts the job from its
latest checkpoint, so everything an attempt read from that checkpoint's offsets on is rolled back and read again
by the next attempt (a replay, expected of an at-least-once job, not a double read). The sink's truth is therefore
counted per attempt, rows minus distinct offsets, and for an attempt that ended by a restart only over its rows of
offsets below those the next attempt resumed from (the checkpoint's, read from it): the stock attempt's twin
readers also both read some of the records after that checkpoint, and those rows are in the sink, but the next
attempt reads those offsets again anyway, and counts them if it reads them twice. The watch tallies the same:
each attempt up to the checkpoint its restart resumed from (its counts at that checkpoint exact when they were
steady around it), then the next attempt against that checkpoint's offsets. The run makes that exact: the job
checkpoints only when triggered, one checkpoint is taken while it is idle, and the TaskManager is killed while the
job reads 500 more records per partition (paced at 200 records/s per subtask, so the kill falls mid-read).

The users' job (`beam_pipelines/java/users-job`, consumer `none`: no group.id, so the stock twin starts at the
log end at the restore) is watched through its restore as `test_users_job.py` runs it: its twin reads only the
records produced after the restore, so the stock tally is exactly those per partition, matched in its output
topic by each record's identity.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyarrow.compute as pc
import pytest

from splitaudit.guard.results import CANCEL, STOP, WatchReport
from splitaudit.guard.watch import READ_TWICE
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import ScenarioSettings, pipeline_jar
from splitaudit_lab.scenario.results import JOBMANAGER_KILL, TASKMANAGER_KILL, WatchedLife
from splitaudit_lab.scenario.sink import read_sink
from splitaudit_lab.scenario.users_job import UsersJobSettings, run_users_job_scenario, users_job_jar
from splitaudit_lab.scenario.watched import FINISH, TASKMANAGER_KILL_MID_READ, WatchedCase, run_watched_life
from splitaudit_lab.stack.stack import Stack
from tests.integration.faulty_rest import FaultyRest

pytestmark = pytest.mark.integration

SETTINGS = ScenarioSettings(records=2_000)
PARTITIONS = range(4)
STOCK_TRUTH = dict.fromkeys(PARTITIONS, 500)
PATCHED_TRUTH = dict.fromkeys(PARTITIONS, 0)


def _tally(watch: WatchReport) -> dict[int, tuple[int, bool, str | None]]:
    return {t.partition: (t.read_twice, t.exact, t.why) for t in watch.tally}


def _read_twice_findings(watch: WatchReport) -> list[tuple[int | None, int | None]]:
    return [(f.partition, f.count) for f in watch.findings if f.kind == READ_TWICE]


def _life(
    stack: Stack, tmp_path: Path, variant: str, end: str, settings: ScenarioSettings = SETTINGS, **options: object
) -> WatchedLife:
    jar = pipeline_jar(variant)
    started = time.monotonic()
    result = run_watched_life(WatchedCase(stack, tmp_path / "run", jar, variant, settings), end, **options)  # type: ignore[arg-type]
    print(f"{variant} {end} {options.get('fault')}: {time.monotonic() - started:.0f} s, {result.watch.line}")
    return result


def _assert_stock(result: WatchedLife, phase: str) -> None:
    watch = result.watch
    assert result.read_twice == STOCK_TRUTH
    assert _tally(watch) == {p: (500, True, None) for p in PARTITIONS}
    assert _read_twice_findings(watch) == [(p, 500) for p in PARTITIONS]
    assert (watch.end.phase, watch.action, watch.exit_code) == (phase, "report", 1)


def _assert_patched(result: WatchedLife, phase: str) -> None:
    watch = result.watch
    assert result.read_twice == PATCHED_TRUTH
    assert _tally(watch) == {p: (0, True, None) for p in PARTITIONS}
    assert (watch.findings, watch.end.phase, watch.action, watch.exit_code) == ((), phase, "none", 0)


def _watch_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "splitaudit", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_a_server_trace_is_one_escaped_line_unless_debug(stack: Stack) -> None:
    with FaultyRest(stack.flink.rest_url) as proxy:
        proxy.fail_for(120.0)
        watch = ["watch", "--flink-rest", proxy.url, "--job", uuid.uuid4().hex, "--rest-timeout", "1"]
        plain, debug = _watch_cli(*watch), _watch_cli("--debug", *watch)
    # Retried for a second, then the error it is: the environment's (exit 3), Flink's text in one line.
    assert (plain.returncode, plain.stdout) == (3, "")
    assert plain.stderr.strip().splitlines()[-1] == (
        f"error: Flink REST GET {proxy.url}/jobs/overview → HTTP 500: Internal server error. "
        "(java.util.concurrent.CancellationException)"
    )
    assert "DefaultExecutionGraphCache" not in plain.stderr
    assert debug.returncode == 3
    assert "DefaultExecutionGraphCache.getExecutionGraphInfo" in debug.stderr


def test_stock_restore_stopped_with_a_savepoint(stack: Stack, tmp_path: Path) -> None:
    _assert_stock(_life(stack, tmp_path, "stock", STOP), "finished")


def test_patched_restore_cancelled(stack: Stack, tmp_path: Path) -> None:
    _assert_patched(_life(stack, tmp_path, "patched", CANCEL), "cancelled")


@pytest.mark.watch
def test_stock_restore_cancelled(stack: Stack, tmp_path: Path) -> None:
    _assert_stock(_life(stack, tmp_path, "stock", CANCEL), "cancelled")


@pytest.mark.watch
def test_patched_restore_stopped_with_a_savepoint(stack: Stack, tmp_path: Path) -> None:
    _assert_patched(_life(stack, tmp_path, "patched", STOP), "finished")


@pytest.mark.watch
@pytest.mark.parametrize("variant", ["stock", "patched"])
def test_rest_answering_500_while_the_job_stops_is_retried(stack: Stack, tmp_path: Path, variant: str) -> None:
    with FaultyRest(stack.flink.rest_url) as proxy:
        result = _life(stack, tmp_path, variant, STOP, flink_rest=proxy.url, before_end=lambda: proxy.fail_for(5.0))
    assert proxy.failed > 0
    (_assert_stock if variant == "stock" else _assert_patched)(result, "finished")
    answers = {(f.call.split("/")[1], f.answer) for f in result.watch.rest_faults}
    assert ("jobs", "HTTP 500: Internal server error. (java.util.concurrent.CancellationException)") in answers
    assert all("\n" not in f.answer for f in result.watch.rest_faults)


@pytest.mark.watch
def test_rest_failing_past_the_timeout_is_a_lost_job(stack: Stack, tmp_path: Path) -> None:
    with FaultyRest(stack.flink.rest_url) as proxy:
        result = _life(
            stack, tmp_path, "patched", STOP, flink_rest=proxy.url, before_end=lambda: proxy.fail_for(30.0),
            rest_timeout=3.0,
        )  # fmt: skip
    watch = result.watch
    assert (watch.end.phase, watch.end.state, watch.exit_code) == ("gone", "RUNNING", 4)
    assert watch.end.reason is not None
    assert "CancellationException" in watch.end.reason
    assert watch.line.startswith("splitaudit-watch: LOST state=gone job=")
    # The tally of what it read before: the counts had settled long before REST went silent.
    assert _tally(watch) == {p: (0, True, None) for p in PARTITIONS}


@pytest.mark.watch
@pytest.mark.parametrize("variant", ["stock", "patched"])
def test_jobmanager_killed_the_job_is_gone(stack: Stack, tmp_path: Path, variant: str) -> None:
    result = _life(stack, tmp_path, variant, JOBMANAGER_KILL, rest_timeout=3.0)
    watch = result.watch
    # No final state: the JobManager's REST port refuses connections for --rest-timeout, then the job is gone. A
    # stock restore's double read is still the verdict (exit 1), counted exactly: its counts had long settled.
    truth, twice = (STOCK_TRUTH, 500) if variant == "stock" else (PATCHED_TRUTH, 0)
    assert result.read_twice == truth
    assert _tally(watch) == {p: (twice, True, None) for p in PARTITIONS}
    assert (watch.end.phase, watch.end.state, watch.exit_code) == ("gone", "RUNNING", 1 if twice else 4)
    assert watch.end.reason is not None
    assert watch.end.reason.startswith("no answer for 3 s: Flink REST GET ")
    assert "\n" not in watch.end.reason


@pytest.mark.watch
@pytest.mark.parametrize("variant", ["stock", "patched"])
def test_taskmanager_killed_mid_watch_neither_resets_nor_doubles(stack: Stack, tmp_path: Path, variant: str) -> None:
    result = _life(stack, tmp_path, variant, STOP, fault=TASKMANAGER_KILL)
    (_assert_stock if variant == "stock" else _assert_patched)(result, "finished")


# Paced (200 records/s per subtask) and checkpointed only when the run triggers it: the kill falls while the job
# reads 500 more records per partition, and the latest checkpoint before it was taken while the job was idle.
MID_READ = ScenarioSettings(records=2_000, records_per_second=200, triggered_checkpoints=True)


@pytest.mark.watch
@pytest.mark.parametrize("variant", ["stock", "patched"])
def test_taskmanager_killed_while_the_job_reads_neither_resets_nor_doubles(
    stack: Stack, tmp_path: Path, variant: str
) -> None:
    result = _life(stack, tmp_path, variant, STOP, MID_READ, fault=TASKMANAGER_KILL_MID_READ)
    # Killed mid-read: the first attempt had read some of the 500 more per partition (offsets 1000..1499), not all;
    # the second resumed from the idle checkpoint, at 1000, and read them again (a replay), through 1499.
    sink = read_sink(tmp_path / "run" / "sink")
    mine = sink.filter(pc.equal(sink["job_id"], result.watch.job)).to_pylist()
    first = {(r["partition"], r["offset"]) for r in mine if r["attempt"] == 0}
    second = {(r["partition"], r["offset"]) for r in mine if r["attempt"] >= 1}
    assert any(offset >= 1000 for _, offset in first)
    assert len({key for key in first if key[1] >= 1000}) < 2_000
    assert second == {(p, o) for p in PARTITIONS for o in range(1000, 1500)}
    # Stock: the first attempt's twin readers read the 500 backlog records twice before the checkpoint; the restart
    # did not give its readers twins. Exactly that, per partition, in the tally and in the sink.
    (_assert_stock if variant == "stock" else _assert_patched)(result, "finished")


BOUNDED = ScenarioSettings(records=2_000, finish_when_idle=10)


@pytest.mark.watch
@pytest.mark.parametrize("variant", ["stock", "patched"])
def test_a_job_finishing_on_bounded_input_ends_the_watch(stack: Stack, tmp_path: Path, variant: str) -> None:
    # Its readers end after 10 s without a record, and the job finishes on its own: the watch ends with it.
    result = _life(stack, tmp_path, variant, FINISH, BOUNDED)
    assert result.watch.end.state == "FINISHED"
    (_assert_stock if variant == "stock" else _assert_patched)(result, "finished")


USERS_N = 200  # records per partition before the savepoint, while the job is down, and after the restore


@pytest.mark.watch
@pytest.mark.needs_build
@pytest.mark.parametrize("variant", ["stock", "patched"])
def test_the_users_job_with_its_twin_at_the_log_end(stack: Stack, tmp_path: Path, variant: str) -> None:
    settings = UsersJobSettings(consumer="none", before=USERS_N, down=USERS_N, after=USERS_N, watch=True)
    started = time.monotonic()
    report = run_users_job_scenario(stack, tmp_path / "run", users_job_jar(variant), variant, Progress(), settings)
    watch = report.watch
    assert watch is not None
    print(f"users' job {variant}: {time.monotonic() - started:.0f} s, {watch.line}")
    # Truth from the output topic, each record matched to its input by its identity: the stock twin, at the log end
    # at the restore (offset 400), read every record produced after it, 400..599, a second time; the backlog once.
    twice = {p.partition: p.topic.extra_rows for p in report.partitions}
    ranges = {p.partition: p.topic.read_twice for p in report.partitions}
    stock = variant == "stock"
    assert twice == dict.fromkeys(PARTITIONS, USERS_N if stock else 0)
    assert ranges == dict.fromkeys(PARTITIONS, ((2 * USERS_N, 3 * USERS_N - 1),) if stock else ())
    # Savepoint, then cancel: the watch ends with the cancelled job, its tally exact and equal to the truth.
    assert _tally(watch) == {p: (twice[p], True, None) for p in PARTITIONS}
    assert _read_twice_findings(watch) == [(p, USERS_N) for p in PARTITIONS if stock]
    assert (watch.end.phase, watch.action, watch.exit_code) == ("cancelled", "report" if stock else "none", int(stock))
