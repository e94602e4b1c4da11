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

from splitaudit.audit.checks.assignment import PartitionList, check_assignment
from splitaudit.audit.checks.findings import (
    ERROR,
    PAST_SAVEPOINT,
    UNASSIGNED,
    WARNING,
)
from splitaudit.audit.checks.rewind import check_rewind
from splitaudit.audit.checks.savepoint_tables import SavepointTables, savepoint_tables
from splitaudit.audit.checks.tables import SCHEMAS
from splitaudit.audit.passes.replay import check_past_savepoint

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


SDF = FIXTURES / "beam_sdf"
SDF_TOPIC = "py-sdf-p2to2-546894f9"  # fixtures/beam_sdf/*/expected.json


def test_the_data_source_serves_sdf_positions_and_keyed_state(spark: SparkSession) -> None:
    [after] = (str(p) for p in (SDF / "heap_after").glob("savepoint-*"))
    splits = spark.read.format("flink_savepoint").load(after)
    rows = splits.orderBy("partition").select("split_type", "topic", "partition", "next_offset", "stopping_offset")
    # [1000, Long.MAX_VALUE) per partition (expected.json): an unbounded restriction has no stopping offset.
    assert [tuple(r) for r in rows.collect()] == [("beam_kafka_sdf", SDF_TOPIC, p, 1000, None) for p in range(4)]
    keyed = spark.read.format("flink_savepoint").option("table", "keyed").load(after)
    assert keyed.schema == from_arrow_schema(SCHEMAS["keyed"])
    counts = keyed.where("state like 'sdf_checkpoint:%'").groupBy("key_group").count().orderBy("key_group")
    # Every sdf_checkpoint value the handler left behind, by the key group of its partition's key (p2: 22,
    # p3: 24, p1: 75, p0: 121; tests/unit/splits/test_beam_sdf.py): 7, 6, 6 and 7 values.
    assert [tuple(r) for r in counts.collect()] == [(22, 7), (24, 6), (75, 6), (121, 7)]


def test_the_data_source_rejects_an_unknown_table(spark: SparkSession) -> None:
    with pytest.raises(Exception, match="option table must be one of operators, splits, enumerator, keyed, not 'x'"):
        spark.read.format("flink_savepoint").option("table", "x").load(STOCK_BEFORE).collect()


def test_sink_records_past_the_savepoint_are_counted(spark: SparkSession) -> None:
    # Next offsets 5000 everywhere; the sink already holds p0 up to 5999 and p1 up to 5000.
    rows = [(TOPIC, 0, o) for o in range(6000)] + [(TOPIC, 1, o) for o in range(5001)] + [(TOPIC, 2, 10)]
    sink = spark.createDataFrame(rows, "topic string, partition int, offset bigint")
    past = check_past_savepoint(sink, savepoint_tables(STOCK_BEFORE))
    assert [(f.kind, f.severity, f.partition, f.count, f.offset_ranges) for f in past] == [
        (PAST_SAVEPOINT, WARNING, 0, 1000, ((5000, 5999),)),
        (PAST_SAVEPOINT, WARNING, 1, 1, ((5000, 5000),)),
    ]
    assert check_past_savepoint(sink, savepoint_tables(STOCK_BEFORE), exactly_once=True)[0].severity == ERROR


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
    clean = _cli("diff", STOCK_BEFORE, STOCK_AFTER)
    assert (clean.returncode, json.loads(clean.stdout)["findings"]) == (0, [])
    backwards = _cli("diff", STOCK_AFTER, STOCK_BEFORE)
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


# Every savepoint of a real run that holds Kafka partitions: Beam's FlinkSource and Flink's KafkaSource.
KAFKA_SNAPSHOTS = sorted(
    metadata.parent for family in ("beam_flink_source", "kafka") for metadata in FIXTURES.glob(f"{family}/**/_metadata")
)


def _through_spark(spark: SparkSession, location: str) -> SavepointTables:
    """The savepoint's tables as Spark serves them (the `flink_savepoint` data source), collected."""

    def table(name: str) -> tuple[dict[str, Any], ...]:
        frame = spark.read.format("flink_savepoint").option("table", name).load(location)
        return tuple(row.asDict() for row in frame.collect())

    operators = table("operators")
    return SavepointTables(
        f"{location}/_metadata", operators[0]["checkpoint_id"], operators, table("splits"), table("enumerator")
    )


def test_the_driver_checks_find_what_the_tables_spark_serves_give(spark: SparkSession) -> None:
    # The savepoint checks run on the driver without Spark; over the same savepoint read by Spark they must
    # find exactly the same things (findings, matrices, resume offsets), with and without a partition list.
    assert len(KAFKA_SNAPSHOTS) == 12
    for snapshot in KAFKA_SNAPSHOTS:
        driver, through_spark = savepoint_tables(str(snapshot)), _through_spark(spark, str(snapshot))
        assert driver == through_spark, snapshot
        topics = {r["topic"] for r in driver.splits if r["topic"] is not None}
        listed = PartitionList(frozenset((t, p) for t in topics for p in range(6)), "six partitions")
        for partitions in (None, listed):
            assert check_assignment(driver, partitions) == check_assignment(through_spark, partitions)
        assert driver.resume_offsets == through_spark.resume_offsets
    before, after = (savepoint_tables(path) for path in (STOCK_BEFORE, STOCK_AFTER))
    spark_before, spark_after = (_through_spark(spark, path) for path in (STOCK_BEFORE, STOCK_AFTER))
    assert check_rewind(after, before) == check_rewind(spark_after, spark_before)
    assert len(check_rewind(after, before)) == 4
