"""One declaration per settings group: a decorator that adds a group's click options to a command and hands the
command one validated, frozen object built from them, so an option is written once (here) and checked in one
place (the object's constructor).

`settings(target, build, *options)` makes such a decorator; the groups several commands share are below, a
command's own beside it. A group's options keep their order in `--help`; a group that does not combine (a
`UsageError` from `build`) is shown through the Output like every other error (exit 2), before the command's
action runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from splitaudit.cli.context import fail
from splitaudit.cli.options import ALLOW_EXTERNAL_STATE, MAX_FILE_SIZE, UIDS
from splitaudit.errors import SplitauditError
from splitaudit.savepoint.fileio import SavepointOptions

Command = Callable[..., Any]
Decorator = Callable[[Command], Command]


def _names(options: tuple[Decorator, ...]) -> tuple[str, ...]:
    """The parameter names `options` give a command (each click option's Python name)."""

    def probe() -> None: ...

    for option in options:
        option(probe)
    return tuple(str(param.name) for param in getattr(probe, "__click_params__", ()))


def settings(target: str, build: Callable[..., object], *options: Decorator) -> Decorator:
    """A decorator adding `options` to a command and passing it `target=build(**their values)` instead of them."""
    names = _names(options)

    def decorate(command: Command) -> Command:
        @functools.wraps(command)
        def with_settings(*args: Any, **kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in names}
            try:
                kwargs[target] = build(**values)
            except SplitauditError as ex:
                fail(ex)
            return command(*args, **kwargs)

        decorated: Command = with_settings
        for option in reversed(options):
            decorated = option(decorated)
        return decorated

    return decorate


# How savepoints are read: `savepoint_options`, a SavepointOptions (inspect, diff, audit).
SAVEPOINT_OPTIONS = settings("savepoint_options", SavepointOptions, UIDS, ALLOW_EXTERNAL_STATE, MAX_FILE_SIZE)
