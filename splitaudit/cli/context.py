"""What a command runs in: the top-level options (`Context`) and `run`, which maps an action's result or error
to an exit code and shows it through the Output."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import NoReturn

import click

from splitaudit.errors import EXIT_CLEAN, EXIT_ENVIRONMENT, SplitauditError, missing_extra
from splitaudit.logs import log_libraries_to
from splitaudit.progress import ConsoleProgress
from splitaudit.report.output import JsonOutput, Output


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


def fail(ex: SplitauditError) -> NoReturn:
    """Show an error found before a command's action runs (a settings group whose options do not combine) as `run`
    shows one, and exit with its code."""
    context: Context = click.get_current_context().obj
    context.output.exception(ex, context.debug)
    sys.exit(ex.exit_code)


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
