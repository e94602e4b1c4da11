"""The top-level `splitaudit` click group: its global options (--json, --debug, --version), its help, and where each
command lives.

The group knows every command by name and the module that defines it, and imports that module only when the
command runs or a help lists it (click's lazy group): `splitaudit inspect` loads the inspect command's module and
nothing of audit, guard or watch. The product's commands are named here (`COMMANDS`); other installed packages
(the lab: setup, stack, demo, scenarios) add theirs through the `splitaudit.commands` entry point group, read only
when a name is not the product's or a help lists every command.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click

from splitaudit.cli.context import Context
from splitaudit.progress import ConsoleProgress

# The product's commands: name -> "module:attribute" of its click command.
COMMANDS: Mapping[str, str] = {
    "audit": "splitaudit.cli.audit:audit",
    "diff": "splitaudit.cli.savepoints:diff",
    "guard": "splitaudit.cli.guard:guard",
    "inspect": "splitaudit.cli.savepoints:inspect",
    "lineage-kit": "splitaudit.cli.patch:lineage_kit_command",
    "patch-jar": "splitaudit.cli.patch:patch_jar_command",
    "watch": "splitaudit.cli.watch:watch",
}
# The entry point group through which other installed packages add commands (name = "module:attribute").
ENTRY_POINT_GROUP = "splitaudit.commands"
# The lab's commands (the splitaudit-lab distribution), named here only to tell a user who runs one without the lab
# which extra installs it.
LAB_COMMANDS = frozenset(
    {"demo", "matrix", "python-scenario", "scenario", "setup", "smoke", "stack", "users-job-scenario"}
)


def _load(target: str) -> click.Command:
    """The click command at `target` ("module:attribute"), its module imported now."""
    module, _, attribute = target.partition(":")
    command = getattr(importlib.import_module(module), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{target} is not a click command")
    return command


class LazyGroup(click.Group):
    """A click group whose commands are imported when run or listed: `commands` maps a name to "module:attribute",
    and the `splitaudit.commands` entry points add more."""

    def __init__(self, *args: Any, lazy: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)
        self._plugins: dict[str, str] | None = None

    def plugins(self) -> Mapping[str, str]:
        """The commands installed packages add (entry points of `ENTRY_POINT_GROUP`), read once."""
        if self._plugins is None:
            from importlib.metadata import entry_points

            self._plugins = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
        return self._plugins

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy, *self.plugins()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        target = self.lazy.get(cmd_name) or self.plugins().get(cmd_name)
        if target is None:
            if cmd_name in LAB_COMMANDS:
                ctx.fail(
                    f"`{cmd_name}` is a command of splitaudit's lab (the embedded stack and its scenarios), which "
                    "the extra [stack] installs: pip install 'splitaudit[stack]'"
                )
            return None
        command = _load(target)
        self.commands[cmd_name] = command
        return command


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
)
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
