"""The scenarios' settings: the parallelism of the job after the restore, and knobs that do not combine, refused
with one exact message (a UsageError: exit 2) when the settings are made, before any stack starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from splitaudit.errors import UsageError
from splitaudit.progress import Progress
from splitaudit_lab.scenario.portable import PortableSettings
from splitaudit_lab.scenario.restore import ScenarioSettings, run_restore_scenario
from splitaudit_lab.scenario.results import BROKER_RESTART, FAULTS, TASKMANAGER_KILL
from splitaudit_lab.stack.stack import Stack

NOT_TO_A_FAULT = (
    "--add-partitions, --continuous and --restore-parallelism apply to the savepoint restore, not to a fault"
)


def test_the_restored_job_runs_at_the_first_jobs_parallelism_unless_told() -> None:
    assert ScenarioSettings(parallelism=4).parallelism_after == 4
    assert ScenarioSettings(parallelism=4, restore_parallelism=2).parallelism_after == 2


@pytest.mark.parametrize(
    "knobs",
    [
        {},
        {"continuous": True},
        {"added_partitions": 2},
        {"restore_parallelism": 3},
        *({"fault": fault} for fault in FAULTS),
    ],
)
def test_knobs_that_combine_make_settings(knobs: dict[str, Any]) -> None:
    ScenarioSettings(**knobs)


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"fault": "power-cut"}, "unknown fault 'power-cut'; one of taskmanager-kill, broker-restart, jobmanager-kill"),
        ({"fault": TASKMANAGER_KILL, "restore_parallelism": 3}, NOT_TO_A_FAULT),
        ({"fault": TASKMANAGER_KILL, "restore_parallelism": 2}, NOT_TO_A_FAULT),  # the same parallelism too
        ({"fault": BROKER_RESTART, "continuous": True}, NOT_TO_A_FAULT),
        ({"fault": BROKER_RESTART, "added_partitions": 2}, NOT_TO_A_FAULT),
        ({"continuous": True, "added_partitions": 2}, "--add-partitions and --continuous do not go together"),
    ],
)
def test_knobs_that_do_not_combine_are_refused(knobs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as refused:
        ScenarioSettings(**knobs)
    assert str(refused.value) == message


def test_a_fault_restores_no_savepoint_into_another_jar(tmp_path: Path) -> None:
    settings = ScenarioSettings(fault=TASKMANAGER_KILL)
    stack = Stack(tmp_path / "stack")  # never started: the request is refused first
    with pytest.raises(UsageError) as refused:
        run_restore_scenario(
            stack, tmp_path / "run", tmp_path / "job.jar", "patched", Progress(), settings, tmp_path / "other.jar"
        )
    assert str(refused.value) == "restore_jar is the jar restored from the savepoint: a fault restores no savepoint"
    assert not (tmp_path / "run").exists()
    assert not (tmp_path / "stack").exists()


def test_the_python_scenario_refuses_a_read_kafkaio_does_not_have() -> None:
    PortableSettings(read="sdf")
    with pytest.raises(UsageError) as refused:
        PortableSettings(read="legacy")
    assert str(refused.value) == "--read must be one of deprecated, sdf, not 'legacy'"
