"""The keyed state planned in parts from `_metadata` alone (`plan_keyed_state`, what the data source's `keyed`
table reads one Spark task per part) gives exactly the rows of the serial `read_keyed_state`, in its order, on
every snapshot of fixtures/keyed/ (Flink 1.16.3 and 1.19.3, parallelism 2: heap and RocksDB canonical
savepoints, heap checkpoints inline and in files, Snappy or not, RocksDB full, incremental and native)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import (
    ByteStreamStateHandle,
    IncrementalRemoteKeyedStateHandle,
    KeyGroupsStateHandle,
    RelativeFileStateHandle,
)
from splitaudit.savepoint_view import key_group_runs, plan_keyed_state, read_keyed_part, read_keyed_state
from tests.unit.conftest import FIXTURES

# The KeyedStateFixtureJob's and AllTypesFixtureJob's snapshots (an expected.json beside each); the churn job's
# incremental chain and its rescaled savepoints (`test_churn_chain`) keep theirs a level deeper.
CASES = sorted(p.name for p in (FIXTURES / "keyed").iterdir() if (p / "expected.json").is_file())
CHAIN = sorted(
    str(m.parent.relative_to(FIXTURES)) for m in (FIXTURES / "keyed").glob("*-incremental-chain/*/*/_metadata")
)


def snapshot_of(case: str) -> tuple[Path, dict[str, Any]]:
    expected = json.loads((FIXTURES / "keyed" / case / "expected.json").read_text())
    return FIXTURES / "keyed" / case / expected["snapshot_dir"], expected


def expected_rows(expected: dict[str, Any]) -> Counter[tuple[str, str]]:
    """Rows per (operator id, state) that KeyedStateFixtureJob's fed values make (expected.json): one per key, per
    map entry (`residues`), per window (`window-contents`: a namespace each) and per timer."""
    rows: Counter[tuple[str, str]] = Counter()
    for operator_id, operator in expected["keyed"].items():
        for state, values in operator["states"].items():
            if isinstance(values, list):  # timers
                rows[operator_id, state] += len(values)
            elif state in ("residues", "window-contents"):
                rows[operator_id, state] += sum(len(value) for value in values.values())
            else:
                rows[operator_id, state] += len(values)
    return +rows


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("part_bytes", [None, 1, 2000])
def test_the_parts_read_exactly_the_serial_rows(case: str, part_bytes: int | None) -> None:
    snapshot, expected = snapshot_of(case)
    serial = list(read_keyed_state(str(snapshot)))
    files = SavepointFiles(str(snapshot))
    parts = plan_keyed_state(files, (), part_bytes)
    assert [row for part in parts for row in read_keyed_part(files, part)] == serial
    if expected["job"].get("class") != "AllTypesFixtureJob":  # its rows: test_all_types_fixture.py
        assert Counter((row.operator_id, row.entry.state) for row in serial) == expected_rows(expected)
    # 2 keyed operators x 2 subtasks: one part per handle, or (key-group handles cut at every key group with
    # bytes) one per non-empty key group.
    handles = [part.handle for part in plan_keyed_state(files)]
    assert len(handles) == 4
    if part_bytes == 1 and all(isinstance(h, KeyGroupsStateHandle) for h in handles):
        assert len(parts) == sum(sum(1 for o in h.offsets if o) for h in handles if isinstance(h, KeyGroupsStateHandle))
    if any(isinstance(h, IncrementalRemoteKeyedStateHandle) for h in handles):
        assert len(parts) == 4  # a RocksDB native snapshot is one part per handle


@pytest.mark.parametrize("snapshot", CHAIN)
def test_the_parts_of_the_churned_chain_read_exactly_the_serial_rows(snapshot: str) -> None:
    files = SavepointFiles(str(FIXTURES / snapshot))
    parts = plan_keyed_state(files, (), 1)
    rows = [row for part in parts for row in read_keyed_part(files, part)]
    assert rows == list(read_keyed_state(str(FIXTURES / snapshot)))
    assert len(parts) == len({(part.operator_id, part.subtask) for part in parts})  # native: a part per handle
    assert rows


def test_the_parts_of_one_operator_and_subtask_keep_its_rows() -> None:
    snapshot, _ = snapshot_of("1.19.3-rocksdb-savepoint-canonical-files")
    files = SavepointFiles(str(snapshot))
    parts = plan_keyed_state(files, ["tally"], 1)
    assert {(part.uid, part.subtask) for part in parts} == {("tally", 0), ("tally", 1)}
    rows = [row for part in parts for row in read_keyed_part(files, part)]
    assert rows == list(read_keyed_state(str(snapshot), ["tally"]))
    # count, values, residues, processing timers: 24 keys each (the tally of 600 values over 24 keys)
    assert Counter(row.entry.state for row in rows) == {
        "count": 24,
        "values": 24,
        "residues": 24,
        "_timer_state/processing_user-timers": 24,
    }


def _handle(offsets: tuple[int, ...], size: int, start: int = 0) -> KeyGroupsStateHandle:
    return KeyGroupsStateHandle(start, offsets, RelativeFileStateHandle("state", size), tag=7)


def test_key_group_runs_gather_whole_key_groups_up_to_the_size() -> None:
    # key groups 10..15: 100 bytes, empty, 300, 50, 50, 500 (to the stream's end at 1100)
    handle = _handle((100, 0, 200, 500, 550, 600), 1100, start=10)
    assert key_group_runs(handle, None) == [None]
    assert key_group_runs(handle, 1100) == [None]
    assert key_group_runs(handle, 300) == [(10, 13), (13, 16)]
    assert key_group_runs(handle, 1) == [(10, 11), (11, 13), (13, 14), (14, 15), (15, 16)]
    assert key_group_runs(handle, 1000) == [(10, 16)]
    # an inline stream's size is its bytes; trailing empty key groups join the last run
    inline = KeyGroupsStateHandle(0, (4, 8, 0, 0), ByteStreamStateHandle("x", bytes(12), 0), tag=7)
    assert key_group_runs(inline, 4) == [(0, 1), (1, 4)]
