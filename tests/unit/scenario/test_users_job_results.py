"""The users'-job scenario's pure parts: the weather records' identities, offset runs, the truth's counts."""

from __future__ import annotations

import json

from splitaudit.scenario.users_job import weather_record
from splitaudit.scenario.users_job_results import OutputTruth, offset_runs, runs_text


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
