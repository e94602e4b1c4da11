"""The `flink_savepoint` Spark data source on the real DynamicKafkaSource savepoints of fixtures/dynamic_kafka/
(connector 3.3.0-1.19, Flink 1.19.3): each partition with its Kafka cluster and next offset, as expected.json
states them (the records produced before each savepoint)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.unit.conftest import FIXTURES

pytestmark = pytest.mark.integration

CASE = FIXTURES / "dynamic_kafka" / "1.19.3-dynamic-kafka-3.3.0-1.19"
EXPECTED: dict[str, Any] = json.loads((CASE / "expected.json").read_text())
JOB = EXPECTED["job"]


@pytest.mark.parametrize("snapshot", ["sp0", "sp1"])
def test_the_data_source_serves_each_partition_with_its_cluster(spark: SparkSession, snapshot: str) -> None:
    location = str(CASE / EXPECTED[snapshot]["snapshot_dir"])
    splits = spark.read.format("flink_savepoint").load(location)
    rows = splits.orderBy("partition").select("split_type", "cluster", "topic", "partition", "next_offset")
    assert [tuple(r) for r in rows.collect()] == [
        ("dynamic_kafka", JOB["cluster"], JOB["topic"], p, EXPECTED[snapshot]["next_offsets"][str(p)])
        for p in range(JOB["partitions"])
    ]
    enumerator = spark.read.format("flink_savepoint").option("table", "enumerator").load(location)
    assert sorted((r["cluster"], r["partition"], r["status"]) for r in enumerator.collect()) == [
        (JOB["cluster"], p, "assigned") for p in range(JOB["partitions"])
    ]
