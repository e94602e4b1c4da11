"""The Spark session factory runs real queries on local[2]."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from splitaudit.home import spark_kafka_jars

pytestmark = pytest.mark.integration


def test_local_session_aggregates_exactly(spark: SparkSession) -> None:
    rows = spark.range(10_000).selectExpr("id % 4 AS partition", "id AS offset").groupBy("partition").count()
    assert {r["partition"]: r["count"] for r in rows.collect()} == {0: 2500, 1: 2500, 2: 2500, 3: 2500}
    assert spark.conf.get("spark.driver.host") == "127.0.0.1"


def test_session_has_spark_kafka_connector_from_setup(spark: SparkSession) -> None:
    jars = sorted(str(jar) for jar in spark_kafka_jars().glob("*.jar"))
    assert len(jars) == 4
    # A session started through spark-submit (when a libraries' log file is named, as the CLI does) lists them
    # as file: URIs: the same jars.
    assert [jar.removeprefix("file://") for jar in str(spark.conf.get("spark.jars")).split(",")] == jars
    # the `kafka` source is found: it asks for its options instead of failing to find the data source
    with pytest.raises(Exception, match="subscribe"):
        spark.read.format("kafka").load()
