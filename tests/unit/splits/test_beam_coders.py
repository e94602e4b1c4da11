"""Beam's state namespace keys, as the users' job's window operators wrote them (Beam 2.62.0 on Flink 1.19.3)."""

import pytest

from splitaudit.splits.beam_coders import window_of_namespace

# Seen in the keyed state of a real run's savepoint (tests/integration/test_users_job.py, 4 s windows): the `buf`
# and `_timer_state/event_beam-timer` namespace of the window whose files Beam named
# `weather2026-11-29T01:58:44.000Z-2026-11-29T01:58:48.000Z-...`.
SEEN = "/gAABoiUGu8CgHw/"
SEEN_WINDOW = (1_795_917_524_000, 1_795_917_528_000)


def test_a_window_namespace_names_its_interval_window() -> None:
    assert window_of_namespace(SEEN) == SEEN_WINDOW


def test_a_window_and_trigger_namespace_names_the_same_window() -> None:
    assert window_of_namespace(SEEN[:-1] + "/1/") == SEEN_WINDOW  # WindowAndTriggerNamespace: /<window>/<index>/


@pytest.mark.parametrize(
    "key",
    [
        "//",  # the global window's namespace
        "/abc/",  # base64 of two bytes: no Instant
        "/gAABoiUGu8CgHwA/",  # a byte past the span
        "gAABoiUGu8CgHw",  # not a namespace key
        "/gAABoiUGu8CgHw/1/2/",
    ],
)
def test_other_keys_name_no_interval_window(key: str) -> None:
    assert window_of_namespace(key) is None
