"""The watched job's lifecycle: every answer Flink's REST API gives about a job mapped onto the few phases a
watch acts on, and how long a watch keeps asking while the API fails.

A job being cancelled, stopped with a savepoint or recovering from a JobManager restart can make Flink answer
`GET /jobs/:id` with HTTP 500 (e.g. `java.util.concurrent.CancellationException` from its job cache) or 503, or
not answer at all, for a moment: such answers are retried with a bounded exponential backoff (as Flink's own
`RestClusterClient` does with `rest.retry.max-attempts` and `rest.retry.delay`), and only classified once the
budget is spent. Everything here is pure: the watch asks, this module decides.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# The phases of a watched job. `running` is every state of a job that has not begun to end (Flink's CREATED,
# INITIALIZING, RECONCILING and RUNNING); `restarting` a new attempt after a failure (FAILING, RESTARTING);
# `gone` a job Flink no longer knows (HTTP 404 after it left the history) or whose REST API stopped answering.
RUNNING, RESTARTING, CANCELLING = "running", "restarting", "cancelling"
CANCELLED, FINISHED, FAILED, SUSPENDED, GONE = "cancelled", "finished", "failed", "suspended", "gone"
ENDED_NORMALLY = frozenset({CANCELLED, FINISHED})  # cancelled, stopped with a savepoint, or bounded input read
ENDED_ABNORMALLY = frozenset({FAILED, SUSPENDED, GONE})  # no final state the user asked for
ENDED = ENDED_NORMALLY | ENDED_ABNORMALLY

# Flink's JobStatus (1.19) → phase. SUSPENDED is a JobManager losing leadership: in a highly available cluster
# another JobManager (or this one, leading again) recovers the job, and the watch follows it (`ends_watch`); without
# high availability nothing will, and the job is lost.
_PHASE_OF_STATE = {
    "CREATED": RUNNING,
    "INITIALIZING": RUNNING,
    "RECONCILING": RUNNING,
    "RUNNING": RUNNING,
    "FAILING": RESTARTING,
    "RESTARTING": RESTARTING,
    "CANCELLING": CANCELLING,
    "CANCELED": CANCELLED,
    "FINISHED": FINISHED,
    "FAILED": FAILED,
    "SUSPENDED": SUSPENDED,
}

# Why an attempt of the watched job began: the restore itself; Flink restarting the job from its latest
# checkpoint after a failure; the adaptive scheduler restarting it at another parallelism (a rescale); a new
# JobManager recovering it from its latest checkpoint (a failover in a highly available cluster).
RESTORED, RESTART, RESCALE, FAILOVER = "restored", "restart", "rescale", "failover"

# HTTP statuses a JobManager answers while it is busy ending a job or restarting: worth asking again.
TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
NOT_FOUND = 404

# The backoff between retries: the first wait, its growth per retry, and the longest single wait.
FIRST_DELAY, GROWTH, LONGEST_DELAY = 0.1, 2.0, 2.0
DEFAULT_REST_TIMEOUT = 30.0  # seconds a watch keeps retrying one failing REST call
# The longest a watch waits for one answer: long enough for a busy JobManager's largest document, short enough that
# a JobManager that accepts connections and never answers costs one attempt, not the client's minute.
SHORTEST_REQUEST_TIMEOUT, LONGEST_REQUEST_TIMEOUT = 10.0, 60.0


def job_phase(state: str) -> str:
    """The phase of a job in Flink's `state` (GET /jobs/:id or /jobs/overview). A state a later Flink may add
    is not taken for an end: the watch keeps following the job."""
    return _PHASE_OF_STATE.get(state, RUNNING)


def ends_watch(phase: str, recoverable: bool) -> bool:
    """Whether the job in `phase` has ended for the watch: every end but a suspended job that is `recoverable`
    (a highly available cluster, where a JobManager leading after this one recovers it from its latest checkpoint:
    a failover, not suspended for longer than the watch's --rest-timeout yet)."""
    return phase in ENDED and not (phase == SUSPENDED and recoverable)


def highly_available(config: Mapping[str, str]) -> bool:
    """Whether a JobManager's configuration (GET /jobmanager/config) makes the cluster highly available:
    `high-availability.type` (Flink 1.19; `high-availability` before) set to anything but NONE."""
    mode = config.get("high-availability.type", config.get("high-availability", "NONE"))
    return mode.strip().upper() not in ("", "NONE")


def new_attempt_cause(before: tuple[int, int], now: tuple[int, int]) -> str | None:
    """Why the running job is a new attempt, from (start time, source parallelism) at the attempt before and now
    (`GET /jobs/:id`'s `start-time` and the source vertex's `parallelism`); None when neither changed. A rescale
    changes the parallelism; a new JobManager recovering the job initialises it anew, so its start time changes,
    which a restart by the same JobManager never does."""
    if now[1] != before[1]:
        return RESCALE
    return FAILOVER if now[0] != before[0] else None


def transient(status: int | None) -> bool:
    """Whether a failed REST call is worth repeating: no answer at all (`None`: refused, reset, timed out) or an
    internal error / unavailable answer."""
    return status is None or status in TRANSIENT_STATUSES


def request_timeout(budget: float) -> float:
    """How long a watch with a retry `budget` (--rest-timeout) waits for one answer: the budget, but at least
    `SHORTEST_REQUEST_TIMEOUT` and at most `LONGEST_REQUEST_TIMEOUT`. A failing call then ends at most one such
    wait after the budget is spent."""
    return min(max(budget, SHORTEST_REQUEST_TIMEOUT), LONGEST_REQUEST_TIMEOUT)


def retry_delays(budget: float) -> tuple[float, ...]:
    """The waits between the attempts of one failing REST call, exponential from `FIRST_DELAY` up to
    `LONGEST_DELAY` each, together exactly `budget` seconds (the last one shortened to fit); none for 0."""
    delays: list[float] = []
    left, delay = budget, FIRST_DELAY
    while left > 1e-9:
        step = min(delay, left)
        delays.append(round(step, 6))
        left -= step
        delay = min(delay * GROWTH, LONGEST_DELAY)
    return tuple(delays)


def duration_seconds(text: str) -> float | None:
    """A Flink duration option's value in seconds (`TimeUtils.parseDuration`: a number, milliseconds without a
    unit, or with one of its units: `100 ms`, `10s`, `1 min`); None when it is not one."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zµ]*)\s*", text.lower())
    if match is None:
        return None
    number, unit = float(match.group(1)), match.group(2)
    for names, seconds in _UNITS:
        if unit in names:
            return number * seconds
    return None


_UNITS = (
    (("", "ms", "milli", "millis", "millisecond", "milliseconds"), 1e-3),
    (("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1e-9),
    (("us", "µs", "micro", "micros", "microsecond", "microseconds"), 1e-6),
    (("s", "sec", "secs", "second", "seconds"), 1.0),
    (("m", "min", "minute", "minutes"), 60.0),
    (("h", "hour", "hours"), 3600.0),
    (("d", "day", "days"), 86400.0),
)
