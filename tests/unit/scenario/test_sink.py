"""The scenario's sink reader, on the sinks of real small restore runs (fixtures/beam_sink); their counts are
checked through the Spark auditor in tests/integration/test_audit_sink.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from splitaudit_lab.scenario.sink import SINK_SCHEMA, count_rows, read_sink

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "beam_sink"
CASES = ("restore_stock_small", "restore_patched_small")


def _expected(case: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((FIXTURES / case / "expected.json").read_text())
    return document


@pytest.mark.parametrize("case", CASES)
def test_the_reader_reads_every_row(case: str) -> None:
    expected = _expected(case)
    table = read_sink(FIXTURES / case / "sink")
    assert table.schema == SINK_SCHEMA
    assert table.num_rows == count_rows(FIXTURES / case / "sink") == expected["rows"]


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
