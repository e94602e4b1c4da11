"""`python-scenario` and `users-job-scenario`: the savepoint restore with the Python pipeline and with a job
shaped like users' own."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from splitaudit.cli.context import Context, run
from splitaudit.cli.options import LIBRARIES_LOG
from splitaudit.cli.settings import settings
from splitaudit.errors import EXIT_CLEAN, EXIT_FINDINGS
from splitaudit_lab.cli.output import output
from splitaudit_lab.cli.scenario_options import KEEP_STACK, PARALLELISM, PARTITIONS, RUN_DIR, new_run_dir
from splitaudit_lab.scenario.results import READS
from splitaudit_lab.scenario.users_job_results import CONSUMERS, GROUP_OFFSETS

if TYPE_CHECKING:
    from splitaudit_lab.scenario.users_job import UsersJobSettings


@click.command("python-scenario")
@click.option(
    "--read",
    type=click.Choice(READS),
    default="deprecated",
    show_default=True,
    help="KafkaIO's read: the legacy UnboundedSource (use_deprecated_read, in Beam's UnboundedSourceWrapper) or "
    "the splittable DoFn.",
)
@click.option(
    "--restore-parallelism",
    type=click.IntRange(min=1, max=4),
    default=1,
    show_default=True,
    help="Parallelism of the restored job (the first runs at --parallelism).",
)
@RUN_DIR
@PARTITIONS
@click.option(
    "--records", default=2_000, show_default=True, help="Records produced before and again after the savepoint."
)
@PARALLELISM
@KEEP_STACK
@click.pass_context
def python_scenario(
    ctx: click.Context,
    read: str,
    restore_parallelism: int,
    workdir: Path | None,
    partitions: int,
    records: int,
    parallelism: int,
    keep_stack: bool,
) -> None:
    """Run the savepoint restore with the Python Beam pipeline on Flink's portable runner; count the sink.

    Brings a stack up, starts Beam's expansion service, Flink job server and a Python SDK worker pool, produces
    N records, submits the Python pipeline (beam_pipelines/python) through the job server, stops it with a
    savepoint once all N are in the sink, produces N more, submits it again from the savepoint at
    --restore-parallelism, waits for all 2N offsets (or until the sink stops growing), stops it with a
    savepoint, then audits the sink and both savepoints on Spark. The Python sink has no reader_id/attempt
    columns (the portable runner cannot give them): duplicates are counted, not classified. Exits as `audit`.
    """
    run_dir = new_run_dir(workdir)

    def action(context: Context) -> int:
        from splitaudit_lab.scenario.portable import PortableSettings, run_portable_with_own_stack
        from splitaudit_lab.scenario.restore import ScenarioSettings

        settings = ScenarioSettings(
            partitions=partitions, records=records, parallelism=parallelism, restore_parallelism=restore_parallelism
        )
        portable = PortableSettings(read=read)
        report = run_portable_with_own_stack(run_dir, context.progress, settings, portable, keep_stack)
        output(context).scenario_report(report)
        return report.audit.exit_code

    run(ctx, action, run_dir / LIBRARIES_LOG)


def _users_job_settings(**options: Any) -> UsersJobSettings:
    """The UsersJobSettings the options give (the scenario's modules imported only when it runs)."""
    from splitaudit_lab.scenario.users_job import UsersJobSettings

    return UsersJobSettings(**options)


# The users' job run's knobs: `settings`, a UsersJobSettings, which checks them.
USERS_JOB_SETTINGS = settings(
    "settings",
    _users_job_settings,
    click.option(
        "--consumer",
        type=click.Choice(CONSUMERS),
        default="none",
        show_default=True,
        help="How the job's Kafka consumer starts: none (no group.id: auto.offset.reset=latest), group (a group, "
        "offsets committed on checkpoint finalization, earliest), earliest (no group, earliest).",
    ),
    click.option(
        "--group-offsets",
        type=click.Choice(GROUP_OFFSETS),
        default="committed",
        show_default=True,
        help="With --consumer group, the group's committed offsets after the savepoint, before the guard and the "
        "restore: committed (as the job committed them), deleted (the group deleted: the stock twin starts at the log "
        "start), mid-window (each partition's set half-way through its offsets in a window that closed before the "
        "savepoint: the stock twin re-reads that window in part).",
    ),
    click.option(
        "--window-seconds", default=2, show_default=True, help="Length of the file sinks' fixed windows (event time)."
    ),
    click.option("--before", default=500, show_default=True, help="Records per partition before the savepoint."),
    click.option("--down", default=500, show_default=True, help="Records per partition while the job is down."),
    click.option("--after", default=500, show_default=True, help="Records per partition after the restored job runs."),
    click.option("--lineage", is_flag=True, help="Run the job with the lineage kit's columns in its Parquet rows."),
    PARTITIONS,
)


@click.command("users-job-scenario")
@click.option("--variant", type=click.Choice(["stock", "patched"]), required=True, help="The users' job jar to run.")
@USERS_JOB_SETTINGS
@RUN_DIR
@KEEP_STACK
@click.pass_context
def users_job_scenario(
    ctx: click.Context, variant: str, settings: UsersJobSettings, workdir: Path | None, keep_stack: bool
) -> None:
    """Run a job shaped like users' own through a savepoint restore; find what it read twice by record identity.

    The job (beam_pipelines/java/users-job, Beam 2.62.0) reads JSON weather records (event time: their
    log-append time), parses and maps them, and writes one output per input to an output topic, to TextIO JSON
    lines files and to Parquet files (both in fixed windows, Beam's default file names), with no Kafka
    coordinates. Brings a stack up, produces --before records per partition (with --consumer none once the job
    runs: it starts at the log end), runs the job at parallelism 2, savepoints and cancels once the outputs
    settle, snapshots both file sinks, treats the group's offsets (--group-offsets), produces --down per
    partition, restores, produces --after per partition once the restored job runs, waits until the outputs
    settle, savepoints and cancels. Then matches every output record to its input offset by its unique
    `timestamp` (pyarrow, not Spark) and shows per partition the offsets produced in each phase and, for each
    output, the offsets read twice and missing; for each file sink the offsets read twice but there once (masked
    duplicates) and lost by a rewrite, the files the restored job replaced, with their windows, and files never
    finalized. Exits 0 when every offset is in every output exactly once and no file was replaced, 1 otherwise.
    """
    run_dir = new_run_dir(workdir)

    def action(context: Context) -> int:
        from splitaudit_lab.scenario.users_job import run_users_job_with_own_stack

        report = run_users_job_with_own_stack(run_dir, variant, context.progress, settings, keep_stack)
        output(context).users_job_report(report)
        return EXIT_CLEAN if report.clean else EXIT_FINDINGS

    run(ctx, action, run_dir / LIBRARIES_LOG)
