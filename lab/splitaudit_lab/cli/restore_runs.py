"""The runs `scenario` and `demo` ask for: a run directory of their own and the request their other options make
(`ScenarioRequest`, `DemoRequest`, which check them), in a frozen command whose `action` makes the request, runs
it and shows the result. The request is made inside the action, so a usage error is shown through the Output."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splitaudit.cli.context import Context
from splitaudit.errors import EXIT_CLEAN, EXIT_FINDINGS
from splitaudit_lab.cli.output import output


@dataclass(frozen=True)
class ScenarioCommand:
    """What `scenario` runs: its run directory, whether the stack stays up, and the rest of its options as click
    parsed them, its settings group made (`ScenarioRequest`)."""

    run_dir: Path
    keep_stack: bool
    options: Mapping[str, Any]

    def action(self, context: Context) -> int:
        """Run the scenario (under the guard with --guard) on a stack of its own; show the result; its exit code."""
        from splitaudit_lab.scenario.request import ScenarioRequest
        from splitaudit_lab.scenario.restore import own_stack, pipeline_jar, run_with_own_stack

        request = ScenarioRequest(**self.options)
        variant, settings = request.variant, request.settings
        jar = request.jar or pipeline_jar(variant)
        if request.guard:
            from splitaudit_lab.scenario.watched import WatchedCase, run_guarded_restore

            with own_stack(self.run_dir, context.progress, self.keep_stack) as stack:
                case = WatchedCase(stack, self.run_dir / variant, jar, variant, settings, context.progress)
                guarded = run_guarded_restore(case, request.force)
            output(context).guarded_restore(guarded)
            return guarded.exit_code
        report = run_with_own_stack(self.run_dir, jar, variant, context.progress, settings, self.keep_stack)
        output(context).scenario_report(report)
        return report.audit.exit_code


@dataclass(frozen=True)
class DemoCommand:
    """What `demo` runs: its run directory, whether the stack stays up, and the rest of its options as click
    parsed them, its settings group made (`DemoRequest`)."""

    run_dir: Path
    keep_stack: bool
    options: Mapping[str, Any]

    def action(self, context: Context) -> int:
        """Run the stock and the patched side (each under the guard with --guard) on one stack; show both; exit 0
        when each came out as expected."""
        from splitaudit_lab.scenario.request import DemoRequest
        from splitaudit_lab.scenario.restore import own_stack, pipeline_jar, run_demo

        request = DemoRequest(**self.options)
        if request.guard:
            from splitaudit_lab.scenario.watched import WatchedCase, run_guarded_restore

            with own_stack(self.run_dir, context.progress, self.keep_stack) as stack:
                sides = [
                    run_guarded_restore(
                        WatchedCase(stack, self.run_dir / v, pipeline_jar(v), v, request.settings, context.progress),
                        force=False,
                    )
                    for v in ("stock", "patched")
                ]
            for side in sides:
                output(context).guarded_restore(side)
            stock, patched = sides
            as_expected = stock.restore is None and patched.restore is not None and patched.exit_code == EXIT_CLEAN
            return EXIT_CLEAN if as_expected else EXIT_FINDINGS
        report = run_demo(self.run_dir, context.progress, request.settings, self.keep_stack)
        output(context).demo_report(report)
        return EXIT_CLEAN if report.as_expected else EXIT_FINDINGS
