"""What `scenario` and `demo` ask for: options that do not combine are refused with one exact message (a
UsageError: exit 2) when the request is made, before any stack starts."""

from __future__ import annotations

from typing import Any

import pytest

from splitaudit.errors import UsageError
from splitaudit_lab.scenario.request import DemoRequest, ScenarioRequest, scenario_settings
from splitaudit_lab.scenario.restore import ScenarioSettings
from splitaudit_lab.scenario.results import JOBMANAGER_KILL, TASKMANAGER_KILL

# `scenario`'s options as click parses them when none is given.
SCENARIO: dict[str, Any] = {
    "variant": "patched",
    "jar": None,
    "topic_partitions": (4,),
    "records": 20_000,
    "parallelism": 2,
    "restore_parallelism": None,
    "kill_taskmanager": False,
    "fault": None,
    "continuous": False,
    "added_partitions": 0,
    "guard": False,
    "force": False,
}
DEMO: dict[str, Any] = {
    "topic_partitions": (4,),
    "records": 20_000,
    "parallelism": 2,
    "restore_parallelism": None,
    "added_partitions": 0,
    "guard": False,
}
# The options each request takes beside its settings group (the rest make its ScenarioSettings).
REQUEST_OPTIONS = ("variant", "jar", "guard", "force")


def _scenario(**options: Any) -> ScenarioRequest:
    """The request `scenario` makes of these options (click's defaults for the others): its settings group first,
    as the command's decorator does (`scenario_settings`), then the request."""
    given = {**SCENARIO, **options}
    own = {name: given.pop(name) for name in REQUEST_OPTIONS}
    return ScenarioRequest(scenario_settings(**given), **own)


def _demo(**options: Any) -> DemoRequest:
    """The request `demo` makes of these options, as `_scenario` does."""
    given = {**DEMO, **options}
    guard = given.pop("guard")
    return DemoRequest(scenario_settings(**given), guard)


def test_scenarios_options_make_its_settings() -> None:
    request = _scenario(topic_partitions=(5, 2), restore_parallelism=3)
    assert request == ScenarioRequest(ScenarioSettings(5, (2,), restore_parallelism=3))


def test_kill_taskmanager_is_the_taskmanager_kill_fault() -> None:
    for fault in (None, TASKMANAGER_KILL):
        request = _scenario(kill_taskmanager=True, fault=fault)
        assert request.settings.fault == TASKMANAGER_KILL


def test_the_guard_runs_the_plain_restore_at_any_parallelism() -> None:
    for options in ({"guard": True}, {"guard": True, "force": True}, {"guard": True, "restore_parallelism": 3}):
        assert _scenario(**options).guard
    assert _demo(guard=True).guard


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"force": True}, "--force overrides the guard's refusal: it needs --guard"),
        (
            {"kill_taskmanager": True, "fault": JOBMANAGER_KILL},
            "--kill-taskmanager is --fault taskmanager-kill, not --fault jobmanager-kill",
        ),
        ({"guard": True, "fault": JOBMANAGER_KILL}, "--guard runs the plain savepoint restore: no --fault"),
        ({"guard": True, "kill_taskmanager": True}, "--guard runs the plain savepoint restore: no --fault"),
        ({"guard": True, "continuous": True}, "--guard runs the plain savepoint restore: no --continuous"),
        ({"guard": True, "added_partitions": 2}, "--guard runs the plain savepoint restore: no --add-partitions"),
        # The settings' own checks come first: these knobs make no settings, guarded or not.
        (
            {"kill_taskmanager": True, "restore_parallelism": 3},
            "--add-partitions, --continuous and --restore-parallelism apply to the savepoint restore, not to a fault",
        ),
        ({"continuous": True, "added_partitions": 2}, "--add-partitions and --continuous do not go together"),
    ],
)
def test_scenario_refuses_options_that_do_not_combine(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as refused:
        _scenario(**options)
    assert str(refused.value) == message


def test_demo_refuses_the_guard_with_added_partitions() -> None:
    with pytest.raises(UsageError) as refused:
        _demo(guard=True, added_partitions=2)
    assert str(refused.value) == "--guard runs the plain savepoint restore: no --add-partitions"


def test_a_library_callers_guarded_demo_gets_the_same_check() -> None:
    with pytest.raises(UsageError) as refused:
        DemoRequest(ScenarioSettings(continuous=True), guard=True)
    assert str(refused.value) == "--guard runs the plain savepoint restore: no --continuous"
