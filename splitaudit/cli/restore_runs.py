"""The runs `scenario` and `demo` ask for: their options checked against each other before anything starts
(click.UsageError, exit 2), into a frozen command whose `action` runs it and shows the result."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from splitaudit.cli.context import Context
from splitaudit.cli.scenario_options import first_and_more, new_run_dir
from splitaudit.errors import EXIT_CLEAN, EXIT_FINDINGS
from splitaudit.scenario.results import TASKMANAGER_KILL

if TYPE_CHECKING:
    from splitaudit.scenario.restore import ScenarioSettings


@dataclass(frozen=True)
class ScenarioCommand:
    """What `scenario` runs, its options checked against each other (`scenario_command`)."""

    run_dir: Path
    variant: str
    jar: Path | None  # None: the reference pipeline's jar of `variant`
    settings: ScenarioSettings
    keep_stack: bool
    guard: bool
    force: bool

    def action(self, context: Context) -> int:
        """Run the scenario (under the guard with --guard) on a stack of its own; show the result; its exit code."""
        from splitaudit.scenario.restore import own_stack, pipeline_jar, run_with_own_stack

        variant, settings = self.variant, self.settings
        if self.guard:
            from splitaudit.scenario.watched import run_guarded_restore

            with own_stack(self.run_dir, context.progress, self.keep_stack) as stack:
                jar = self.jar or pipeline_jar(variant)
                guarded = run_guarded_restore(
                    stack, self.run_dir / variant, jar, variant, context.progress, settings, self.force
                )
            context.output.guarded_restore(guarded)
            return guarded.exit_code
        jar = self.jar or pipeline_jar(variant)
        report = run_with_own_stack(self.run_dir, jar, variant, context.progress, settings, self.keep_stack)
        context.output.scenario_report(report)
        return report.audit.exit_code


def scenario_command(
    *,
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
) -> ScenarioCommand:
    """`scenario`'s options as the run they ask for; click.UsageError (exit 2, before anything starts) for
    options that do not combine."""
    from splitaudit.scenario.restore import ScenarioSettings

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
    settings = ScenarioSettings(
        *first_and_more(topic_partitions),
        records=records,
        parallelism=parallelism,
        restore_parallelism=restore_parallelism,
        added_partitions=added_partitions,
        continuous=continuous,
        fault=fault,
    )
    return ScenarioCommand(new_run_dir(workdir), variant, jar, settings, keep_stack, guard, force)


@dataclass(frozen=True)
class DemoCommand:
    """What `demo` runs, its options checked against each other (`demo_command`)."""

    run_dir: Path
    settings: ScenarioSettings
    keep_stack: bool
    guard: bool

    def action(self, context: Context) -> int:
        """Run the stock and the patched side (each under the guard with --guard) on one stack; show both; exit 0
        when each came out as expected."""
        from splitaudit.scenario.restore import own_stack, pipeline_jar, run_demo

        if self.guard:
            from splitaudit.scenario.watched import run_guarded_restore

            with own_stack(self.run_dir, context.progress, self.keep_stack) as stack:
                sides = [
                    run_guarded_restore(
                        stack, self.run_dir / v, pipeline_jar(v), v, context.progress, self.settings, False
                    )
                    for v in ("stock", "patched")
                ]
            for side in sides:
                context.output.guarded_restore(side)
            stock, patched = sides
            as_expected = stock.restore is None and patched.restore is not None and patched.exit_code == EXIT_CLEAN
            return EXIT_CLEAN if as_expected else EXIT_FINDINGS
        report = run_demo(self.run_dir, context.progress, self.settings, self.keep_stack)
        context.output.demo_report(report)
        return EXIT_CLEAN if report.as_expected else EXIT_FINDINGS


def demo_command(
    *,
    workdir: Path | None,
    topic_partitions: tuple[int, ...],
    records: int,
    parallelism: int,
    restore_parallelism: int | None,
    added_partitions: int,
    keep_stack: bool,
    guard: bool,
) -> DemoCommand:
    """`demo`'s options as the run they ask for; click.UsageError (exit 2, before anything starts) for options
    that do not combine."""
    from splitaudit.scenario.restore import ScenarioSettings

    if guard and added_partitions:
        raise click.UsageError("--guard runs the plain savepoint restore: no --add-partitions")
    settings = ScenarioSettings(
        *first_and_more(topic_partitions),
        records=records,
        parallelism=parallelism,
        restore_parallelism=restore_parallelism,
        added_partitions=added_partitions,
    )
    return DemoCommand(new_run_dir(workdir), settings, keep_stack, guard)
