"""`splitaudit watch` through a restored job's whole life on the real stack (Kafka, Flink, Beam 2.62.0 stock and
patched jars): the job reads its backlog, settles, and is ended as users end it; the watch's verdict, exit code
and final tally per partition against the double read counted in the sink.

Each restore has a backlog of 500 records per partition (2,000 before the savepoint, 2,000 more while the job is
down, 4 partitions); the stock restore reads each partition's 500 twice (beam#31313: the twin starts at the
restored offset), the patched one reads each once. `make test` runs the stock stop-with-savepoint and the patched
cancel; the other ends and faults are marked `watch` (`make watch`).
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from splitaudit.guard.results import CANCEL, STOP, WatchReport
from splitaudit.guard.watch import READ_TWICE
from splitaudit.progress import Progress
from splitaudit.scenario.restore import ScenarioSettings, pipeline_jar
from splitaudit.scenario.results import JOBMANAGER_KILL, TASKMANAGER_KILL, WatchedLife
from splitaudit.scenario.watched import run_watched_life
from splitaudit.stack.stack import Stack
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


def _life(stack: Stack, tmp_path: Path, variant: str, end: str, **options: object) -> WatchedLife:
    jar = pipeline_jar(variant)
    return run_watched_life(stack, tmp_path / "run", jar, variant, Progress(), SETTINGS, end, **options)  # type: ignore[arg-type]


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
