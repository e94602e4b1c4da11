"""The users'-job scenario's pure parts: the weather records' identities, offset runs, the truth's counts, windows
and where `mid-window` cuts them."""

from __future__ import annotations

import json

import pytest

from splitaudit.errors import ExternalError, UsageError
from splitaudit_lab.scenario.users_job import (
    UsersJobSettings,
    mid_window_offsets,
    weather_record,
    window_of,
)
from splitaudit_lab.scenario.users_job_results import MidWindowOffset, OutputTruth, offset_runs, runs_text, window_text


def test_offset_runs_join_consecutive_offsets() -> None:
    assert offset_runs([5, 0, 2, 1, 1, 9, 10]) == ((0, 2), (5, 5), (9, 10))
    assert offset_runs([]) == ()
    assert runs_text(((0, 2), (5, 5))) == "0..2, 5"
    assert runs_text(()) == "-"


def test_every_weather_record_carries_its_own_timestamp() -> None:
    records = [json.loads(weather_record(i)[1]) for i in range(20_000)]
    assert len({r["timestamp"] for r in records}) == 20_000
    assert records[0] == {"station": "Aberdeen", "timestamp": "2025-06-01T00:00:00.000000Z", "temperature": -5.0,
                          "rainfall": 0.0}  # fmt: skip
    assert records[19_999]["timestamp"] == "2025-06-01T00:00:00.019999Z"
    assert weather_record(8)[0] == "Bergen"  # the key is the station


def test_output_truth_counts_extra_rows_against_offsets_present() -> None:
    # 600 offsets produced, 590..599 missing, 200..399 in the output twice: 590 + 200 rows.
    truth = OutputTruth(rows=790, produced_offsets=600, read_twice=((200, 399),), read_more=(), missing=((590, 599),))
    assert (truth.read_twice_count, truth.missing_count, truth.extra_rows) == (200, 10, 200)
    assert truth.to_json()["read_twice_ranges"] == [[200, 399]]


def test_window_of_is_beams_fixed_window() -> None:
    assert window_of(1748736003999, 2000) == (1748736002000, 1748736004000)
    assert window_of(1748736004000, 2000) == (1748736004000, 1748736006000)
    assert window_text((1748736002000, 1748736004000)) == "2025-06-01T00:00:02.000Z-2025-06-01T00:00:04.000Z"


def test_mid_window_cuts_each_partition_half_way_through_one_closed_window() -> None:
    # Partition 0: offsets 0..9 at 1.0 s + 0.1 s each (windows of 2 s: 0..9 in [0, 2), 10..19 in [2, 4));
    # partition 1 is one record behind in time: its window [2, 4) holds 9..19.
    times = {(0, o): 1000 + 100 * o for o in range(20)} | {(1, o): 1100 + 100 * o for o in range(20)}
    chosen = mid_window_offsets(times, {0: (0, 19), 1: (0, 19)}, 2000)
    # The window of partition 0's middle offset 9 is [0, 2 s): 0..9 there (cut at 5), 0..8 of partition 1 (cut at 4).
    assert chosen == (MidWindowOffset(0, 5, (0, 2000), (0, 9)), MidWindowOffset(1, 4, (0, 2000), (0, 8)))


def test_mid_window_needs_two_records_of_every_partition_in_the_window() -> None:
    times = {(0, 0): 100, (0, 1): 200, (0, 2): 300, (1, 0): 100, (1, 1): 2500}
    with pytest.raises(ExternalError, match="partition 1 has 1 records in window"):
        mid_window_offsets(times, {0: (0, 2), 1: (0, 1)}, 2000)


def test_group_offsets_other_than_committed_need_the_group_consumer() -> None:
    UsersJobSettings(consumer="group", group_offsets="mid-window")
    UsersJobSettings(consumer="none", group_offsets="committed")
    with pytest.raises(UsageError) as refused:
        UsersJobSettings(consumer="earliest", group_offsets="deleted")
    assert str(refused.value) == "--group-offsets deleted needs --consumer group (a group to treat)"


@pytest.mark.parametrize(
    ("consumer", "group_offsets", "message"),
    [
        ("latest", "committed", "--consumer must be one of none, group, earliest, not 'latest'"),
        ("group", "reset", "--group-offsets must be one of committed, deleted, mid-window, not 'reset'"),
    ],
)
def test_a_library_caller_gets_the_choices_the_cli_offers(consumer: str, group_offsets: str, message: str) -> None:
    with pytest.raises(UsageError) as refused:
        UsersJobSettings(consumer=consumer, group_offsets=group_offsets)
    assert str(refused.value) == message
