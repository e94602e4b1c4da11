"""Options the commands that run a scenario in a run directory of their own share, and that run directory."""

from __future__ import annotations

import time
from pathlib import Path

import click

from splitaudit.cli.partitions import one_topic_count, topic_counts

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


def new_run_dir(workdir: Path | None) -> Path:
    """The run directory a scenario writes to: --workdir, else a new one named after the UTC time."""
    return (workdir or Path(".splitaudit/runs") / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())).resolve()
