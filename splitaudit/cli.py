"""The `splitaudit` command line: click commands that compute a result and hand it to an Output.

Each command imports what it runs inside its action: Spark, pyarrow, requests, confluent_kafka and rich cost
seconds of start-up together, and `inspect --json` needs none of them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import NoReturn

import click

from splitaudit.audit.beam_names import NamingTemplate
from splitaudit.audit.request import SINK_FORMATS, AuditRequest, IdentityMatch, SavepointOptions, SinkColumns
from splitaudit.errors import EXIT_CLEAN, EXIT_ENVIRONMENT, EXIT_FINDINGS, SplitauditError, missing_extra
from splitaudit.guard.lifecycle import DEFAULT_REST_TIMEOUT
from splitaudit.guard.results import ACTIONS, STOP, WatchEvent
from splitaudit.home import MATRIX_FLINK
from splitaudit.logs import log_libraries_to
from splitaudit.progress import ConsoleProgress
from splitaudit.report.output import JsonOutput, Output
from splitaudit.scenario.results import FAULTS, READS, TASKMANAGER_KILL
from splitaudit.scenario.users_job_results import CONSUMERS, GROUP_OFFSETS


@dataclass(frozen=True)
class Context:
    """What every command gets from the top-level options."""

    as_json: bool
    progress: ConsoleProgress
    debug: bool

    @cached_property
    def output(self) -> Output:
        """JSON on stdout, or rich tables (rich imported only for them)."""
        if self.as_json:
            return JsonOutput(self.debug)
        from splitaudit.report.console import ConsoleOutput

        return ConsoleOutput(self.debug)


def run(ctx: click.Context, action: Callable[[Context], int | None], libraries_log: Path | None = None) -> NoReturn:
    """Run one command's action; map SplitauditError to its exit code, show it through the Output.

    `libraries_log` is where Spark and the Kafka clients log while it runs (on the console with --debug).
    """
    context: Context = ctx.obj
    if libraries_log is not None and not context.debug:
        log_libraries_to(libraries_log)
    try:
        code = action(context)
    except SplitauditError as ex:
        context.output.exception(ex, context.debug)
        sys.exit(ex.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except ModuleNotFoundError as ex:
        missing = missing_extra(ex)
        context.output.exception(missing or ex, context.debug)
        sys.exit(EXIT_ENVIRONMENT if missing else 70)
    except Exception as ex:
        context.output.exception(ex, context.debug)
        sys.exit(70)  # EX_SOFTWARE: a bug in splitaudit, never bad input
    sys.exit(EXIT_CLEAN if code is None else code)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.option("--json", "as_json", is_flag=True, help="Print results as one JSON document on stdout.")
@click.option("--debug", is_flag=True, help="Show the full traceback of an error, not just one line.")
@click.version_option(package_name="splitaudit")
@click.pass_context
def main(ctx: click.Context, as_json: bool, debug: bool) -> None:
    """splitaudit: find Kafka partitions read twice or lost when a Beam/Flink job restores.

    The console shows splitaudit's own progress; Spark's and the Kafka clients' logs go to libraries.log in the
    run directory (demo, scenario, smoke, matrix, stack) or to the --log file of audit, guard and watch, unless
    --debug.

    Exit codes: 0 clean, 1 findings of severity error, 2 bad input or usage (the message names the file and
    byte offset), 3 the environment failed (a download, a server start, a remote call), 4 (watch) the watched
    job failed or vanished without a final state, 70 an internal error (a bug in splitaudit: please report it
    with the --debug traceback).
    """
    ctx.obj = Context(as_json=as_json, progress=ConsoleProgress(), debug=debug)


@main.command()
@click.option("--matrix", is_flag=True,
              help="Also install what `splitaudit matrix` runs: Flink 1.16.3 and the reference pipeline of Beam "
                   "2.54.0, 2.56.0, 2.59.0 and 2.70.0 (about 1 GB more).")  # fmt: skip
@click.pass_context
def setup(ctx: click.Context, matrix: bool) -> None:
    """Install the stack: the Flink distribution, the Kafka broker jars and the job jars.

    Everything goes to the stack home ($SPLITAUDIT_HOME, else the checkout's .stack/), from PyPI and Maven
    Central; the enumerator patch's jars go into the package itself (package data of splitaudit.patch).
    Components already installed from the same inputs are left alone, so a second run downloads nothing and
    works offline. Setup builds from a checkout of splitaudit's repository (`make setup`); an installed wheel
    already carries the patch's classes and needs no stack for inspect, guard, watch, audit and patch-jar.
    """

    def action(context: Context) -> None:
        from splitaudit.stack import install

        context.output.setup_report(install.setup(context.progress, matrix=matrix))

    run(ctx, action)


WORKDIR = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".splitaudit/stack"),
    show_default=True,
    help="Run directory of the stack: its data, logs, pid files, checkpoints and savepoints.",
)


@main.group()
def stack() -> None:
    """Start, check and stop a local Kafka broker and Flink cluster on 127.0.0.1.

    `up` starts a single-node Kafka broker (KRaft) and a Flink standalone session cluster (JobManager +
    TaskManager with 4 slots) on free ports, with everything they write kept in --workdir. `down` stops exactly
    the processes `up` started, by the pid files in --workdir, even after the caller crashed.
    """


@stack.command("up")
@WORKDIR
@click.option(
    "--object-store",
    is_flag=True,
    help="Also start an S3-compatible object store (S3Proxy) and keep Flink's checkpoints and savepoints "
    "in its bucket (s3://splitaudit/flink/…); its endpoint and credentials are in WORKDIR/stack.json.",
)
@click.option("--spark-workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="Also start a Spark standalone cluster (a master and this many workers, one core each) for "
                   "`audit --master spark://127.0.0.1:PORT`.")  # fmt: skip
@click.pass_context
def stack_up(ctx: click.Context, workdir: Path, object_store: bool, spark_workers: int) -> None:
    """Start Kafka and Flink (and an object store, a Spark cluster); print their addresses. Refuses if the run
    directory's stack is running."""
    from splitaudit.stack.stack import Stack

    stack = Stack(workdir.resolve(), object_store=object_store, spark_workers=spark_workers)
    run(ctx, lambda context: context.output.stack_status(stack.up(context.progress)), workdir / LIBRARIES_LOG)


@stack.command("status")
@WORKDIR
@click.option(
    "--spark",
    "spark_master",
    metavar="MASTER",
    default=None,
    help="Also start a Spark session on MASTER (e.g. 'local[*]') and run a query, as a health check.",
)
@click.pass_context
def stack_status(ctx: click.Context, workdir: Path, spark_master: str | None) -> None:
    """Show each process of the stack, its pid, address and health. Exit 3 if any is down."""

    def action(context: Context) -> int:
        from splitaudit.stack.results import StackStatus
        from splitaudit.stack.stack import Stack

        status = Stack(workdir.resolve()).status()
        if spark_master is not None:
            from splitaudit.stack.spark import spark_check  # imports pyspark: only when asked for

            status = StackStatus(status.workdir, (*status.services, spark_check(spark_master, workdir.resolve())))
        context.output.stack_status(status)
        return EXIT_CLEAN if status.up else EXIT_ENVIRONMENT

    run(ctx, action, workdir / LIBRARIES_LOG)


@stack.command("down")
@WORKDIR
@click.pass_context
def stack_down(ctx: click.Context, workdir: Path) -> None:
    """Stop the processes `up` started (by their pid files); data, logs and savepoints stay in place."""
    from splitaudit.stack.stack import Stack

    run(
        ctx,
        lambda context: context.output.stack_status(Stack(workdir.resolve()).down(context.progress)),
        workdir / LIBRARIES_LOG,
    )


# Options shared by the commands that run a scenario in a run directory of their own.
RUN_DIR = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run directory (default: .splitaudit/runs/<UTC time>). Must not hold an earlier run.",
)
PARTITIONS = click.option("--partitions", default=4, show_default=True, help="Partitions of the topic.")


def _topic_counts(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[int, ...]:
    """`--partitions 4` (one topic) or `--partitions 5,2` (two topics): the partitions of each topic."""
    try:
        counts = tuple(int(item) for item in value.split(","))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not N or N,N,… (partitions of each topic)") from None
    if any(count < 1 for count in counts):
        raise click.BadParameter(f"{value!r}: every topic needs at least one partition")
    return counts


def _first_and_more(counts: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    """`--partitions` counts as ScenarioSettings takes them: the first topic's, then the further topics'."""
    return counts[0], counts[1:]


TOPIC_PARTITIONS = click.option(
    "--partitions",
    "topic_partitions",
    default="4",
    show_default=True,
    metavar="N[,N…]",
    callback=_topic_counts,
    help="Partitions of the topic the job reads; comma-separated for a job reading several topics, one count "
    "per topic (5,2: two new topics with 5 and 2 partitions, --records records produced to each).",
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


# The libraries' log file in a run directory (see `main`'s help).
LIBRARIES_LOG = "libraries.log"
LOG_FILE = click.option(
    "--log",
    "log_path",
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where Spark's and the Kafka clients' own logs go (appended; default "
    ".splitaudit/logs/COMMAND-<UTC time>.log; on the console with --debug).",
)


def default_log(command: str) -> Path:
    """The libraries' log file of a `command` run outside a run directory, when `--log` names none."""
    return Path(".splitaudit/logs") / time.strftime(f"{command}-%Y%m%dT%H%M%SZ.log", time.gmtime())


def new_run_dir(workdir: Path | None) -> Path:
    """The run directory a scenario writes to: --workdir, else a new one named after the UTC time."""
    return (workdir or Path(".splitaudit/runs") / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())).resolve()


@main.command()
@RUN_DIR
@PARTITIONS
@click.option("--records", default=10_000, show_default=True, help="Records to produce.")
@PARALLELISM
@KEEP_STACK
@click.pass_context
def smoke(
    ctx: click.Context,
    workdir: Path | None,
    partitions: int,
    records: int,
    parallelism: int,
    keep_stack: bool,
) -> None:
    """Run the smoke scenario end to end and print what happened at each step.

    Brings the stack up in the run directory, creates a topic and produces records, runs a Flink job that
    reads it with checkpointing, takes a savepoint through REST, cancels, restores from the savepoint, checks
    through REST that the restored job names that savepoint as its restore source, and stops the stack.
    """
    from splitaudit.stack.smoke import run_smoke

    run_dir = new_run_dir(workdir)
    run(
        ctx,
        lambda context: context.output.smoke_report(
            run_smoke(
                run_dir,
                context.progress,
                partitions=partitions,
                records=records,
                parallelism=parallelism,
                keep_stack=keep_stack,
            )
        ),
        run_dir / LIBRARIES_LOG,
    )


@main.command("patch-jar")
@click.argument("in_jar", metavar="IN.jar", type=click.Path(path_type=Path))
@click.option("--out", "out_jar", metavar="OUT.jar", required=True, type=click.Path(path_type=Path),
              help="Where to write the patched jar.")  # fmt: skip
@click.option("--force", is_flag=True,
              help="Overwrite OUT.jar if it exists, and patch a jar splitaudit already patched again.")  # fmt: skip
@click.pass_context
def patch_jar_command(ctx: click.Context, in_jar: Path, out_jar: Path, force: bool) -> None:
    """Put the beam#31313 enumerator patch into a shaded Beam-on-Flink job jar.

    Replaces Beam's FlinkSource, FlinkSourceSplitEnumerator, FlinkSourceReaderBase and
    FlinkUnboundedSourceReader classes with the patched build's for the jar's own Beam release, adds the
    classes of partition discovery on restore (after a restore, partitions added to the topic while the job
    was down are read, from earliest; Kafka unreachable fails the job; see beam_pipelines/java/README.md for
    the options) and copies every other entry byte for byte. The release and runner come from the jar's Maven
    metadata (never its name), and its classes must be that release's (SHA-256). Supported: Beam
    2.54.0, 2.56.0 and 2.59.0 with beam-runners-flink-1.16, 2.62.0 with beam-runners-flink-1.19. IN.jar is
    never modified. Refuses (exit 2) jars that are not Beam, have no classic Flink runner, already have the
    upstream fix (Beam 2.70.0 and later), are already patched (unless --force), or are of a release no
    variant is built for.
    """
    from splitaudit.patch.jar import patch_jar

    run(ctx, lambda context: context.output.patch_report(patch_jar(in_jar, out_jar, force)))


@main.command()
@click.option(
    "--variant",
    type=click.Choice(["stock", "patched"]),
    default="patched",
    show_default=True,
    help="Which build of the reference pipeline to run: Beam 2.62.0 as released, or with the patch.",
)
@click.option(
    "--jar",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Run this job jar instead (e.g. one `patch-jar` wrote); --variant then only labels the run.",
)
@RUN_DIR
@TOPIC_PARTITIONS
@BEAM_RECORDS
@PARALLELISM
@RESTORE_PARALLELISM
@KEEP_STACK
@click.option(
    "--kill-taskmanager",
    is_flag=True,
    help="TaskManager-failure variant: kill -9 the TaskManager mid-run instead of savepoint + restore "
    "(the same as --fault taskmanager-kill).",
)
@click.option(
    "--fault",
    type=click.Choice(FAULTS),
    default=None,
    help="Interrupt the running job instead of savepoint + restore: taskmanager-kill (kill -9, Flink fails "
    "over), broker-restart (the Kafka broker stopped and started again while the job reads), jobmanager-kill "
    "(kill -9 the JobManager, start the cluster again, resubmit the job from its latest retained checkpoint).",
)
@click.option(
    "--continuous",
    is_flag=True,
    help="Produce records all along (about 1,000/s after the first N) and cancel 2 s after the savepoint while "
    "they keep arriving: the restored job replays what the first job read in between.",
)
@ADD_PARTITIONS
@click.option("--guard", is_flag=True,
              help="Run `splitaudit guard` before the restore (refusing an unsafe one) and `splitaudit watch` "
                   "after it.")  # fmt: skip
@click.option("--force", is_flag=True,
              help="With --guard: restore even when the guard says unsafe, and let the watch stop the "
                   "job.")  # fmt: skip
@click.pass_context
def scenario(
    ctx: click.Context,
    variant: str,
    jar: Path | None,
    workdir: Path | None,
    topic_partitions: tuple[int, ...],
    records: int,
    parallelism: int,
    restore_parallelism: int | None,
    keep_stack: bool,
    kill_taskmanager: bool,
    fault: str | None,
    continuous: bool,
    added_partitions: int,
    guard: bool,
    force: bool,
) -> None:
    """Run the beam#31313 restore scenario with the reference Beam pipeline and count the sink per partition.

    Brings a stack up in the run directory, produces N records to a new topic, runs the job, savepoints and
    cancels once all N are in the sink, produces N more, restores from the savepoint (at --restore-parallelism N
    when given), waits for all 2N offsets,
    savepoints and cancels again. Then audits the sink and both savepoints on Spark (`splitaudit audit`) and
    prints, per partition, the records expected, sink rows, duplicate rows, missing offsets, records read twice
    within one generation (double assignment: the bug) and records replayed in another generation, with the
    auditor's verdict. With --continuous records keep arriving through the savepoint, the cancellation and the
    restore. With --fault (or --kill-taskmanager) the job is not restored from a savepoint: it is interrupted
    while it reads N/2 more records, recovers, and reads the last N/2. Exits as `audit` does: 0 clean, 1 findings.

    With --guard, `splitaudit guard` judges the restore before it (the savepoint, the jar, the topic) and refuses
    an unsafe one (exit 1); with --force too the restore goes ahead and `splitaudit watch` follows the restored
    job and stops it with a savepoint on a double read (exit 1). A safe restore is watched as well; exit 0 when
    neither found an error.
    """
    from splitaudit.scenario.restore import ScenarioSettings, own_stack, pipeline_jar, run_with_own_stack

    if force and not guard:
        raise click.UsageError("--force overrides the guard's refusal: it needs --guard")
    if guard and (fault is not None or kill_taskmanager or continuous or added_partitions):
        raise click.UsageError("--guard runs the plain savepoint restore: no --fault, --continuous or --add-partitions")
    if kill_taskmanager:
        if fault not in (None, TASKMANAGER_KILL):
            raise click.UsageError(f"--kill-taskmanager is --fault {TASKMANAGER_KILL}, not --fault {fault}")
        fault = TASKMANAGER_KILL
    if fault is not None and (added_partitions or continuous or restore_parallelism is not None):
        raise click.UsageError(
            "--add-partitions, --continuous and --restore-parallelism apply to the savepoint restore, not to a fault"
        )
    if added_partitions and continuous:
        raise click.UsageError("--add-partitions and --continuous do not go together")
    run_dir = new_run_dir(workdir)
    settings = ScenarioSettings(
        *_first_and_more(topic_partitions),
        records=records,
        parallelism=parallelism,
        restore_parallelism=restore_parallelism,
        added_partitions=added_partitions,
        continuous=continuous,
    )

    def action(context: Context) -> int:
        if guard:
            from splitaudit.scenario.watched import run_guarded_restore

            with own_stack(run_dir, context.progress, keep_stack) as stack:
                guarded = run_guarded_restore(
                    stack, run_dir / variant, jar or pipeline_jar(variant), variant, context.progress, settings, force
                )
            context.output.guarded_restore(guarded)
            return guarded.exit_code
        report = run_with_own_stack(
            run_dir, jar or pipeline_jar(variant), variant, context.progress, settings, keep_stack, fault
        )
        context.output.scenario_report(report)
        return report.audit.exit_code

    run(ctx, action, run_dir / LIBRARIES_LOG)


@main.command("python-scenario")
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
    from splitaudit.scenario.portable import PortableSettings, run_portable_with_own_stack
    from splitaudit.scenario.restore import ScenarioSettings

    run_dir = new_run_dir(workdir)
    settings = ScenarioSettings(
        partitions=partitions, records=records, parallelism=parallelism, restore_parallelism=restore_parallelism
    )
    portable = PortableSettings(read=read)

    def action(context: Context) -> int:
        report = run_portable_with_own_stack(run_dir, context.progress, settings, portable, keep_stack)
        context.output.scenario_report(report)
        return report.audit.exit_code

    run(ctx, action, run_dir / LIBRARIES_LOG)


@main.command("users-job-scenario")
@click.option("--variant", type=click.Choice(["stock", "patched"]), required=True, help="The users' job jar to run.")
@click.option(
    "--consumer",
    type=click.Choice(CONSUMERS),
    default="none",
    show_default=True,
    help="How the job's Kafka consumer starts: none (no group.id: auto.offset.reset=latest), group (a group, "
    "offsets committed on checkpoint finalization, earliest), earliest (no group, earliest).",
)
@click.option(
    "--group-offsets",
    type=click.Choice(GROUP_OFFSETS),
    default="committed",
    show_default=True,
    help="With --consumer group, the group's committed offsets after the savepoint, before the guard and the "
    "restore: committed (as the job committed them), deleted (the group deleted: the stock twin starts at the log "
    "start), mid-window (each partition's set half-way through its offsets in a window that closed before the "
    "savepoint: the stock twin re-reads that window in part).",
)
@click.option(
    "--window-seconds", default=2, show_default=True, help="Length of the file sinks' fixed windows (event time)."
)
@click.option("--before", default=500, show_default=True, help="Records per partition before the savepoint.")
@click.option("--down", default=500, show_default=True, help="Records per partition while the job is down.")
@click.option("--after", default=500, show_default=True, help="Records per partition after the restored job runs.")
@click.option("--lineage", is_flag=True, help="Run the job with the lineage kit's columns in its Parquet rows.")
@RUN_DIR
@PARTITIONS
@KEEP_STACK
@click.pass_context
def users_job_scenario(
    ctx: click.Context,
    variant: str,
    consumer: str,
    group_offsets: str,
    window_seconds: int,
    before: int,
    down: int,
    after: int,
    lineage: bool,
    workdir: Path | None,
    partitions: int,
    keep_stack: bool,
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
    from splitaudit.scenario.users_job import UsersJobSettings, run_users_job_with_own_stack

    run_dir = new_run_dir(workdir)
    settings = UsersJobSettings(
        consumer=consumer,
        group_offsets=group_offsets,
        window_seconds=window_seconds,
        partitions=partitions,
        before=before,
        down=down,
        after=after,
        lineage=lineage,
    )

    def action(context: Context) -> int:
        report = run_users_job_with_own_stack(run_dir, variant, context.progress, settings, keep_stack)
        context.output.users_job_report(report)
        return EXIT_CLEAN if report.clean else EXIT_FINDINGS

    run(ctx, action, run_dir / LIBRARIES_LOG)


@main.command()
@RUN_DIR
@TOPIC_PARTITIONS
@BEAM_RECORDS
@PARALLELISM
@RESTORE_PARALLELISM
@ADD_PARTITIONS
@KEEP_STACK
@click.option("--guard", is_flag=True,
              help="Run each side under the guard instead (`scenario --guard`): expected, the guard refuses the "
                   "stock restore and lets the patched one through, and the watch stays silent over it.")  # fmt: skip
@click.pass_context
def demo(
    ctx: click.Context,
    workdir: Path | None,
    topic_partitions: tuple[int, ...],
    records: int,
    parallelism: int,
    restore_parallelism: int | None,
    added_partitions: int,
    keep_stack: bool,
    guard: bool,
) -> None:
    """Show beam#31313 and its fix: the restore scenario with stock Beam 2.62.0, then with the patched jar.

    On one stack in the run directory, each variant produces N records, runs the reference pipeline, savepoints
    and cancels, produces N more and restores from the savepoint (at --restore-parallelism N when given; see
    `splitaudit scenario`), and the Spark auditor judges each run. Prints both sides per partition (records
    expected, sink rows, duplicate rows, missing offsets) and the auditor's verdict: stock is double assignment
    of every partition, patched is clean. Exits 0 when that is what the auditor found, 1 otherwise.

    With --add-partitions K the topic gains K partitions while the job is down, and Beam 2.70.0 (the upstream
    fix; its jar comes from `splitaudit setup --matrix`) runs between the two: expected, stock reads the old
    partitions twice, 2.70.0 never reads the new ones, the patched jar reads every offset exactly once.

    With --guard each side is `scenario --guard` on the one stack: exit 0 when the guard refused the stock
    restore and the patched one was let through with a silent watch, 1 otherwise.
    """
    from splitaudit.scenario.restore import ScenarioSettings, own_stack, pipeline_jar, run_demo

    if guard and added_partitions:
        raise click.UsageError("--guard runs the plain savepoint restore: no --add-partitions")
    run_dir = new_run_dir(workdir)
    settings = ScenarioSettings(
        *_first_and_more(topic_partitions),
        records=records,
        parallelism=parallelism,
        restore_parallelism=restore_parallelism,
        added_partitions=added_partitions,
    )

    def action(context: Context) -> int:
        if guard:
            from splitaudit.scenario.watched import run_guarded_restore

            with own_stack(run_dir, context.progress, keep_stack) as stack:
                sides = [
                    run_guarded_restore(stack, run_dir / v, pipeline_jar(v), v, context.progress, settings, False)
                    for v in ("stock", "patched")
                ]
            for side in sides:
                context.output.guarded_restore(side)
            stock, patched = sides
            as_expected = stock.restore is None and patched.restore is not None and patched.exit_code == EXIT_CLEAN
            return EXIT_CLEAN if as_expected else EXIT_FINDINGS
        report = run_demo(run_dir, context.progress, settings, keep_stack)
        context.output.demo_report(report)
        return EXIT_CLEAN if report.as_expected else EXIT_FINDINGS

    run(ctx, action, run_dir / LIBRARIES_LOG)


@main.command()
@RUN_DIR
@TOPIC_PARTITIONS
@BEAM_RECORDS
@PARALLELISM
@click.option("--releases", default=",".join(MATRIX_FLINK), show_default=True,
              help="Comma-separated Beam releases to run (each on its own Flink: 2.54.0, 2.56.0, 2.59.0 on "
                   "1.16.3; 2.62.0, 2.70.0 on 1.19.3).")  # fmt: skip
@click.pass_context
def matrix(
    ctx: click.Context,
    workdir: Path | None,
    topic_partitions: tuple[int, ...],
    records: int,
    parallelism: int,
    releases: str,
) -> None:
    """The restore scenario on a real cluster for every Beam release reachable here, stock and patched.

    Needs `splitaudit setup --matrix` (Flink 1.16.3 and the reference pipeline of every release). For each
    Flink version one stack is started in the run directory; each release's jars run the scenario of `splitaudit
    scenario` on it and the auditor judges each run. Expected: an affected release's stock jar is double
    assignment of every partition; its patched jar and Beam 2.70.0 (fixed upstream, unpatched) are clean.
    Exits 0 when every run is as expected, 1 otherwise. Takes about 2 minutes per run on an idle laptop.
    """
    from splitaudit.scenario.matrix import run_matrix
    from splitaudit.scenario.restore import ScenarioSettings

    run_dir = new_run_dir(workdir)
    settings = ScenarioSettings(*_first_and_more(topic_partitions), records=records, parallelism=parallelism)
    chosen = tuple(release.strip() for release in releases.split(",") if release.strip())

    def action(context: Context) -> int:
        report = run_matrix(run_dir, context.progress, settings, chosen)
        context.output.matrix_report(report)
        return EXIT_CLEAN if report.as_expected else EXIT_FINDINGS

    run(ctx, action, run_dir / LIBRARIES_LOG)


def _partition_counts(values: tuple[str, ...]) -> tuple[tuple[str | None, int], ...]:
    """`--partitions` values (`N`, `TOPIC=N`, comma-separated or repeated) as (topic or None, N) pairs."""
    counts: list[tuple[str | None, int]] = []
    for item in (part.strip() for value in values for part in value.split(",")):
        topic, _, count = item.rpartition("=")
        try:
            counts.append((topic or None, int(count)))
        except ValueError:
            raise click.BadParameter(f"{item!r} is not N or TOPIC=N", param_hint="--partitions") from None
    return tuple(counts)


SPARK_MASTER = click.option(
    "--master",
    default="local[*]",
    show_default=True,
    help="Spark master: local[*] on a laptop, or a cluster's (spark://host:7077, yarn, k8s://…).",
)
SINK_NAMING = click.option(
    "--sink-naming",
    metavar="TEMPLATE",
    help="How a custom FileNaming names the sink's files, for its ledger: the name with {start} and {end} (ISO "
    "instants or epoch millis), {pane}, {shard}, {shards} and {*} for what varies, e.g. "
    "'weather-{start}-{end}-pane{pane}-{shard}-of-{shards}.parquet'. Default: Beam's own names (TextIO's "
    "W-P-SSSSS-of-NNNNN, FileIO's defaultNaming).",
)
UIDS = click.option(
    "--uid",
    "uids",
    multiple=True,
    metavar="UID",
    help="Only the operator with this uid (repeatable). Flink 1.x files store only operator ids; the id "
    "is computed from the uid (murmur3_128, as Flink does) and the uid is shown beside it.",
)
ALLOW_EXTERNAL_STATE = click.option(
    "--allow-external-state",
    is_flag=True,
    help="Also read state files that the metadata names by absolute path or URI outside the savepoint directory "
    "(entropy-injected S3 paths, file-merging segments). Off by default: nothing outside it is read, and no "
    "path or URI from a file is resolved (no DNS lookup, no connection).",
)


def _size(value: str) -> int:
    """A byte count: digits, optionally followed by K, M or G (powers of 1024)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    number, unit = value[:-1] if value[-1:].upper() in "KMG" else value, value[-1:].upper()
    unit = unit if unit in "KMG" else ""
    if not number.isdigit() or int(number) < 1:
        raise click.BadParameter(f"{value!r} is not a size such as 1073741824, 512M or 2G")
    return int(number) * units[unit]


MAX_FILE_SIZE = click.option(
    "--max-file-size",
    metavar="SIZE",
    default="1G",
    show_default=True,
    callback=lambda _ctx, _param, value: _size(value),
    help="The largest _metadata or state file read (bytes, or with K, M, G); a larger one is bad input (exit 2).",
)


def _identity(sink_key: str | None, source_key: str | None, match_payload: bool) -> IdentityMatch | None:
    """How --sink-key, --source-key and --match-payload map the sink to source records; None: by its columns."""
    if match_payload:
        if source_key:
            raise click.UsageError("--match-payload compares the record values: give no --source-key with it")
        return IdentityMatch.payload(sink_key)
    if bool(sink_key) != bool(source_key):
        raise click.UsageError("give --sink-key and --source-key together (or --match-payload for a pass-through job)")
    return IdentityMatch(sink_key, source_key) if sink_key and source_key else None


@main.command()
@click.option(
    "--savepoint",
    metavar="SP",
    help="A savepoint or checkpoint (dir or its _metadata; local path or s3://, hdfs://, gs:// URI): check that "
    "every partition is held by exactly one split, and find sink records past its next offsets.",
)
@click.option(
    "--before",
    metavar="SP0",
    help="An earlier savepoint of the same job (needs --savepoint): rewinds, dropped and new partitions.",
)
@click.option(
    "--sink",
    metavar="PATH",
    help="The job's output: a directory or file of sink records, as the job wrote it (Beam's windowed names with "
    "':', its .temp-beam folders and compressed files by suffix: .gz, .bz2, .zst, .deflate).",
)
@click.option(
    "--sink-format",
    type=click.Choice(SINK_FORMATS),
    default="parquet",
    show_default=True,
    help="How the sink is stored (JSON means JSON lines; CSV needs a header row; text: one row per line, in a "
    "`value` column). kafka: --sink is a topic of the --bootstrap cluster whose record values are JSON objects "
    "with the coordinate (and lineage) fields.",
)
@SINK_NAMING
@click.option(
    "--watermark-delay",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="How far the job's watermark may trail its records' Kafka time (KafkaIO withLogAppendTime: 2 s when "
    "caught up; withCreateTime(maxDelay): maxDelay): with --before, windows ending this long before the job's "
    "watermark at that savepoint had closed, and a file written for one after it is a rewrite.",
)
@click.option("--topic-col", default="topic", show_default=True, help="Sink column holding the Kafka topic.")
@click.option("--partition-col", default="partition", show_default=True, help="Sink column holding the partition.")
@click.option("--offset-col", default="offset", show_default=True, help="Sink column holding the record's offset.")
@click.option(
    "--bootstrap",
    metavar="HOST:PORT",
    help="The source topic's Kafka cluster: its partitions (admin API) for the assignment check, the offsets "
    "that really exist for the gaps (transaction markers and compaction are not loss), expired records "
    "(log start above the savepoint's next offset) and lag. With --sink-format kafka, also the sink's cluster.",
)
@click.option("--topic", "topics", metavar="T", multiple=True,
              help="A source topic; repeat it (or separate with commas) for several (default: every topic the "
                   "savepoint's sources read).")  # fmt: skip
@click.option(
    "--group",
    metavar="G",
    help="A consumer group (needs --bootstrap): its committed offsets against the savepoint's next offsets and "
    "the sink's processed ones.",
)
@click.option(
    "--partitions",
    metavar="N|TOPIC=N",
    multiple=True,
    help="The topic has partitions 0..N-1 (N: the one source topic; TOPIC=N, repeated or comma-separated, per "
    "topic): partitions the savepoint holds nowhere are reported missing. --bootstrap asks Kafka instead; "
    "without either the list comes from the sink, else from the enumerator's checkpoint. The report says which.",
)
@click.option(
    "--sink-key",
    metavar="EXPR",
    help="A sink without the source's coordinates: a Spark SQL expression over the sink's columns giving each "
    "row's record identity (e.g. `timestamp`), matched to --source-key's over the source records (needs "
    "--bootstrap). With --match-payload: the sink column holding the record value (default `value`).",
)
@click.option(
    "--source-key",
    metavar="EXPR",
    help="The same identity over each source record as Spark's Kafka source gives it (key, value, topic, "
    "partition, offset, timestamp, headers), e.g. `get_json_object(CAST(value AS STRING), '$.timestamp')`. "
    "Both sides are compared as text.",
)
@click.option(
    "--match-payload",
    is_flag=True,
    help="A pass-through job's sink: the identity is the record's whole value (the sink's `value` column, or "
    "--sink-key's), so no expressions are needed.",
)
@click.option(
    "--jar",
    metavar="JOB.jar",
    help="The jar the job was restored with (needs --before): evidence for classifying duplicates of a sink "
    "without lineage (an unfixed FlinkSource re-reads restored splits).",
)
@UIDS
@ALLOW_EXTERNAL_STATE
@MAX_FILE_SIZE
@click.option(
    "--exactly-once",
    is_flag=True,
    help="Declare the sink exactly-once: replays after a restore, and sink records past the savepoint's next "
    "offsets, become errors instead of warnings.",
)
@SPARK_MASTER
@LOG_FILE
@click.option(
    "--html",
    "html_path",
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the findings as a self-contained HTML page to FILE (a new file in an existing folder).",
)
@click.pass_context
def audit(
    ctx: click.Context,
    savepoint: str | None,
    before: str | None,
    sink: str | None,
    sink_format: str,
    sink_naming: str | None,
    watermark_delay: float,
    topic_col: str,
    partition_col: str,
    offset_col: str,
    bootstrap: str | None,
    topics: tuple[str, ...],
    group: str | None,
    partitions: tuple[str, ...],
    sink_key: str | None,
    source_key: str | None,
    match_payload: bool,
    jar: str | None,
    uids: tuple[str, ...],
    allow_external_state: bool,
    max_file_size: int,
    exactly_once: bool,
    master: str,
    log_path: Path | None,
    html_path: Path | None,
) -> None:
    """Audit a Flink savepoint's Kafka split assignment and the job's sink, on Spark.

    Give --savepoint, --sink or both (a sink alone is a valid audit: any Kafka consumer's output). Spark starts
    only for a sink: the savepoint checks run without it (a savepoint-only audit starts no JVM).

    \b
    Savepoint: a partition held by two splits or subtasks, held by a reader and also pending in the
      enumerator, or held by nobody (error). With --before: a partition whose next offset went backwards
      (rewind), or that was dropped (error) or is new (info).
    Several topics: every check works per (topic, partition); --bootstrap reads every topic the savepoint's
      sources read (or each --topic).
    Sink: duplicate (topic, partition, offset) keys, classified by the lineage columns reader_id and attempt
      (and job_id) when present, per generation (a job_id and attempt; the attempt alone without job_id):
      double assignment (two readers within one generation, an error) or replay (one reader in each of several
      generations: a restore or failover, a warning unless --exactly-once); missing offsets: with --bootstrap
      the offsets that exist in the topic but not in the sink, else those between a partition's lowest and
      highest sink offset (dense offsets assumed, and the report says so).
    Both: sink records at or past the savepoint's next offsets, which a restore from it reads again.
    A sink whose coordinates name only topics no source reads is refused (exit 2): they are its own, not its
      source's. Rows of other topics beside source ones are left out (not_a_source_topic, info).
    Your own job's sink (no coordinates): --sink-key/--source-key (or --match-payload) with --bootstrap map each
      row to the source record carrying its identity, then every check above runs on those coordinates;
      unmatched_sink_rows and ambiguous_source_identity (error) say what could not be mapped. Without lineage,
      --before (the savepoint the job was restored from) and --jar classify duplicates by where their runs
      start and end: double assignment or replay, marked classified_by "inferred" with the evidence.
    Kafka (--bootstrap, --group): records deleted before the job read them (log start above the offset it
      resumes from: loss), committed group offsets that disagree with the savepoint or the sink, and lag.
    File sinks: the ledger of Beam's windowed file names (window, pane, shard, rows, size, time; "ledger" in
      the JSON): files left in .temp-beam folders (unfinalized_files), absent shards and panes. With --before,
      the files written after that savepoint for windows that closed before it (rewritten_files: a restored job
      re-read those windows and replaced their files) and, with --bootstrap, their records held once though read
      twice (masked_duplicates) or lost with the replaced file (lost_by_rewrite).

    --html FILE also writes one page (no external resources) with the summary, the partition x subtask
    assignment matrix, per-partition offset-coverage bars and the findings; it never overwrites FILE.

    Exit 0 clean, 1 findings of severity error, 2 bad input.
    """
    request = AuditRequest(
        sink=sink,
        sink_format=sink_format,
        columns=SinkColumns(topic_col, partition_col, offset_col),
        savepoint=savepoint,
        before=before,
        savepoint_options=SavepointOptions(uids, allow_external_state, max_file_size),
        topics=tuple(t.strip() for item in topics for t in item.split(",") if t.strip()),
        partitions=_partition_counts(partitions),
        bootstrap=bootstrap,
        group=group,
        exactly_once=exactly_once,
        master=master,
        identity=_identity(sink_key, source_key, match_payload),
        jar=jar,
        sink_naming=sink_naming,
        watermark_delay=watermark_delay,
    )

    def action(context: Context) -> int:
        from splitaudit.report.html import check_html_target, write_html

        if html_path is not None:
            check_html_target(html_path)  # before the audit, not after an hour of Spark
        from splitaudit.audit.run import run_audit  # imports pyspark: only when auditing

        findings = run_audit(request, context.progress)
        context.output.findings(findings)
        if html_path is not None:
            with context.progress.step(f"write the HTML report {html_path}"):
                write_html(html_path, findings, "splitaudit audit of " + " and ".join(filter(None, (savepoint, sink))))
        return findings.exit_code

    run(ctx, action, log_path or default_log("audit"))


@main.command()
@click.option("--savepoint", metavar="SP", required=True,
              help="The savepoint or checkpoint the job will restore from (dir or its _metadata).")  # fmt: skip
@click.option("--jar", "jar", metavar="JOB.jar", required=True, type=click.Path(path_type=Path),
              help="The job jar that will restore it.")  # fmt: skip
@click.option("--bootstrap", metavar="HOST:PORT",
              help="The source topics' Kafka cluster: partitions no split covers, offsets expired unread, "
                   "the backlog, the read's group's committed offsets and offsets at its startReadTime, and "
                   "so the offsets an unfixed jar reads twice.")  # fmt: skip
@click.option("--parallelism", type=int, default=None, metavar="N",
              help="The parallelism of the restored job, when it differs from the savepoint's.")  # fmt: skip
@click.option("--sink", metavar="DIR",
              help="The job's file sink directory (Beam's windowed names): with --bootstrap, name the window files "
                   "a re-read of windows closed before the savepoint will rewrite.")  # fmt: skip
@SINK_NAMING
@MAX_FILE_SIZE
@LOG_FILE
@click.pass_context
def guard(
    ctx: click.Context,
    savepoint: str,
    jar: Path,
    bootstrap: str | None,
    parallelism: int | None,
    sink: str | None,
    sink_naming: str | None,
    max_file_size: int,
    log_path: Path | None,
) -> None:
    """Before a restore: say what restoring SP with JOB.jar will do to the data.

    \b
    From the jar's own contents: its Beam release, Flink runner and enumerator build, and whether its reader
      finalizes checkpoints (commits offsets; 2.56 on). An affected Beam (2.52 up to the fix) without the
      upstream fix or splitaudit's patch gives every partition a FlinkSource savepoint holds a second, twin
      reader (beam#31313): error per partition, with `splitaudit patch-jar` as the remedy. Where the twin
      starts comes from the job's KafkaIO consumer config in the savepoint: startReadTime, else the group's
      committed offset (group.id set and an offset committed), else auto.offset.reset (earliest: the log
      start; latest, KafkaIO's default: the log end at the restore). Every offset from there on is read twice,
      every record produced after the restore included; with --bootstrap the part already in the topic is
      counted exactly (the `twins` of --json say the start and the fact that decided it).
    Warnings on consumer settings that lose or never commit offsets (beam#21742): enable.auto.commit without
      commitOffsetsInFinalize, auto.offset.reset=latest without committed offsets, commitOffsetsInFinalize on
      a release that never finalizes (2.52-2.55).
    With --bootstrap: partitions of the topic no split covers are never read after the restore unless the
      jar's enumerator discovers partitions on restore (error, else info); a savepoint next offset below the
      log start means records expired unread (error); the backlog is shown (info).
    A twin that starts below the savepoint's offsets re-reads records read before it (warning per partition,
      with --bootstrap their Kafka times): a job windowing by Kafka time fires their closed windows again, and
      a file sink with deterministic names rewrites those files (masked duplicates; losses in the window
      re-read from inside). --sink DIR names the window files that will be written again.
    With --parallelism N different from the savepoint's: Beam's legacy UnboundedSourceWrapper state is list
      state Flink hands out whole, no split dropped (info); on the FlinkSource path a jar with the fix hands
      the splits out again (info). A portable pipeline's splittable-DoFn read (keyed state) moves its
      residuals with their key groups (info), but a change to or from parallelism 1 changes the id of the
      uid-less Impulse it starts from, and Flink refuses the restore (error).

    Prints the findings and one line a CI step can read ("splitaudit-guard: safe …" or "splitaudit-guard:
    UNSAFE errors=N kinds=…"). Exit 0 safe, 1 unsafe, 2 bad input.
    """

    def action(context: Context) -> int:
        from splitaudit.guard.predict import run_guard

        naming = None if sink_naming is None else NamingTemplate.custom(sink_naming)
        report = run_guard(
            savepoint, jar, bootstrap, parallelism, context.progress, max_file_size, sink=sink, sink_naming=naming
        )
        context.output.guard_report(report)
        return report.exit_code

    run(ctx, action, log_path or default_log("guard"))


@main.command()
@click.option(
    "--flink-rest", metavar="URL", required=True, help="The Flink cluster's REST address, e.g. http://127.0.0.1:8081."
)
@click.option("--job", "job_id", metavar="JOB_ID", default=None,
              help="The job to watch, e.g. just restored; with --wait it may not be listed yet (a job id fixed at "
                   "submission: REST run's jobId, $internal.pipeline.job-id).")  # fmt: skip
@click.option("--savepoint", metavar="PATH|URI", default=None,
              help="The savepoint the job restores from: its offsets are read before the job runs; without --job "
                   "the watch follows the unfinished job Flink says restored from it.")  # fmt: skip
@click.option("--wait", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Seconds to wait for the job to be listed: start the watch, then submit the restore, and it "
                   "polls from the job's first second.")  # fmt: skip
@click.option("--bootstrap", metavar="HOST:PORT",
              help="The source topics' Kafka cluster: compares what each partition's readers read with what it "
                   "holds past the restored offset, and checks those offsets against the log start.")  # fmt: skip
@click.option("--on-error", type=click.Choice(ACTIONS), default=STOP, show_default=True,
              help="What to do on the first error: stop the job with a savepoint, cancel it, or report "
                   "only.")  # fmt: skip
@click.option("--interval", type=click.FloatRange(min=0.1), default=0.25, show_default=True,
              help="Seconds between polls of the job's metrics.")  # fmt: skip
@click.option("--duration", type=click.FloatRange(min=0), default=None,
              help="Stop watching this many seconds after the job is listed (default: until the job ends or an "
                   "error is acted on).")  # fmt: skip
@click.option("--savepoint-dir", metavar="DIR", default=None,
              help="Where stop-with-savepoint writes (default: the cluster's state.savepoints.dir).")  # fmt: skip
@click.option("--probe", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="For this many seconds after the job's first records are read, trigger a checkpoint after each "
                   "poll (Flink 1.19+ REST) to judge its counts at once instead of at the job's next checkpoint: "
                   "catches a twin reader sooner, at the price of extra checkpoints.")  # fmt: skip
@click.option("--rest-timeout", type=click.FloatRange(min=0), default=DEFAULT_REST_TIMEOUT, show_default=True,
              help="Seconds one REST call that Flink answers with HTTP 500/502/503/504, or not at all, is retried "
                   "(backoff from 0.1 s doubling up to 2 s) before it counts: as the job gone, or as the error "
                   "it is.")  # fmt: skip
@LOG_FILE
@click.pass_context
def watch(
    ctx: click.Context,
    flink_rest: str,
    job_id: str | None,
    savepoint: str | None,
    wait: float,
    bootstrap: str | None,
    on_error: str,
    interval: float,
    duration: float | None,
    savepoint_dir: str | None,
    probe: float,
    rest_timeout: float,
    log_path: Path | None,
) -> None:
    """After a restore: follow a running Beam-on-Flink job and stop it when it reads a partition twice.

    \b
    Each poll reads the source vertex's per-subtask metrics through Flink's REST API:
      partition_read_twice: Beam KafkaIO's per-partition reader metric on two subtasks (two readers);
      read_more_than_advanced: a partition's readers had read more records than a checkpoint taken after
      the poll (read here) holds it advanced past the offset the job restored it from (--savepoint, else
      Flink's latest.restored): one reader cannot, so this catches beam#31313's twin reader early;
      read_more_than_available (with --bootstrap): they read more records than the partition holds past
      that offset (late: only once the backlog is read).
    With --bootstrap also expired_unread: restored offsets below the log start.
    Flink serves metrics refreshed every metrics.fetcher.update-interval (10 s by default) and job and
    checkpoint details every web.refresh-interval (3 s): set them to 100-500 ms on the cluster for a fast
    watch.

    Every finding is written at once as a JSON line on stdout, and again whenever its figure grows; on the
    first error the job is stopped with a savepoint (default), cancelled or only reported (the watch then
    follows the job to its end). A restart of the job (a TaskManager lost) is followed as a new attempt.

    \b
    When the job ends (or --duration does), the final tally (with --bootstrap): per partition, the records read
    twice since the restore, from each attempt's last counts against the partition's offsets from where it
    started to its end offset, as read_twice findings. A figure is exact when the counts had stayed steady for
    two of Flink's metric refresh intervals before the end; otherwise a lower bound, and the tally says why.

    \b
    Ends with one line a CI step can read: "splitaudit-watch: silent state=…", "splitaudit-watch: ERROR
    kinds=… after=…s action=… state=…" or "splitaudit-watch: LOST state=failed|suspended|gone reason=…".
    Exit 0 silent (the job finished, was cancelled or stopped with a savepoint, or still runs), 1 an error
    found, 4 nothing found but the job failed, was suspended or vanished (404, or REST silent for
    --rest-timeout) without a final state. Flink's server-side traces are shown in one escaped line (all of
    them with --debug).
    """

    def action(context: Context) -> int:
        from splitaudit.guard.watch import WatchSettings, run_watch

        settings = WatchSettings(
            flink_rest,
            job_id,
            bootstrap,
            on_error,
            interval,
            duration,
            savepoint_dir,
            savepoint,
            wait,
            probe,
            rest_timeout,
        )

        def emit(event: WatchEvent) -> None:
            sys.stdout.write(json.dumps(event.to_json()) + "\n")
            sys.stdout.flush()

        report = run_watch(settings, context.progress, emit)
        context.output.watch_report(report)
        return report.exit_code

    run(ctx, action, log_path or default_log("watch"))


@main.command()
@click.argument("before", metavar="SP0")
@click.argument("after", metavar="SP1")
@UIDS
@ALLOW_EXTERNAL_STATE
@MAX_FILE_SIZE
@click.pass_context
def diff(
    ctx: click.Context,
    before: str,
    after: str,
    uids: tuple[str, ...],
    allow_external_state: bool,
    max_file_size: int,
) -> None:
    """Compare two savepoints of one job: SP0 the earlier, SP1 the later.

    Reports, per source operator and (topic, partition): a next offset that went backwards (rewind: the
    offsets between are read again; error), a partition SP1 no longer holds (dropped: error), and one only
    SP1 holds (new: info). Exit 0 clean, 1 findings of severity error, 2 bad input. The savepoints are read in
    pure Python: no Spark starts.
    """
    options = SavepointOptions(uids, allow_external_state, max_file_size)

    def action(context: Context) -> int:
        from splitaudit.audit.run import run_diff

        findings = run_diff(before, after, options, context.progress)
        context.output.findings(findings)
        return findings.exit_code

    run(ctx, action)


@main.command()
@click.argument("path")
@UIDS
@click.option("--json", "as_json", is_flag=True, help="Print the JSON document (same as the global --json).")
@ALLOW_EXTERNAL_STATE
@MAX_FILE_SIZE
@click.pass_context
def inspect(
    ctx: click.Context,
    path: str,
    uids: tuple[str, ...],
    as_json: bool,
    allow_external_state: bool,
    max_file_size: int,
) -> NoReturn:
    """Show the source split state of a Flink savepoint or checkpoint, without a JVM.

    PATH is a savepoint/checkpoint directory or its _metadata file: a local path or an s3://, hdfs://, gs://
    or file: URI. Reads Flink 1.11-2.3 metadata (versions 3-6, tolerates 7) and decodes, per source subtask,
    the splits it held: Flink NumberSequenceSource, Flink KafkaSource, Beam FlinkSourceSplit (KafkaIO) and
    Beam UnboundedSourceWrapper state; anything else is shown as hex. The enumerator checkpoint of each
    source coordinator is decoded the same way. KafkaIO's splittable-DoFn read (Python's ReadFromKafka on
    the portable runner) is read from keyed state: one beam_kafka_sdf split per partition, its restriction
    [from, to) and the subtask and key group holding it. Nothing is written; no Java class is ever loaded.

    The console shows one row per (subtask, split, topic, partition) with its next and stopping offsets, and the
    enumerator's splits the same way; every split's full state is in --json.

    With the global --json, prints one document: {path, format_version, checkpoint_id, kind,
    savepoint_format, operators: [{id, uid, name, parallelism, max_parallelism, source}]}.
    Only regular files are read, each at most --max-file-size and, for a state file, exactly as large as its
    state handle says. Exit code 2 (with the file and byte offset) when the input is corrupt or unreadable.
    """

    if as_json:
        ctx.obj = replace(ctx.obj, as_json=True)

    def action(context: Context) -> None:
        from splitaudit.savepoint_view import inspect_savepoint

        context.output.savepoint_view(inspect_savepoint(path, uids, allow_external_state, max_file_size))

    run(ctx, action)
