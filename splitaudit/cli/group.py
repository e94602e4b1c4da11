"""The top-level `splitaudit` click group: its global options (--json, --debug, --version) and its help."""

from __future__ import annotations

import click

from splitaudit.cli.context import Context
from splitaudit.progress import ConsoleProgress


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
