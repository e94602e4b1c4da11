"""Progress of long steps (downloads, builds, server starts), always on stderr so stdout stays clean JSON."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


class Progress:
    """Reports the steps of a long operation; the base class reports nothing (library and test use)."""

    @contextmanager
    def step(self, message: str) -> Iterator[None]:
        """Wrap one step; implementations show it starting and how long it took."""
        yield

    def info(self, message: str) -> None:
        """One line of detail inside the current step."""


class ConsoleProgress(Progress):
    """Progress on stderr through rich: a spinner while a step runs, then its wall time.

    rich is imported when the first step starts: a command that reports no progress (`inspect`) never pays for it.
    """

    def __init__(self, console: Console | None = None) -> None:
        self._console = console

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            # Step messages name files and topics: never read as markup or emoji.
            self._console = Console(stderr=True, highlight=False, markup=False, emoji=False)
        return self._console

    @contextmanager
    def step(self, message: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            with self.console.status(message):
                yield
        except BaseException:
            self.console.print(_done("✗", "red", message, time.monotonic() - started))
            raise
        self.console.print(_done("✓", "green", message, time.monotonic() - started))

    def info(self, message: str) -> None:
        from rich.text import Text

        self.console.print(Text(f"  {message}", "dim"))


def _done(mark: str, colour: str, message: str, seconds: float) -> Text:
    from rich.text import Text

    return Text.assemble((mark, colour), f" {message} ", (f"({seconds:.1f} s)", "dim"))


@dataclass(frozen=True)
class TimedStep:
    """One step of a scenario as its report keeps it: name, wall time, and what it produced."""

    name: str
    seconds: float
    result: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "seconds": self.seconds, "result": self.result}


class StepLog:
    """Runs the steps of a scenario under a Progress, timing each and keeping what it produced for the report."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.done: list[TimedStep] = []

    @contextmanager
    def step(self, name: str) -> Iterator[list[str]]:
        """Yield a list the step appends its results to; they are joined into the step's `result`."""
        result: list[str] = []
        started = time.monotonic()
        with self.progress.step(name):
            yield result
        self.done.append(TimedStep(name, time.monotonic() - started, "; ".join(result)))
