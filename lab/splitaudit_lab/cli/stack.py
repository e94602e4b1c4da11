"""`setup`, `stack up|status|down` and `smoke`: install the stack, run it, check it end to end."""

from __future__ import annotations

from pathlib import Path

import click

from splitaudit.cli.context import Context, run
from splitaudit.cli.options import LIBRARIES_LOG
from splitaudit.errors import EXIT_CLEAN, EXIT_ENVIRONMENT
from splitaudit_lab.cli.output import output
from splitaudit_lab.cli.scenario_options import KEEP_STACK, PARALLELISM, PARTITIONS, RUN_DIR, new_run_dir


@click.command()
@click.option("--matrix", is_flag=True,
              help="Also install what `splitaudit matrix` runs: Flink 1.16.3 and the reference pipeline of Beam "
                   "2.54.0, 2.56.0, 2.59.0 and 2.70.0 (about 1 GB more). Only in a checkout.")  # fmt: skip
@click.pass_context
def setup(ctx: click.Context, matrix: bool) -> None:
    """Install the stack: the Flink distribution, the Kafka broker, Spark's connectors, the object store and the
    demo's job jars.

    Everything goes to the stack home ($SPLITAUDIT_HOME, else the checkout's .stack/, else
    $XDG_DATA_HOME/splitaudit). The embedded stack (Flink 1.19.3, Kafka 3.9.1, Spark's Kafka and Avro connectors,
    S3Proxy and Flink's S3 plugin) is the files the stack lock inside the package names, from PyPI and Maven Central
    ($SPLITAUDIT_MAVEN_REPOSITORY for a mirror), each checked against its size and SHA-256; setup first says what
    it will download and how large. It needs neither pip nor Maven, so an installed wheel sets it up too; Spark's
    connectors need pyspark (the extra [spark]) and are skipped without it. From a wheel, the demo's job jars are
    assembled from the reference pipeline's jar in the package and its dependencies from Maven Central (the lock's
    demo-pipeline), as Maven's shade plugin assembles them; a checkout builds them, the patch's jars (into the
    package itself), the users' job and the Python pipeline's environment from its sources with Maven and uv
    (`make setup`). Components already installed from the same inputs are left alone, so a second run downloads
    nothing and works offline.
    """

    def action(context: Context) -> None:
        from splitaudit_lab.stack import install

        output(context).setup_report(install.setup(context.progress, matrix=matrix))

    run(ctx, action)


WORKDIR = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".splitaudit/stack"),
    show_default=True,
    help="Run directory of the stack: its data, logs, pid files, checkpoints and savepoints.",
)


@click.group()
def stack() -> None:
    """Start, check and stop a local Kafka broker and Flink cluster on 127.0.0.1.

    `up` starts a single-node Kafka broker (KRaft) and a Flink standalone session cluster (JobManager +
    TaskManager with 4 slots) on free ports below the kernel's ephemeral range (from 15000: outgoing connections
    take their local ports inside it), with everything they write kept in --workdir. `down` stops exactly
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
    from splitaudit_lab.stack.stack import Stack

    stack = Stack(workdir.resolve(), object_store=object_store, spark_workers=spark_workers)
    run(ctx, lambda context: output(context).stack_status(stack.up(context.progress)), workdir / LIBRARIES_LOG)


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
        from splitaudit_lab.stack.results import StackStatus
        from splitaudit_lab.stack.stack import Stack

        status = Stack(workdir.resolve()).status()
        if spark_master is not None:
            from splitaudit_lab.stack.spark import spark_check  # imports pyspark: only when asked for

            status = StackStatus(status.workdir, (*status.services, spark_check(spark_master, workdir.resolve())))
        output(context).stack_status(status)
        return EXIT_CLEAN if status.up else EXIT_ENVIRONMENT

    run(ctx, action, workdir / LIBRARIES_LOG)


@stack.command("down")
@WORKDIR
@click.pass_context
def stack_down(ctx: click.Context, workdir: Path) -> None:
    """Stop the processes `up` started (by their pid files); data, logs and savepoints stay in place."""
    from splitaudit_lab.stack.stack import Stack

    run(
        ctx,
        lambda context: output(context).stack_status(Stack(workdir.resolve()).down(context.progress)),
        workdir / LIBRARIES_LOG,
    )


@click.command()
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
    from splitaudit_lab.stack.smoke import run_smoke

    run_dir = new_run_dir(workdir)
    run(
        ctx,
        lambda context: output(context).smoke_report(
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
