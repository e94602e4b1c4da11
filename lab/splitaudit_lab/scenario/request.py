"""What `scenario` and `demo` are asked to run: the scenario's settings and how the run is judged, checked when
the request is made (a UsageError, exit 2), before any stack starts. The settings check their own knobs
(`ScenarioSettings`); a request checks what the guard adds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from splitaudit.errors import UsageError
from splitaudit_lab.scenario.restore import ScenarioSettings, first_and_more
from splitaudit_lab.scenario.results import TASKMANAGER_KILL


@dataclass(frozen=True)
class ScenarioRequest:
    """What `scenario` runs: one build of the reference pipeline, or a job jar, through the scenario the settings
    ask for; with `guard`, the plain savepoint restore judged by the guard and followed by the watch."""

    settings: ScenarioSettings
    variant: str = "patched"  # the reference pipeline's build; with `jar`, only the run's label
    jar: Path | None = None  # None: the reference pipeline's jar of `variant`
    guard: bool = False
    force: bool = False  # with `guard`: restore even when the guard says unsafe

    def __post_init__(self) -> None:
        if self.force and not self.guard:
            raise UsageError("--force overrides the guard's refusal: it needs --guard")
        if self.guard:
            _check_guarded(self.settings)


@dataclass(frozen=True)
class DemoRequest:
    """What `demo` runs: the scenario the settings ask for with the stock jar, then with the patched one (with
    added partitions, Beam's upstream fix between them); with `guard`, each side's plain savepoint restore judged
    by the guard and followed by the watch."""

    settings: ScenarioSettings
    guard: bool = False

    def __post_init__(self) -> None:
        if self.guard:
            _check_guarded(self.settings)


def scenario_settings(
    topic_partitions: tuple[int, ...],
    records: int,
    parallelism: int,
    restore_parallelism: int | None,
    added_partitions: int,
    continuous: bool = False,
    fault: str | None = None,
    kill_taskmanager: bool = False,
) -> ScenarioSettings:
    """The settings the scenario options of `scenario` and `demo` (as the CLI parsed them) ask for; UsageError
    when they do not combine. --kill-taskmanager is --fault taskmanager-kill."""
    if kill_taskmanager:
        if fault not in (None, TASKMANAGER_KILL):
            raise UsageError(f"--kill-taskmanager is --fault {TASKMANAGER_KILL}, not --fault {fault}")
        fault = TASKMANAGER_KILL
    return ScenarioSettings(
        *first_and_more(topic_partitions),
        records=records,
        parallelism=parallelism,
        restore_parallelism=restore_parallelism,
        added_partitions=added_partitions,
        continuous=continuous,
        fault=fault,
    )


def _check_guarded(settings: ScenarioSettings) -> None:
    """The guard judges the plain savepoint restore: refuse settings that ask for another run (valid settings ask
    for one at most: a fault, records arriving all along, or partitions added while the job is down)."""
    for option, given in (
        ("--fault", settings.fault is not None),
        ("--continuous", settings.continuous),
        ("--add-partitions", settings.added_partitions > 0),
    ):
        if given:
            raise UsageError(f"--guard runs the plain savepoint restore: no {option}")
