"""A SQL job's savepoint, whose operators have no uids, through every surface: `inspect`, `audit --savepoint`,
`guard` and the `flink_savepoint` data source (`watch`: tests/integration/test_watch_kafka_source.py).

One real run (Flink 1.19.3, the SQL job `KafkaSqlLineageJob`: the Table API's `kafka` connector, a KafkaSource of
connector 3.3.0-1.19 underneath, no uid anywhere): a topic of 2 partitions, 200 records (record i to partition
i % 2), the job at parallelism 2 until its sink holds all 200 and a checkpoint covers them, savepoint SP0, cancel;
then 200 more records while it is down. SP0 holds each partition at next offset 100 on one of the two readers
(which reader holds which partition follows the connector's hash of the topic name), the enumerator names both
as assigned, and its five operators carry only Flink's generated ids.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

import pytest
from pyspark.sql import SparkSession

from splitaudit.audit.checks.findings import INFO, LAG
from splitaudit.guard.predict import run_guard
from splitaudit.progress import Progress
from splitaudit_lab.scenario.flink_kafka import kafka_sql_job
from splitaudit_lab.scenario.restore import ScenarioRun, ScenarioSettings
from splitaudit_lab.stack.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.flink_kafka]

UNBOUNDED = -(2**63)  # KafkaPartitionSplit.NO_STOPPING_OFFSET (Long.MIN_VALUE)


@dataclass(frozen=True)
class SqlSavepoint:
    savepoint: str
    topic: str
    bootstrap: str


@pytest.fixture(scope="module")
def sql_savepoint(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> SqlSavepoint:
    settings = ScenarioSettings(partitions=2, records=200, parallelism=2)
    run = ScenarioRun(stack, tmp_path_factory.mktemp("sql") / "run", "sql-savepoint", settings, Progress())
    run.args.append("--partitionDiscoveryIntervalMs=0")
    _, savepoint = run.first_job(kafka_sql_job())
    run.produce(settings.records, what=" more")
    (topic,) = run.topics
    return SqlSavepoint(savepoint, topic, stack.kafka.bootstrap)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "splitaudit", "--json", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


def test_inspect_reads_the_sql_jobs_source_by_its_state(sql_savepoint: SqlSavepoint) -> None:
    result = _cli("inspect", sql_savepoint.savepoint)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["kind"], document["savepoint_format"]) == ("savepoint", "CANONICAL")
    operators = document["operators"]
    assert len(operators) == 5
    assert all(op["uid"] is None and op["parallelism"] == 2 for op in operators)
    (source,) = (op["source"] for op in operators if op["source"])
    splits = sorted(
        (s["split"]["partition"], s["split"]["starting_offset"], s["split"]["stopping_offset"], s["type"])
        for s in source["reader_splits"]
    )
    assert splits == [(0, 100, UNBOUNDED, "kafka"), (1, 100, UNBOUNDED, "kafka")]
    assert sorted(s["subtask"] for s in source["reader_splits"]) == [0, 1]
    assert {s["split"]["topic"] for s in source["reader_splits"]} == {sql_savepoint.topic}
    enumerator = source["enumerator"]["state"]
    assert enumerator["initial_discovery_finished"] is True
    assert [(p["partition"], p["status"]) for p in enumerator["partitions"]] == [(0, "ASSIGNED"), (1, "ASSIGNED")]


def test_audit_of_the_sql_savepoint_is_clean(sql_savepoint: SqlSavepoint) -> None:
    result = _cli("audit", "--savepoint", sql_savepoint.savepoint, "--partitions", "2", "--master", "local[1]")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["findings"] == []
    (matrix,) = document["assignment"]
    # No uid: the matrix names the source by the id Flink generated, the one holding the splits.
    assert (len(matrix["operator"]), matrix["subtasks"]) == (32, 2)
    assert [(p["partition"], p["status"]) for p in matrix["partitions"]] == [(0, "ok"), (1, "ok")]
    holders = sorted((row["partition"], h["next_offset"]) for row in matrix["partitions"] for h in row["holders"])
    assert holders == [(0, 100), (1, 100)]


def test_guard_finds_the_sql_jobs_source_by_its_splits(sql_savepoint: SqlSavepoint) -> None:
    guard = run_guard(sql_savepoint.savepoint, kafka_sql_job(), sql_savepoint.bootstrap, None, Progress())
    assert guard.safe
    (source,) = guard.sources
    assert source.families == ("kafka",)
    assert [(h.partition, h.next_offset) for h in source.partitions] == [(0, 100), (1, 100)]
    # The 100 records per partition produced while the job was down: the restore's backlog.
    assert [(f.kind, f.severity, f.partition, f.count, f.offset_ranges) for f in guard.findings] == [
        (LAG, INFO, p, 100, ((100, 199),)) for p in (0, 1)
    ]


def test_the_data_source_serves_the_sql_savepoint(spark: SparkSession, sql_savepoint: SqlSavepoint) -> None:
    reader = spark.read.format("flink_savepoint")
    splits = reader.load(sql_savepoint.savepoint)
    rows = splits.orderBy("partition").select("split_type", "topic", "partition", "next_offset").collect()
    assert [tuple(r) for r in rows] == [("kafka", sql_savepoint.topic, p, 100) for p in (0, 1)]
    operators = reader.option("table", "operators").load(sql_savepoint.savepoint).collect()
    assert len(operators) == 5
    (source,) = (r for r in operators if r["is_source"])
    assert (source["operator_uid"], source["parallelism"], source["reader_splits"]) == (None, 2, 2)
    assert {r["operator_id"] for r in splits.collect()} == {source["operator_id"]}
    enumerator = reader.option("table", "enumerator").load(sql_savepoint.savepoint).collect()
    assert sorted((r["topic"], r["partition"], r["status"]) for r in enumerator) == [
        (sql_savepoint.topic, p, "assigned") for p in (0, 1)
    ]
