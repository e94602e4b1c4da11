"""The `splitaudit` command line: click commands that compute a result and hand it to an Output."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

import click

from splitaudit.errors import EXIT_CLEAN, SplitauditError
from splitaudit.report.output import ConsoleOutput, JsonOutput, Output
from splitaudit.report.progress import ConsoleProgress


@dataclass(frozen=True)
class Context:
    """What every command gets from the top-level options."""

    output: Output
    progress: ConsoleProgress
    debug: bool


def run(ctx: click.Context, action: Callable[[Context], int | None]) -> NoReturn:
    """Run one command's action; map SplitauditError to its exit code, show it through the Output."""
    context: Context = ctx.obj
    try:
        code = action(context)
    except SplitauditError as ex:
        context.output.exception(ex, context.debug)
        sys.exit(ex.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
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

    Exit codes: 0 clean, 1 findings of severity error, 2 bad input or usage (the message names the file and
    byte offset), 3 the environment failed (a download, a server start, a remote call).
    """
    ctx.obj = Context(output=JsonOutput() if as_json else ConsoleOutput(), progress=ConsoleProgress(), debug=debug)

