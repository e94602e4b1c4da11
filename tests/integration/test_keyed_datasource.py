"""The data source's `keyed` table read in parallel on a real Spark session: one input partition per part that
`plan_keyed_state` makes from `_metadata` (a subtask's handle, or a run of its key groups), and exactly the rows of
the serial `read_keyed_state`, in its order, on a snapshot of each layout of fixtures/keyed/ (Flink 1.19.3,
parallelism 2, two keyed operators). The same parts on every fixture, without Spark: tests/unit/savepoint/
test_keyed_parts.py."""

from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import SparkSession

from splitaudit.audit.checks.rows import keyed_rows
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint_view import plan_keyed_state, read_keyed_state
from tests.unit.conftest import FIXTURES
from tests.unit.savepoint.test_all_types_fixture import FOLDERS as ALL_TYPES
from tests.unit.savepoint.test_changelog_fixture import FOLDERS as CHANGELOG
from tests.unit.savepoint.test_changelog_fixture import logs_in_place, snapshot
from tests.unit.savepoint.test_keyed_parts import expected_rows, snapshot_of

pytestmark = pytest.mark.integration

# Each layout once, with the part size each reads at: canonical heap inline (a handle per part, the default) and
# in Snappy files, canonical RocksDB, heap checkpoints in files and inline with Snappy (runs of key groups of about
# 4 KB), and a RocksDB native snapshot (a handle per part whatever the size).
CASES = [
    ("1.19.3-heap-savepoint-canonical-inline", None),
    ("1.19.3-heap-savepoint-canonical-files-snappy", 4000),
    ("1.19.3-rocksdb-savepoint-canonical-files", 4000),
    ("1.19.3-heap-checkpoint-files", 4000),
    ("1.19.3-heap-checkpoint-inline-snappy", 4000),
    ("1.19.3-rocksdb-checkpoint-incremental", 4000),
]


def test_the_keyed_table_reads_each_part_in_its_own_task(spark: SparkSession) -> None:
    for case, part_bytes in CASES:
        snapshot, expected = snapshot_of(case)
        reader = spark.read.format("flink_savepoint").option("table", "keyed")
        if part_bytes is not None:
            reader = reader.option("keyedPartBytes", str(part_bytes))
        table = reader.load(str(snapshot))
        parts = plan_keyed_state(SavepointFiles(str(snapshot)), (), part_bytes or 64 << 20)
        assert table.rdd.getNumPartitions() == len(parts), case
        assert len(parts) >= 4, case  # 2 keyed operators x 2 subtasks
        rows = [row.asDict() for row in table.collect()]
        assert rows == list(keyed_rows(read_keyed_state(str(snapshot)))), case
        counts = Counter((row["operator_id"], row["state"]) for row in rows)
        assert counts == expected_rows(expected), case
        assert {row["status"] for row in rows} == {"read"}, case


def test_the_keyed_table_of_a_snapshot_without_keyed_state_is_empty(spark: SparkSession) -> None:
    snapshot = FIXTURES / "beam_flink_source" / "restore_stock_before"  # a Kafka source's, no keyed state
    table = spark.read.format("flink_savepoint").option("table", "keyed").load(str(snapshot))
    assert plan_keyed_state(SavepointFiles(str(snapshot))) == []
    assert table.count() == 0


def test_the_keyed_table_refuses_a_bad_part_size(spark: SparkSession) -> None:
    [snapshot] = (FIXTURES / "keyed" / "1.19.3-heap-checkpoint-files").glob("chk-*")
    with pytest.raises(Exception, match="option keyedPartBytes must be a positive number of bytes, not '0'"):
        spark.read.format("flink_savepoint").option("table", "keyed").option("keyedPartBytes", "0").load(
            str(snapshot)
        ).collect()


@pytest.mark.parametrize("folder", [folder.name for folder in ALL_TYPES], ids=str)
def test_the_keyed_table_reads_every_state_of_the_all_types_job(spark: SparkSession, folder: str) -> None:
    """AllTypesFixtureJob's savepoints and checkpoints on Flink 1.19.3, 2.0.0 and 2.3.0, heap and RocksDB (POJO,
    Kryo, tuple, enum, java.time, array, reducing, aggregating, TTL, timer and window state; its values:
    tests/unit/savepoint/test_all_types_fixture.py) through the data source, in parts of about 4 KB: the serial
    reader's rows, every one read but the Kryo class's, kept as bytes with its class."""
    snapshot, _ = snapshot_of(folder)
    table = spark.read.format("flink_savepoint").option("table", "keyed").option("keyedPartBytes", "4000")
    rows = [row.asDict() for row in table.load(str(snapshot)).collect()]
    assert rows == list(keyed_rows(read_keyed_state(str(snapshot))))
    assert len(rows) == 24 * 13 + 120 + 44 * 2  # 13 states of a value per key, a timer per value, 44 windows
    kryo = [row for row in rows if row["state"] == "kryo"]
    assert len(kryo) == 24
    assert {row["status"] for row in kryo} == {
        "raw: org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot "
        "(dev.splitaudit.fixtures.AllTypesFixtureJob$Opaque): Kryo's field layout is not in the snapshot"
    }
    assert {row["status"] for row in rows if row["state"] != "kryo"} == {"read"}


def test_the_keyed_table_reads_the_changelog_backend(spark: SparkSession) -> None:
    """The changelog backend's checkpoints (test_changelog_fixture.py: materialized heap and RocksDB snapshots and
    the log after them, Snappy framed or not), with `allowExternalState` (the log files lie outside `chk-N`): one
    part per subtask, the rows of `read_keyed_state`, every one read."""
    for folder in CHANGELOG:
        with logs_in_place(folder):
            location = str(snapshot(folder))
            reader = spark.read.format("flink_savepoint").option("table", "keyed")
            table = reader.option("allowExternalState", "true").load(location)
            assert table.rdd.getNumPartitions() == 2, folder
            rows = [row.asDict() for row in table.collect()]
            assert rows == list(keyed_rows(read_keyed_state(location, allow_external_state=True))), folder
            assert {row["status"] for row in rows} == {"read"}, folder
            assert len(rows) == {"checkpoint": 376}.get(folder, 424), folder
