"""The scenario's settings: the parallelism of the job after the restore."""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.errors import UsageError
from splitaudit.progress import Progress
from splitaudit.scenario.restore import ScenarioSettings, run_fault_scenario
from splitaudit.scenario.results import TASKMANAGER_KILL
from splitaudit.stack.stack import Stack


def test_the_restored_job_runs_at_the_first_jobs_parallelism_unless_told() -> None:
    assert ScenarioSettings(parallelism=4).parallelism_after == 4
    assert ScenarioSettings(parallelism=4, restore_parallelism=2).parallelism_after == 2


def test_a_fault_refuses_another_parallelism_before_anything_starts(tmp_path: Path) -> None:
    settings = ScenarioSettings(parallelism=2, restore_parallelism=3)
    stack = Stack(tmp_path / "stack")  # never started: the settings are refused first
    with pytest.raises(UsageError, match="a fault keeps the job's parallelism"):
        run_fault_scenario(
            stack, tmp_path / "run", tmp_path / "job.jar", "patched", Progress(), settings, TASKMANAGER_KILL
        )
    assert not (tmp_path / "run").exists()
    assert not (tmp_path / "stack").exists()
