"""The savepoint checks on a real Spark session: the `flink_savepoint` data source, assignment, rewinds, records
past the savepoint, and the `audit --savepoint` / `diff` commands, on savepoints of real runs (fixtures/)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from splitaudit.audit.assignment import ENUMERATOR_SOURCE, PartitionList, check_assignment
from splitaudit.audit.findings import (
    ASSIGNED_AND_PENDING,
    ASSIGNED_TWICE,
    ERROR,
    PAST_SAVEPOINT,
    REWIND,
    UNASSIGNED,
    WARNING,
)
from splitaudit.audit.replay import check_past_savepoint
from splitaudit.audit.rewind import check_rewind, resume_offsets
from splitaudit.audit.savepoint_frames import SavepointFrames, savepoint_frames
from splitaudit.audit.tables import SCHEMAS

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parents[2] / "fixtures"
BEAM = FIXTURES / "beam_flink_source"
STOCK_BEFORE, STOCK_AFTER = str(BEAM / "restore_stock_before"), str(BEAM / "restore_stock_after")
TOPIC = "restore-stock-3b5fcb84"  # fixtures/beam_flink_source/*/expected.json
SOURCE = "badafca9cf4780dedc3db9bfa19c38b8"  # the reference pipeline's source operator (no uid in 1.19 metadata)
KAFKA_SAVEPOINT = FIXTURES / "kafka" / "1.19.3-kafka-3.3.0-1.19-savepoint" / "savepoint-bc7ec8-6ca2e464d98e"
KAFKA_TOPIC = "fixture-1-19-3-1795243322"


def test_the_data_source_serves_the_three_tables_without_registration(spark: SparkSession) -> None:
    # No register() call: installing the package is enough (Spark imports pyspark_flink_savepoint).
    splits = spark.read.format("flink_savepoint").load(STOCK_BEFORE)
    assert splits.schema == from_arrow_schema(SCHEMAS["splits"])
    rows = splits.orderBy("partition").select("subtask", "split_id", "topic", "partition", "next_offset").collect()
    assert [tuple(r) for r in rows] == [
        (0, "0", TOPIC, 0, 5000),
        (1, "1", TOPIC, 1, 5000),
        (0, "0", TOPIC, 2, 5000),
        (1, "1", TOPIC, 3, 5000),
    ]
    assert {(r["split_type"], r["kind"], r["operator_id"]) for r in splits.collect()} == {
        ("beam_flink_source", "savepoint", SOURCE)
    }
    operators = spark.read.format("flink_savepoint").option("table", "operators").load(STOCK_BEFORE)
    assert operators.count() == 4
    source = operators.where("is_source").collect()
    assert [(r["operator_id"], r["parallelism"], r["max_parallelism"], r["reader_splits"]) for r in source] == [
        (SOURCE, 2, 128, 2)
    ]
    enumerator = spark.read.format("flink_savepoint").option("table", "enumerator").load(str(KAFKA_SAVEPOINT))
    assert sorted((r["topic"], r["partition"], r["status"]) for r in enumerator.collect()) == [
        (KAFKA_TOPIC, p, "assigned") for p in range(4)
    ]


def test_the_data_source_rejects_an_unknown_table(spark: SparkSession) -> None:
    with pytest.raises(Exception, match="option table must be one of operators, splits, enumerator, not 'x'"):
        spark.read.format("flink_savepoint").option("table", "x").load(STOCK_BEFORE).collect()


def test_a_clean_restore_holds_every_partition_once(spark: SparkSession) -> None:
    listed = PartitionList(frozenset((TOPIC, p) for p in range(4)), "--partitions 4")
    check = check_assignment(savepoint_frames(spark, STOCK_AFTER), listed)
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


def test_partitions_the_topic_has_but_nobody_holds_are_missing(spark: SparkSession) -> None:
    # The topic grew to 6 partitions while the job was down; Beam's KafkaIO does not discover new ones.
    listed = PartitionList(frozenset((TOPIC, p) for p in range(6)), "Kafka")
    check = check_assignment(savepoint_frames(spark, STOCK_AFTER), listed)
    assert [(f.kind, f.severity, f.topic, f.partition, f.count) for f in check.findings] == [
        (UNASSIGNED, ERROR, TOPIC, 4, 0),
        (UNASSIGNED, ERROR, TOPIC, 5, 0),
    ]
    assert [p.status for p in check.matrices[0].partitions] == ["ok"] * 4 + ["missing"] * 2


def test_kafka_source_partitions_come_from_its_enumerator(spark: SparkSession) -> None:
    check = check_assignment(savepoint_frames(spark, str(KAFKA_SAVEPOINT)))
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


def _frames(spark: SparkSession, splits: list[dict[str, Any]], pending: list[dict[str, Any]]) -> SavepointFrames:
    """Hand-made split tables (pure logic: the check's rules, on states no real run here produced)."""
    base = {
        "operator_id": "op",
        "operator_uid": "kafka-source",
        "operator_name": None,
        "checkpoint_id": 7,
        "kind": None,
    }
    split = {"split_type": "kafka", "stopping_offset": None, "topic": "t"}

    def frame(table: str, rows: list[dict[str, Any]]) -> Any:
        return spark.createDataFrame([base | split | r for r in rows], from_arrow_schema(SCHEMAS[table]))

    operators = [base | {"parallelism": 2, "max_parallelism": 128, "is_source": True, "reader_splits": len(splits)}]
    return SavepointFrames(
        "hand-made", 7, frame("operators", operators), frame("splits", splits), frame("enumerator", pending)
    )


def test_a_partition_held_twice_or_held_and_pending_is_flagged(spark: SparkSession) -> None:
    splits = [
        {"subtask": 0, "split_id": "t-0", "partition": 0, "next_offset": 10},
        {"subtask": 1, "split_id": "t-0", "partition": 0, "next_offset": 12},
        {"subtask": 1, "split_id": "t-1", "partition": 1, "next_offset": 5},
    ]
    pending = [{"subtask": None, "status": "pending", "split_id": "t-1", "partition": 1, "next_offset": None}]
    check = check_assignment(_frames(spark, splits, pending))
    assert [(f.kind, f.partition, f.count) for f in check.findings] == [
        (ASSIGNED_TWICE, 0, 2),
        (ASSIGNED_AND_PENDING, 1, 2),
    ]
    assert "subtask 0 (split t-0, next offset 10) and subtask 1 (split t-0, next offset 12)" in check.findings[0].detail
    assert [p.status for p in check.matrices[0].partitions] == ["double", "double"]


def test_two_savepoints_in_the_wrong_order_are_four_rewinds(spark: SparkSession) -> None:
    before, after = savepoint_frames(spark, STOCK_BEFORE), savepoint_frames(spark, STOCK_AFTER)
    assert check_rewind(before, after) == ()
    rewinds = check_rewind(after, before)
    assert [(f.kind, f.severity, f.partition, f.count, f.offset_ranges) for f in rewinds] == [
        (REWIND, ERROR, p, 5000, ((5000, 9999),)) for p in range(4)
    ]


def test_sink_records_past_the_savepoint_are_counted(spark: SparkSession) -> None:
    # Next offsets 5000 everywhere; the sink already holds p0 up to 5999 and p1 up to 5000.
    rows = [(TOPIC, 0, o) for o in range(6000)] + [(TOPIC, 1, o) for o in range(5001)] + [(TOPIC, 2, 10)]
    sink = spark.createDataFrame(rows, "topic string, partition int, offset bigint")
    past = check_past_savepoint(sink, savepoint_frames(spark, STOCK_BEFORE))
    assert [(f.kind, f.severity, f.partition, f.count, f.offset_ranges) for f in past] == [
        (PAST_SAVEPOINT, WARNING, 0, 1000, ((5000, 5999),)),
        (PAST_SAVEPOINT, WARNING, 1, 1, ((5000, 5000),)),
    ]
    assert check_past_savepoint(sink, savepoint_frames(spark, STOCK_BEFORE), exactly_once=True)[0].severity == ERROR


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "splitaudit", "--json", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


def test_cli_audit_savepoint_and_diff_exit_codes(tmp_path: Path) -> None:
    missing = _cli(
        "audit", "--savepoint", STOCK_AFTER, "--before", STOCK_BEFORE, "--partitions", "6", "--master", "local[1]"
    )
    assert missing.returncode == 1, missing.stderr
    document = json.loads(missing.stdout)
    assert document["summary"] == {
        "duplicate_records": 0,
        "missing_records": 0,
        "double_assigned_partitions": 0,
        "missing_partitions": 2,
        "rewound_partitions": 0,
    }
    assert [(f["kind"], f["partition"]) for f in document["findings"]] == [(UNASSIGNED, 4), (UNASSIGNED, 5)]
    assert document["assignment"][0]["partitions_from"] == f"--partitions 6 (topic {TOPIC})"
    clean = _cli("diff", STOCK_BEFORE, STOCK_AFTER, "--master", "local[1]")
    assert (clean.returncode, json.loads(clean.stdout)["findings"]) == (0, [])
    backwards = _cli("diff", STOCK_AFTER, STOCK_BEFORE, "--master", "local[1]")
    assert backwards.returncode == 1
    assert json.loads(backwards.stdout)["summary"]["rewound_partitions"] == 4
    nothing = _cli("audit")
    assert nothing.returncode == 2
    assert json.loads(nothing.stdout)["error"] == {
        "type": "UsageError",
        "message": "give --savepoint, --sink or both: there is nothing to audit",
    }
    truncated = tmp_path / "_metadata"
    truncated.write_bytes((Path(STOCK_AFTER) / "_metadata").read_bytes()[:100])
    bad = _cli("audit", "--savepoint", str(truncated))
    assert bad.returncode == 2
    error = json.loads(bad.stdout)["error"]
    assert (error["type"], error["path"]) == ("InputError", str(truncated))
    assert "Traceback" not in bad.stdout + bad.stderr


def test_a_restore_resumes_each_partition_from_its_lowest_concrete_next_offset(spark: SparkSession) -> None:
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
    assert resume_offsets(_frames(spark, splits, pending)) == {("t", 0): 90, ("t", 3): 40}
