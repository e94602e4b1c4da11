"""Options the commands that run a scenario in a run directory of their own share, and that run directory."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from splitaudit.cli.partitions import one_topic_count, topic_counts
from splitaudit.cli.settings import settings
from splitaudit_lab.scenario.results import FAULTS

if TYPE_CHECKING:
    from splitaudit_lab.scenario.restore import ScenarioSettings

RUN_DIR = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run directory (default: .splitaudit/runs/<UTC time>). Must not hold an earlier run.",
)
PARTITIONS = click.option(
    "--partitions",
    multiple=True,
    default=("4",),
    show_default=True,
    metavar="N",
    callback=one_topic_count,
    help="Partitions of the topic the job reads (one count: the job reads one topic).",
)


TOPIC_PARTITIONS = click.option(
    "--partitions",
    "topic_partitions",
    multiple=True,
    default=("4",),
    show_default=True,
    metavar="N[,N…]",
    callback=topic_counts,
    help="Partitions of the topic the job reads; comma-separated (or repeated) for a job reading several topics, "
    "one count per topic (5,2: two new topics with 5 and 2 partitions, --records records produced to each).",
)
PARALLELISM = click.option(
    "--parallelism", type=click.IntRange(min=1), default=2, show_default=True, help="Parallelism of the job."
)
RESTORE_PARALLELISM = click.option(
    "--restore-parallelism",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Restore the job from its savepoint at parallelism N (default: --parallelism): Flink redistributes the "
    "readers' split state over N subtasks. The cluster has 4 slots.",
)
KEEP_STACK = click.option(
    "--keep-stack", is_flag=True, help="Leave Kafka and Flink running afterwards (stop with `stack down`)."
)
ADD_PARTITIONS = click.option(
    "--add-partitions",
    "added_partitions",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="K",
    help="Add K partitions to the topic while the job is down, before the second batch: the patched jar "
    "discovers them on restore and reads them from earliest; a jar that keeps its restored splits (Beam 2.70.0) "
    "never reads them, and the audit reports them unassigned; stock splits the source again and reads them.",
)
BEAM_RECORDS = click.option(
    "--records",
    default=20_000,
    show_default=True,
    help="Records produced (to each topic) before and again after the savepoint.",
)

KILL_TASKMANAGER = click.option(
    "--kill-taskmanager",
    is_flag=True,
    help="TaskManager-failure variant: kill -9 the TaskManager mid-run instead of savepoint + restore "
    "(the same as --fault taskmanager-kill).",
)
FAULT = click.option(
    "--fault",
    type=click.Choice(FAULTS),
    default=None,
    help="Interrupt the running job instead of savepoint + restore: taskmanager-kill (kill -9, Flink fails "
    "over), broker-restart (the Kafka broker stopped and started again while the job reads), jobmanager-kill "
    "(kill -9 the JobManager, start the cluster again, resubmit the job from its latest retained checkpoint).",
)
CONTINUOUS = click.option(
    "--continuous",
    is_flag=True,
    help="Produce records all along (about 1,000/s after the first N) and cancel 2 s after the savepoint while "
    "they keep arriving: the restored job replays what the first job read in between.",
)


def _scenario_settings(**options: Any) -> ScenarioSettings:
    """The ScenarioSettings the options give (the scenario's modules imported only when it runs)."""
    from splitaudit_lab.scenario.request import scenario_settings

    return scenario_settings(**options)


# The scenario's knobs: `settings`, a ScenarioSettings (demo), with the interruptions `scenario` adds.
SCENARIO_OPTIONS = (TOPIC_PARTITIONS, BEAM_RECORDS, PARALLELISM, RESTORE_PARALLELISM, ADD_PARTITIONS)
SCENARIO_SETTINGS = settings("settings", _scenario_settings, *SCENARIO_OPTIONS)
INTERRUPTED_SCENARIO_SETTINGS = settings(
    "settings", _scenario_settings, *SCENARIO_OPTIONS, KILL_TASKMANAGER, FAULT, CONTINUOUS
)


def new_run_dir(workdir: Path | None) -> Path:
    """The run directory a scenario writes to: --workdir, else a new one named after the UTC time."""
    return (workdir or Path(".splitaudit/runs") / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())).resolve()
