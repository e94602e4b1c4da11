"""Every command and every option of the CLI explains itself in --help."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from splitaudit.cli import main


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found: list[tuple[tuple[str, ...], click.Command]] = [(prefix, group)]
    context = click.Context(group)
    # The top-level group imports its commands' modules when asked for them (`cli/group.py`).
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None
        if isinstance(command, click.Group):
            found.extend(_commands(command, (*prefix, name)))
        else:
            found.append(((*prefix, name), command))
    return found


COMMANDS = _commands(main)


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) or "splitaudit" for p, _ in COMMANDS])
def test_every_command_and_option_has_help(path: tuple[str, ...], command: click.Command) -> None:
    assert command.help, f"{' '.join(path)} has no help text"
    for param in command.params:
        if isinstance(param, click.Option) and param.name not in {"help", "version"}:
            assert param.help, f"option {param.opts} of {' '.join(path) or 'splitaudit'} has no help"
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0
    assert "Usage:" in result.output


def test_the_stack_commands_are_there() -> None:
    result = CliRunner().invoke(main, ["stack", "--help"])
    for command in ("up", "status", "down"):
        assert f"  {command} " in result.output


def test_status_of_a_directory_without_a_stack_is_a_usage_error(tmp_path: object) -> None:
    result = CliRunner().invoke(main, ["stack", "status", "--workdir", str(tmp_path)])
    assert result.exit_code == 2
    assert "no stack in" in result.output
    assert "Traceback" not in result.output
