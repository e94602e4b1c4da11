"""The watched job's lifecycle as pure decisions: Flink's job states onto phases, which REST failures are retried
and for how long, Flink durations."""

from __future__ import annotations

import pytest

from splitaudit.clients.flink import FlinkRestError, error_line
from splitaudit.guard.lifecycle import (
    CANCELLED,
    CANCELLING,
    ENDED_ABNORMALLY,
    ENDED_NORMALLY,
    FAILED,
    FINISHED,
    GONE,
    RESTARTING,
    RUNNING,
    SUSPENDED,
    duration_seconds,
    ends_watch,
    highly_available,
    job_phase,
    new_attempt_cause,
    retry_delays,
    transient,
)


@pytest.mark.parametrize(
    ("state", "phase"),
    [
        ("CREATED", RUNNING),
        ("INITIALIZING", RUNNING),
        ("RUNNING", RUNNING),
        ("RECONCILING", RUNNING),
        ("FAILING", RESTARTING),
        ("RESTARTING", RESTARTING),
        ("CANCELLING", CANCELLING),
        ("CANCELED", CANCELLED),
        ("FINISHED", FINISHED),
        ("FAILED", FAILED),
        ("SUSPENDED", SUSPENDED),
        ("SOME_LATER_STATE", RUNNING),  # not taken for an end
    ],
)
def test_every_flink_job_state_maps_onto_a_phase(state: str, phase: str) -> None:
    assert job_phase(state) == phase


def test_normal_ends_are_cancelled_and_finished_the_rest_are_lost() -> None:
    assert {CANCELLED, FINISHED} == ENDED_NORMALLY
    assert {FAILED, SUSPENDED, GONE} == ENDED_ABNORMALLY


def test_a_suspended_job_ends_the_watch_unless_the_cluster_is_highly_available() -> None:
    assert ends_watch(SUSPENDED, False)
    assert not ends_watch(SUSPENDED, True)  # a JobManager leading next recovers it: a failover
    assert all(ends_watch(phase, True) for phase in (CANCELLED, FINISHED, FAILED, GONE))
    assert not any(ends_watch(phase, False) for phase in (RUNNING, RESTARTING, CANCELLING))


@pytest.mark.parametrize(
    ("config", "available"),
    [
        ({}, False),
        ({"high-availability.type": "NONE"}, False),
        ({"high-availability.type": "zookeeper"}, True),
        ({"high-availability": "ZOOKEEPER"}, True),  # the key before Flink 1.19
        ({"high-availability.type": "org.example.MyHaServicesFactory"}, True),
    ],
)
def test_high_availability_is_any_mode_but_none(config: dict[str, str], available: bool) -> None:
    assert highly_available(config) == available


@pytest.mark.parametrize(("status", "retried"), [(None, True), (500, True), (502, True), (503, True), (504, True),
                                                 (400, False), (404, False), (409, False)])  # fmt: skip
def test_no_answer_and_server_errors_are_retried_client_errors_not(status: int | None, retried: bool) -> None:
    assert transient(status) is retried


def test_the_backoff_doubles_from_a_tenth_up_to_two_seconds_and_spends_exactly_the_budget() -> None:
    assert retry_delays(0) == ()
    assert retry_delays(1.0) == (0.1, 0.2, 0.4, 0.3)
    delays = retry_delays(30.0)
    assert delays[:6] == (0.1, 0.2, 0.4, 0.8, 1.6, 2.0)
    assert set(delays[5:-1]) == {2.0}
    assert sum(delays) == pytest.approx(30.0)
    assert len(delays) == 19  # 3.1 s in the first five, then 13 of 2 s and the last 0.9 s


# Flink 1.19's answer to GET /jobs/:id while the job is being cancelled by a savepoint (abridged).
CANCELLATION = [
    "Internal server error.",
    "<Exception on server side:\njava.util.concurrent.CancellationException\n\tat java.base/java.util.concurrent"
    ".CompletableFuture.cancel(CompletableFuture.java:2510)\n\tat org.apache.flink.runtime.rest.handler.legacy"
    ".DefaultExecutionGraphCache.getExecutionGraphInfo(DefaultExecutionGraphCache.java:70)\n\nEnd of exception on "
    "server side>",
]


def test_a_server_side_trace_is_one_line_naming_its_exceptions() -> None:
    assert error_line(CANCELLATION) == "Internal server error. (java.util.concurrent.CancellationException)"
    caused = ["Internal server error.", "org.x.RestHandlerException: Could not execute application.\n\tat a.B(B.java:1)"
              "\nCaused by: java.io.FileNotFoundException: no 'sp-0'\n\tat c.D(D.java:2)"]  # fmt: skip
    assert error_line(caused) == (
        "Internal server error. (org.x.RestHandlerException: Could not execute application.; "
        "Caused by: java.io.FileNotFoundException: no 'sp-0')"
    )
    assert error_line(["Job not found."]) == "Job not found."
    assert error_line([]) == "(no error text)"


def test_a_rest_error_is_one_escaped_line_with_the_whole_text_as_its_detail() -> None:
    error = FlinkRestError("GET", "http://127.0.0.1:1/jobs/j", 500, [*CANCELLATION, "\x1b[31m"])
    assert str(error) == (
        "Flink REST GET http://127.0.0.1:1/jobs/j → HTTP 500: Internal server error. "
        "(java.util.concurrent.CancellationException)"
    )
    assert "\n" not in str(error)
    assert error.detail is not None
    assert "DefaultExecutionGraphCache" in error.detail
    escaped = FlinkRestError("GET", "u", 400, ["bad \x1b[31mname\r"])
    assert str(escaped) == "Flink REST GET u → HTTP 400: bad \\x1b[31mname"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("100", 0.1), ("100 ms", 0.1), ("500ms", 0.5), ("10 s", 10.0), ("10s", 10.0), ("1 min", 60.0), ("2h", 7200.0),
     ("3 weeks", None), ("fast", None), ("", None)],
)  # fmt: skip
def test_flink_durations_read_as_timeutils_parses_them(text: str, seconds: float | None) -> None:
    assert duration_seconds(text) == (None if seconds is None else pytest.approx(seconds))


def test_a_new_attempt_is_a_rescale_when_its_parallelism_changed_a_failover_when_its_start_time_did() -> None:
    assert new_attempt_cause((100, 2), (100, 2)) is None
    assert new_attempt_cause((100, 2), (100, 4)) == "rescale"
    assert new_attempt_cause((100, 2), (250, 2)) == "failover"
    assert new_attempt_cause((100, 2), (250, 1)) == "rescale"
