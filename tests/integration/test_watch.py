"""`splitaudit watch` on real restored jobs: it stops stock Beam 2.62.0 re-reading every partition, and stays
silent over the patched jar's restore."""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.guard.watch import READ_MORE_THAN_AVAILABLE
from splitaudit.progress import Progress
from splitaudit.scenario.restore import ScenarioSettings, pipeline_jar
from splitaudit.scenario.watched import run_guarded_restore, run_watched_restore
from splitaudit.stack.stack import Stack

pytestmark = pytest.mark.integration

SETTINGS = ScenarioSettings(records=2_000)  # 500 per partition before the savepoint, 500 more while down


def test_watch_stops_the_stock_restored_job(stack: Stack, tmp_path: Path) -> None:
    result = run_watched_restore(stack, tmp_path / "run", pipeline_jar("stock"), "stock", Progress(), SETTINGS)
    findings = [event.finding for event in result.watch.events]
    assert [(f.kind, f.topic is not None, f.partition) for f in findings] == [
        (READ_MORE_THAN_AVAILABLE, True, p) for p in range(4)
    ]
    assert (result.watch.action, result.watch.job_state, result.watch.exit_code) == ("stop", "FINISHED", 1)
    assert str(result.watch.savepoint).startswith("file:")
    # Two readers per partition, each from the restored offset 500: the restored job wrote 2,000 offsets twice
    # before the first metrics refresh showed it.
    assert (result.restored_offsets, result.read_twice) == (2_000, 2_000)


def test_watch_is_silent_over_the_patched_restore(stack: Stack, tmp_path: Path) -> None:
    result = run_watched_restore(
        stack, tmp_path / "run", pipeline_jar("patched"), "patched", Progress(), SETTINGS, watch_seconds=20.0
    )
    assert (result.watch.events, result.watch.action, result.watch.exit_code) == ((), "none", 0)
    assert result.watch.polls >= 10
    assert (result.restored_offsets, result.read_twice) == (2_000, 0)


def test_scenario_guard_refuses_the_stock_restore(stack: Stack, tmp_path: Path) -> None:
    jar = pipeline_jar("stock")
    result = run_guarded_restore(stack, tmp_path / "run", jar, "stock", Progress(), SETTINGS, force=False)
    assert (result.restore, result.exit_code, result.guard.safe) == (None, 1, False)
    rereads = [(f.kind, f.partition, f.count, f.offset_ranges) for f in result.guard.errors]
    assert rereads == [("restore_rereads_partition", p, 500, ((500, 999),)) for p in range(4)]
