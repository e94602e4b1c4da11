"""The restore-scenario savepoints (fixtures/beam_flink_source) decode to what their scenario says they hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from splitaudit.savepoint_view import inspect_savepoint

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "beam_flink_source"
CASES = sorted(path.name for path in FIXTURES.iterdir() if (path / "expected.json").is_file())


def _without_watermarks(source: dict[str, Any]) -> dict[str, Any]:
    """The decoded source state minus the checkpoint marks' watermarks, which depend on the run's clock."""
    for split in source["reader_splits"]:
        for mark in split["split"]["checkpoint"]["partitions"]:
            del mark["watermark_millis"]
    return source


def test_all_four_cases_are_there() -> None:
    assert CASES == ["restore_patched_after", "restore_patched_before", "restore_stock_after", "restore_stock_before"]


@pytest.mark.parametrize("case", CASES)
def test_source_state_is_what_the_scenario_left(case: str) -> None:
    expected = json.loads((FIXTURES / case / "expected.json").read_text())
    view = inspect_savepoint(str(FIXTURES / case)).to_json()
    assert (view["kind"], view["savepoint_format"]) == (expected["kind"], expected["savepoint_format"])
    sources = [operator for operator in view["operators"] if operator["source"] is not None]
    assert len(sources) == 1
    assert sources[0]["parallelism"] == expected["parallelism"]
    assert _without_watermarks(sources[0]["source"]) == expected["source"]
