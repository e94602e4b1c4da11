"""`scenario`, `demo` and `matrix`: the beam#31313 restore scenario with the reference pipeline, once, stock
against patched, and for every Beam release."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from splitaudit.cli.context import Context, run
from splitaudit.cli.options import LIBRARIES_LOG
from splitaudit.errors import EXIT_CLEAN, EXIT_FINDINGS
from splitaudit.home import MATRIX_FLINK
from splitaudit_lab.cli.output import output
from splitaudit_lab.cli.restore_runs import DemoCommand, ScenarioCommand
from splitaudit_lab.cli.scenario_options import (
    BEAM_RECORDS,
    INTERRUPTED_SCENARIO_SETTINGS,
    KEEP_STACK,
    PARALLELISM,
    RUN_DIR,
    SCENARIO_SETTINGS,
    TOPIC_PARTITIONS,
    new_run_dir,
)


@click.command()
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
@INTERRUPTED_SCENARIO_SETTINGS
@KEEP_STACK
@click.option("--guard", is_flag=True,
              help="Run `splitaudit guard` before the restore (refusing an unsafe one) and `splitaudit watch` "
                   "after it.")  # fmt: skip
@click.option("--force", is_flag=True,
              help="With --guard: restore even when the guard says unsafe, and let the watch stop the "
                   "job.")  # fmt: skip
@click.pass_context
def scenario(ctx: click.Context, /, workdir: Path | None, keep_stack: bool, **options: Any) -> None:
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
    command = ScenarioCommand(new_run_dir(workdir), keep_stack, options)
    run(ctx, command.action, command.run_dir / LIBRARIES_LOG)


@click.command()
@RUN_DIR
@SCENARIO_SETTINGS
@KEEP_STACK
@click.option("--guard", is_flag=True,
              help="Run each side under the guard instead (`scenario --guard`): expected, the guard refuses the "
                   "stock restore and lets the patched one through, and the watch stays silent over it.")  # fmt: skip
@click.pass_context
def demo(ctx: click.Context, /, workdir: Path | None, keep_stack: bool, **options: Any) -> None:
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
    command = DemoCommand(new_run_dir(workdir), keep_stack, options)
    run(ctx, command.action, command.run_dir / LIBRARIES_LOG)


@click.command()
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
    run_dir = new_run_dir(workdir)
    chosen = tuple(release.strip() for release in releases.split(",") if release.strip())

    def action(context: Context) -> int:
        from splitaudit_lab.scenario.matrix import run_matrix
        from splitaudit_lab.scenario.restore import ScenarioSettings, first_and_more

        settings = ScenarioSettings(*first_and_more(topic_partitions), records=records, parallelism=parallelism)
        report = run_matrix(run_dir, context.progress, settings, chosen)
        output(context).matrix_report(report)
        return EXIT_CLEAN if report.as_expected else EXIT_FINDINGS

    run(ctx, action, run_dir / LIBRARIES_LOG)
