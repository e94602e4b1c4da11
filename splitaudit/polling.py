"""Waiting for something outside the process: one loop for every wait on a server, a job, a file or a topic.

Every wait in splitaudit (a server coming up, a Flink job reaching a state, a savepoint completing, offsets
arriving in a sink) is `poll(what, check, timeout=…)`, so each one has a deadline and fails the same way: an
`ExternalError` (exit 3) that names what was awaited, for how long, and the last thing seen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from splitaudit.errors import ExternalError

T = TypeVar("T")


class PollTimeoutError(ExternalError):
    """A wait ran out of time; the message names what was awaited and what was last seen."""


def poll(
    what: str,
    check: Callable[[], T | None],
    *,
    timeout: float,
    interval: float = 0.5,
    last_seen: Callable[[], str] | None = None,
) -> T:
    """Call `check` until it returns something other than None or False, and return that.

    `check` may raise to end the wait early (a process died, a job failed). On timeout, `PollTimeoutError` says
    "timed out after N s waiting for <what>", followed by `last_seen()` when given (e.g. "12 of 40 offsets").
    `check` runs at least once, and once more at the deadline.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result is not None and result is not False:
            return result
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(interval, remaining))
    detail = f"; last seen: {last_seen()}" if last_seen is not None else ""
    raise PollTimeoutError(f"timed out after {timeout:g} s waiting for {what}{detail}")
