"""The savepoint checks (assignment, rewinds, resume offsets) on the driver, over the tables of savepoints of real
runs (fixtures/) and hand-made ones: no Spark is involved in them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from splitaudit.audit.checks.assignment import ENUMERATOR_SOURCE, PartitionList, check_assignment
from splitaudit.audit.checks.findings import ASSIGNED_AND_PENDING, ASSIGNED_TWICE, ERROR, REWIND, UNASSIGNED
from splitaudit.audit.checks.rewind import check_rewind
from splitaudit.audit.checks.savepoint_tables import SavepointTables, savepoint_tables
from splitaudit.audit.checks.tables import SCHEMAS

FIXTURES = Path(__file__).parents[3] / "fixtures"
BEAM = FIXTURES / "beam_flink_source"
STOCK_BEFORE, STOCK_AFTER = str(BEAM / "restore_stock_before"), str(BEAM / "restore_stock_after")
TOPIC = "restore-stock-3b5fcb84"  # fixtures/beam_flink_source/*/expected.json
SOURCE = "badafca9cf4780dedc3db9bfa19c38b8"  # the reference pipeline's source operator (no uid in 1.19 metadata)
KAFKA_SAVEPOINT = FIXTURES / "kafka" / "1.19.3-kafka-3.3.0-1.19-savepoint" / "savepoint-bc7ec8-6ca2e464d98e"


def test_a_clean_restore_holds_every_partition_once() -> None:
    listed = PartitionList(frozenset((TOPIC, p) for p in range(4)), "--partitions 4")
    check = check_assignment(savepoint_tables(STOCK_AFTER), listed)
    assert check.findings == ()
    (matrix,) = check.matrices
    assert (matrix.operator, matrix.subtasks, matrix.partitions_from) == (SOURCE, 2, "--partitions 4")
    assert [
        (p.partition, p.status, [(h.subtask, h.split_id, h.next_offset) for h in p.holders]) for p in matrix.partitions
    ] == [
        (0, "ok", [(0, "0", 10000)]),
        (1, "ok", [(1, "1", 10000)]),
        (2, "ok", [(0, "0", 10000)]),
        (3, "ok", [(1, "1", 10000)]),
    ]


def test_partitions_the_topic_has_but_nobody_holds_are_missing() -> None:
    # The topic grew to 6 partitions while the job was down; Beam's KafkaIO does not discover new ones.
    listed = PartitionList(frozenset((TOPIC, p) for p in range(6)), "Kafka")
    check = check_assignment(savepoint_tables(STOCK_AFTER), listed)
    assert [(f.kind, f.severity, f.topic, f.partition, f.count) for f in check.findings] == [
        (UNASSIGNED, ERROR, TOPIC, 4, 0),
        (UNASSIGNED, ERROR, TOPIC, 5, 0),
    ]
    assert [p.status for p in check.matrices[0].partitions] == ["ok"] * 4 + ["missing"] * 2


def test_kafka_source_partitions_come_from_its_enumerator() -> None:
    check = check_assignment(savepoint_tables(str(KAFKA_SAVEPOINT)))
    assert check.findings == ()
    (matrix,) = check.matrices
    assert matrix.partitions_from == ENUMERATOR_SOURCE
    # expected.json: subtask 0 holds p3 at 2937 and p1 not started (-2, earliest); subtask 1 p2 at 2956, p0 -2
    assert [(p.partition, [(h.subtask, h.next_offset) for h in p.holders]) for p in matrix.partitions] == [
        (0, [(1, -2)]),
        (1, [(0, -2)]),
        (2, [(1, 2956)]),
        (3, [(0, 2937)]),
    ]


def _tables(splits: list[dict[str, Any]], pending: list[dict[str, Any]]) -> SavepointTables:
    """Hand-made split tables (pure logic: the check's rules, on states no real run here produced)."""
    base = {
        "operator_id": "op",
        "operator_uid": "kafka-source",
        "operator_name": None,
        "checkpoint_id": 7,
        "kind": None,
    }
    split = {"split_type": "kafka", "stopping_offset": None, "topic": "t"}

    def table(name: str, rows: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
        # Typed and complete as the data source serves them: every column of the schema, in its order.
        return tuple(pa.Table.from_pylist([base | split | r for r in rows], schema=SCHEMAS[name]).to_pylist())

    operators = [base | {"parallelism": 2, "max_parallelism": 128, "is_source": True, "reader_splits": len(splits)}]
    return SavepointTables(
        "hand-made", 7, table("operators", operators), table("splits", splits), table("enumerator", pending)
    )


def test_a_partition_held_twice_or_held_and_pending_is_flagged() -> None:
    splits = [
        {"subtask": 0, "split_id": "t-0", "partition": 0, "next_offset": 10},
        {"subtask": 1, "split_id": "t-0", "partition": 0, "next_offset": 12},
        {"subtask": 1, "split_id": "t-1", "partition": 1, "next_offset": 5},
    ]
    pending = [{"subtask": None, "status": "pending", "split_id": "t-1", "partition": 1, "next_offset": None}]
    check = check_assignment(_tables(splits, pending))
    assert [(f.kind, f.partition, f.count) for f in check.findings] == [
        (ASSIGNED_TWICE, 0, 2),
        (ASSIGNED_AND_PENDING, 1, 2),
    ]
    assert "subtask 0 (split t-0, next offset 10) and subtask 1 (split t-0, next offset 12)" in check.findings[0].detail
    assert [p.status for p in check.matrices[0].partitions] == ["double", "double"]


def test_two_savepoints_in_the_wrong_order_are_four_rewinds() -> None:
    before, after = savepoint_tables(STOCK_BEFORE), savepoint_tables(STOCK_AFTER)
    assert check_rewind(before, after) == ()
    rewinds = check_rewind(after, before)
    assert [(f.kind, f.severity, f.partition, f.count, f.offset_ranges) for f in rewinds] == [
        (REWIND, ERROR, p, 5000, ((5000, 9999),)) for p in range(4)
    ]


def test_a_restore_resumes_each_partition_from_its_lowest_concrete_next_offset() -> None:
    splits = [
        {"subtask": 0, "split_id": "t-0", "partition": 0, "next_offset": 120},
        {"subtask": 1, "split_id": "t-0", "partition": 0, "next_offset": 100},  # held twice: read again from 100
        {"subtask": 0, "split_id": "t-1", "partition": 1, "next_offset": -2},  # symbolic earliest
        {"subtask": 1, "split_id": "t-2", "partition": 2, "next_offset": None},  # nothing read yet
    ]
    pending = [
        {"subtask": None, "status": "pending", "split_id": "t-3", "partition": 3, "next_offset": 40},
        {"subtask": None, "status": "pending", "split_id": "t-0", "partition": 0, "next_offset": 90},
        {"subtask": None, "status": "assigned", "split_id": "t-1", "partition": 1, "next_offset": 0},
    ]
    assert _tables(splits, pending).resume_offsets == {("t", 0): 90, ("t", 3): 40}
