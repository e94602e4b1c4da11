"""The one polling helper: returns the first real answer, ends early on an exception, times out clearly."""

from __future__ import annotations

import time

import pytest

from splitaudit.errors import ExternalError
from splitaudit.polling import PollTimeoutError, poll


def test_poll_returns_the_first_answer_that_is_not_none_or_false() -> None:
    answers = iter([None, False, 0, "ready"])
    # 0 is an answer: only None and False mean "not yet".
    assert poll("an answer", lambda: next(answers), timeout=5, interval=0.0) == 0


def test_poll_times_out_naming_what_it_waited_for_and_what_it_saw() -> None:
    calls: list[float] = []

    def never() -> None:
        calls.append(time.monotonic())

    started = time.monotonic()
    with pytest.raises(PollTimeoutError) as failure:
        poll("the broker", never, timeout=0.3, interval=0.1, last_seen=lambda: "3 of 4")
    assert 0.3 <= time.monotonic() - started < 1.0
    assert str(failure.value) == "timed out after 0.3 s waiting for the broker; last seen: 3 of 4"
    assert isinstance(failure.value, ExternalError)  # exit 3: the environment, not the input
    assert 3 <= len(calls) <= 5  # about every 0.1 s, and once more at the deadline


def test_poll_checks_once_even_with_no_time_left() -> None:
    assert poll("x", lambda: True, timeout=0) is True


def test_an_exception_from_the_check_ends_the_wait_at_once() -> None:
    def failed() -> bool:
        raise ExternalError("job FAILED")

    with pytest.raises(ExternalError, match="job FAILED"):
        poll("x", failed, timeout=60)
