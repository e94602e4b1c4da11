"""The `flink_savepoint` tables of every real savepoint fixture hold the rows its expected.json states.

The expected rows are derived here from each fixture's expected.json (the `inspect` contract, written by the
generators from what the job did), never from the decoders, so a change in how a split family flattens
itself into rows fails these tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from splitaudit.audit.checks.rows import enumerator_rows, keyed_rows, operator_rows, split_rows
from splitaudit.audit.checks.tables import SCHEMAS, keyed_batches, savepoint_table
from splitaudit.savepoint_view import inspect_savepoint, read_keyed_state
from tests.unit.conftest import FIXTURES, FlinkFixture, flink_fixtures

LONG_MIN = -(2**63)  # KafkaPartitionSplit.NO_STOPPING_OFFSET
RESTORE = sorted(path.parent for path in (FIXTURES / "beam_flink_source").glob("*/expected.json"))

Row = tuple[Any, ...]  # split_type, split_id, topic, partition, next_offset, stopping_offset


def _rows_of_split(split_type: str, split: dict[str, Any]) -> list[Row]:
    """The split columns one decoded split (inspect JSON) must give: one row per topic partition."""
    if split_type == "kafka":
        topic, partition = split["topic"], split["partition"]
        stopping = None if split["stopping_offset"] == LONG_MIN else split["stopping_offset"]
        return [("kafka", f"{topic}-{partition}", topic, partition, split["starting_offset"], stopping)]
    if split_type == "number_sequence":
        return [(split_type, split["split_id"], None, None, split["from"], split["to"])]
    if split_type in ("beam_flink_source", "beam_unbounded_wrapper"):
        split_id = str(split["split_index"]) if "split_index" in split else None
        marks = {
            (m["topic"], m["partition"]): m["next_offset"] for m in (split["checkpoint"] or {}).get("partitions", [])
        }
        parts = [(tp["topic"], tp["partition"]) for tp in split["topic_partitions"]]
        parts += [key for key in marks if key not in parts]
        if not parts:
            return [(split_type, split_id, None, None, None, None)]
        return [(split_type, split_id, t, p, marks.get((t, p)), None) for t, p in parts]
    return [(split_type, None, None, None, None, None)]


def _enumerator_entries(enumerator: dict[str, Any]) -> list[tuple[int | None, str, Row]]:
    """(subtask, status, split columns) the enumerator checkpoint (inspect JSON) must give."""
    state, split_type = enumerator["state"], enumerator["type"]
    entries: list[tuple[int | None, str, Row]] = []
    if split_type == "kafka":
        for p in state["partitions"]:
            status = "assigned" if p["status"] == "ASSIGNED" else "pending"
            if p["split"] is not None:
                rows = _rows_of_split("kafka", p["split"])
            else:
                rows = [("kafka", f"{p['topic']}-{p['partition']}", p["topic"], p["partition"], None, None)]
            entries += [(None, status, row) for row in rows]
    elif split_type == "number_sequence":
        for split in state["splits"]:
            entries += [(None, "pending", row) for row in _rows_of_split(split_type, split)]
    elif split_type == "beam_flink_source":
        for pending in state["pending"]:
            for split in pending["splits"]:
                entries += [(pending["subtask"], "pending", row) for row in _rows_of_split(split_type, split)]
    return entries


def _split_columns(row: dict[str, Any]) -> Row:
    return tuple(row[c] for c in ("split_type", "split_id", "topic", "partition", "next_offset", "stopping_offset"))


def _sorted(rows: list[Any]) -> list[Any]:
    return sorted(rows, key=lambda row: json.dumps(row))


@pytest.mark.parametrize("case", flink_fixtures(), ids=lambda f: f.name)
def test_tables_of_every_fixture_hold_its_expected_rows(case: FlinkFixture) -> None:
    expected = case.expected["inspect"]
    view = inspect_savepoint(str(case.snapshot))
    snapshot = {"checkpoint_id": expected["checkpoint_id"], "kind": expected["kind"]}
    want_operators, want_splits, want_enumerator = [], [], []
    for op in expected["operators"]:
        base = {"operator_id": op["id"], "operator_uid": op["uid"], "operator_name": op["name"]} | snapshot
        source = op["source"]
        want_operators.append(
            base
            | {
                "parallelism": op["parallelism"],
                "max_parallelism": op["max_parallelism"],
                "is_source": source is not None,
                "reader_splits": 0 if source is None else len(source["reader_splits"]),
            }
        )
        if source is None:
            continue
        for split in source["reader_splits"]:
            for row in _rows_of_split(split["type"], split["split"]):
                want_splits.append((op["id"], split["subtask"], row))
        if source["enumerator"] is not None:
            for subtask, status, row in _enumerator_entries(source["enumerator"]):
                want_enumerator.append((op["id"], subtask, status, row))

    assert _sorted(operator_rows(view)) == _sorted(want_operators)
    splits = split_rows(view)
    assert all(row["checkpoint_id"] == snapshot["checkpoint_id"] and row["kind"] == snapshot["kind"] for row in splits)
    assert _sorted([(r["operator_id"], r["subtask"], _split_columns(r)) for r in splits]) == _sorted(want_splits)
    enumerator = enumerator_rows(view)
    assert _sorted([(r["operator_id"], r["subtask"], r["status"], _split_columns(r)) for r in enumerator]) == (
        _sorted(want_enumerator)
    )
    for table in ("operators", "splits", "enumerator"):
        assert savepoint_table(view, table).schema == SCHEMAS[table]


@pytest.mark.parametrize("folder", RESTORE, ids=lambda p: p.name)
def test_tables_of_the_beam_restore_savepoints(folder: Path) -> None:
    expected = json.loads((folder / "expected.json").read_text())
    view = inspect_savepoint(str(folder))
    want = [
        (split["subtask"], row)
        for split in expected["source"]["reader_splits"]
        for row in _rows_of_split(split["type"], split["split"])
    ]
    got = [(r["subtask"], _split_columns(r)) for r in split_rows(view)]
    assert _sorted(got) == _sorted(want)
    assert enumerator_rows(view) == []  # the enumerator's pending-split map is empty in every case


def test_exact_rows_of_the_stock_restore_savepoint() -> None:
    # The stock job after the restore: split 0 holds partitions 0 and 2, split 1 holds 1 and 3, each resuming
    # at offset 10,000 (40,000 records over 4 partitions, all read).
    view = inspect_savepoint(str(FIXTURES / "beam_flink_source" / "restore_stock_after"))
    topic = "restore-stock-3b5fcb84"
    assert sorted((r["subtask"], _split_columns(r)) for r in split_rows(view)) == [
        (0, ("beam_flink_source", "0", topic, 0, 10000, None)),
        (0, ("beam_flink_source", "0", topic, 2, 10000, None)),
        (1, ("beam_flink_source", "1", topic, 1, 10000, None)),
        (1, ("beam_flink_source", "1", topic, 3, 10000, None)),
    ]


def test_exact_rows_of_a_kafka_v3_enumerator() -> None:
    case = next(f for f in flink_fixtures("kafka") if f.name == "2.1.1-kafka-5.0.0-2.1-savepoint")
    view = inspect_savepoint(str(case.snapshot))
    topic = case.expected["job"]["topic"]
    assert sorted((r["subtask"], r["status"], _split_columns(r)) for r in enumerator_rows(view)) == [
        (None, "assigned", ("kafka", f"{topic}-{p}", topic, p, -2, None)) for p in range(4)
    ]


KEYED = FIXTURES / "keyed" / "1.19.3-heap-savepoint-canonical-inline"


def test_the_keyed_table_holds_every_count_the_job_was_fed() -> None:
    expected = json.loads((KEYED / "expected.json").read_text())
    batches = list(keyed_batches(str(KEYED / expected["snapshot_dir"])))
    assert all(batch.schema == SCHEMAS["keyed"] for batch in batches)
    rows = [row for batch in batches for row in batch.to_pylist()]
    for operator_id, operator in expected["keyed"].items():
        counts = {
            json.loads(row["key"]): json.loads(row["value"])
            for row in rows
            if row["operator_id"] == operator_id and row["state"] == "count"
        }
        assert counts == operator["states"].get("count", {})
    # 600 values over 24 keys: 25 each (KeyedStateFixtureJob).
    assert sorted({json.loads(row["value"]) for row in rows if row["state"] == "count"}) == [25]
    assert {row["namespace"] for row in rows if row["state"] == "count"} == {None}  # VoidNamespace


@pytest.mark.parametrize(
    "snapshot",
    [
        "1.19.3-heap-savepoint-canonical-inline/savepoint-*",  # canonical
        "1.19.3-heap-checkpoint-inline-snappy/chk-*",  # heap layout, compressed
        "1.19.3-rocksdb-savepoint-native/savepoint-*",  # RocksDB's own files
        "1.19.3-all-types-heap-savepoint-canonical/savepoint-*",  # POJO, Kryo (raw), tuples, timers, windows ...
    ],
)
def test_the_keyed_tables_columns_are_the_rows_of_read_keyed_state(snapshot: str) -> None:
    # The batches are built column by column from the entry loop's tuples: the same rows as one dict per entry.
    [path] = (FIXTURES / "keyed").glob(snapshot)
    rows = [row for batch in keyed_batches(str(path)) for row in batch.to_pylist()]
    assert rows == list(keyed_rows(read_keyed_state(str(path))))
    assert len(rows) > 100


def test_the_keyed_table_of_an_sdf_savepoint_holds_beam_values() -> None:
    [snapshot] = (FIXTURES / "beam_sdf" / "heap_before").glob("savepoint-*")
    rows = [row for batch in keyed_batches(str(snapshot)) for row in batch.to_pylist()]
    residuals = [row for row in rows if row["state"].startswith("sdf_checkpoint:")]
    assert len(residuals) == 20  # 5 values for each of the 4 partitions (tests/unit/splits/test_beam_sdf.py)
    for row in residuals:
        value = json.loads(row["value"])
        # OffsetRange.Coder of [500, Long.MAX_VALUE): VarLong 500, then 9 bytes of VarLong 2^63-1.
        assert value["value"]["key"]["value"]["key"] == "f403ffffffffffffffff7f"
        assert json.loads(row["namespace"]) == "//"  # the global window's StateNamespace
    timers = [row for row in rows if row["state"] == "_timer_state/processing_beam-timer"]
    assert sorted(json.loads(row["namespace"])["timer_id"] for row in timers) == [
        "sdf_checkpoint:5:0",
        "sdf_checkpoint:5:0",
        "sdf_checkpoint:5:1",
        "sdf_checkpoint:5:1",
    ]
