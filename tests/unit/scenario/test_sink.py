"""The sink reader and per-partition counts, on the sinks of real small restore runs (fixtures/beam_sink)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from splitaudit.scenario.sink import SINK_SCHEMA, count_rows, partition_counts, read_sink

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "beam_sink"
CASES = ("restore_stock_small", "restore_patched_small")


def _expected(case: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((FIXTURES / case / "expected.json").read_text())
    return document


@pytest.mark.parametrize("case", CASES)
def test_counts_agree_with_an_independent_count(case: str) -> None:
    expected = _expected(case)
    table = read_sink(FIXTURES / case / "sink")
    assert table.schema == SINK_SCHEMA
    assert table.num_rows == count_rows(FIXTURES / case / "sink") == expected["rows"]
    records = {int(p): counts["expected_records"] for p, counts in expected["partitions"].items()}
    counts = partition_counts(table, expected["topic"], records)
    assert {
        str(c.partition): {
            "expected_records": c.expected_records,
            "sink_rows": c.sink_rows,
            "duplicate_keys": c.duplicate_keys,
            "duplicate_rows": c.duplicate_rows,
            "missing_offsets": c.missing_offsets,
            "double_read_offsets": c.double_read_offsets,
        }
        for c in counts
    } == expected["partitions"]
    # A restore from a savepoint taken after everything was read replays nothing: no offset in two attempts.
    assert [c.replayed_offsets for c in counts] == [0, 0, 0, 0]


def test_stock_run_reads_each_partition_twice_after_the_restore() -> None:
    # 200 records before the savepoint and 200 after, 4 partitions: the last 50 offsets of each partition twice.
    partitions = _expected("restore_stock_small")["partitions"]
    assert [(c["sink_rows"], c["duplicate_keys"], c["missing_offsets"], c["double_read_offsets"]) for c in
            partitions.values()] == [(150, 50, 0, 50)] * 4  # fmt: skip


def test_patched_run_reads_every_offset_once() -> None:
    partitions = _expected("restore_patched_small")["partitions"]
    assert [(c["sink_rows"], c["duplicate_keys"], c["missing_offsets"]) for c in partitions.values()] == [
        (100, 0, 0)
    ] * 4


def test_a_missing_sink_is_empty(tmp_path: Path) -> None:
    assert read_sink(tmp_path / "none").num_rows == 0
    assert count_rows(tmp_path / "none") == 0
    counts = partition_counts(read_sink(tmp_path / "none"), "t", {0: 3})
    assert [(c.sink_rows, c.missing_offsets, c.duplicate_keys) for c in counts] == [(0, 3, 0)]
