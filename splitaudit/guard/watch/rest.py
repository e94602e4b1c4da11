"""Flink's REST API as the watch asks it: each call retried while Flink answers 500/502/503/504 or not at all (up to
`rest_timeout` seconds, the retries counted as `RestFault`s), the job's lifecycle phase and why it ended, and what
the watch needs of the JobManager's configuration."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from splitaudit.clients.flink import FlinkRestClient, FlinkRestError, FlinkUnreachableError, error_line
from splitaudit.errors import printable
from splitaudit.guard.lifecycle import (
    ENDED,
    FAILED,
    GONE,
    NOT_FOUND,
    duration_seconds,
    highly_available,
    job_phase,
    retry_delays,
    transient,
)
from splitaudit.guard.results import RestFault

WAIT_INTERVAL = 0.1  # seconds between looks for the job while it is not listed yet
END_TIMEOUT = 120.0  # seconds to wait for a job stopped or cancelled by the watch to reach its final state
# Flink refreshes the metrics REST serves every `metrics.fetcher.update-interval` (10 s unless set): counts are
# final once steady for two of those intervals (and at least this long).
FETCHER_OPTION, DEFAULT_FETCHER_INTERVAL, SHORTEST_QUIET = "metrics.fetcher.update-interval", 10.0, 1.0

T = TypeVar("T")


@dataclass
class JobRest:
    """How the watch asks Flink: the client, how long a failing call is retried, the retries so far, and the job's
    last answered state (or why it is taken for gone)."""

    flink: FlinkRestClient
    rest_timeout: float
    faults: dict[tuple[str, str], RestFault] = field(default_factory=dict)  # retried REST answers, by call and answer
    state: str | None = None  # Flink's last answered state of the job
    gone: str | None = None  # why the job is taken for gone

    def ask(self, call: str, answer: Callable[[], T]) -> T:
        """`answer()` (the REST call named `call`), retried on an internal error, an unavailable server or no
        answer, with backoff, until `rest_timeout` seconds have passed since the first attempt (the attempts' own
        time counted, no wait past that deadline); then its last error is raised."""
        deadline = time.monotonic() + self.rest_timeout
        delays = iter(retry_delays(self.rest_timeout))
        while True:
            try:
                return answer()
            except (FlinkRestError, FlinkUnreachableError) as ex:
                delay, left = next(delays, None), deadline - time.monotonic()
                if not transient(ex.status) or delay is None or left <= 0:
                    raise
                if isinstance(ex, FlinkRestError):
                    what = f"HTTP {ex.status}: {printable(error_line(ex.flink_errors))}"
                else:
                    what = str(ex)
                fault = self.faults.get((call, what), RestFault(call, what, 0, ex.detail))
                self.faults[(call, what)] = RestFault(call, what, fault.times + 1, fault.detail)
                time.sleep(min(delay, left))

    def phase(self, job: str) -> tuple[str, dict[str, Any]]:
        """The job's lifecycle phase and its details (GET /jobs/:id): `gone` when Flink no longer knows it or its
        REST API stopped answering within `rest_timeout`."""
        try:
            document = self.ask(f"GET /jobs/{job}", lambda: self.flink.job(job))
        except FlinkRestError as ex:
            if ex.status != NOT_FOUND and not transient(ex.status):
                raise
            kept = f"REST kept failing for {self.rest_timeout:g} s"
            self.gone = f"{'Flink no longer knows the job' if ex.status == NOT_FOUND else kept}: {ex}"
            return GONE, {}
        except FlinkUnreachableError as ex:
            self.gone = f"no answer for {self.rest_timeout:g} s: {ex}"
            return GONE, {}
        self.state = str(document.get("state"))
        return job_phase(self.state), document

    def await_end(self, job: str) -> str:
        """Wait (up to `END_TIMEOUT` seconds) for the job to end; its phase then (still running: timed out)."""
        deadline = time.monotonic() + END_TIMEOUT
        phase, _ = self.phase(job)
        while phase not in ENDED and time.monotonic() < deadline:
            time.sleep(WAIT_INTERVAL)
            phase, _ = self.phase(job)
        return phase

    def ending(self, job: str, phase: str) -> str | None:
        """Why the job failed (Flink's root exception, its first line) or is taken for gone; None otherwise."""
        if phase == GONE:
            return self.gone
        if phase != FAILED:
            return None
        try:
            root = self.ask(f"GET /jobs/{job}/exceptions", lambda: self.flink.job_exceptions(job))
        except (FlinkRestError, FlinkUnreachableError) as ex:
            return f"Flink did not say why: {ex}"
        return printable(root.strip().splitlines()[0]) if root.strip() else "Flink did not say why"

    def configured(self) -> tuple[float, bool]:
        """What the watch needs of the JobManager's configuration: how long counts must stay steady to be final
        (two of its metric fetcher intervals), and whether the cluster is highly available."""
        try:
            config = self.ask("GET /jobmanager/config", self.flink.jobmanager_config)
        except (FlinkRestError, FlinkUnreachableError):
            config = {}
        interval = duration_seconds(config.get(FETCHER_OPTION, "")) or DEFAULT_FETCHER_INTERVAL
        return max(SHORTEST_QUIET, 2 * interval), highly_available(config)
