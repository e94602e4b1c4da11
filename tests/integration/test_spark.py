"""The Spark session factory runs real queries on local[2]."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration


def test_local_session_aggregates_exactly(spark: SparkSession) -> None:
    rows = spark.range(10_000).selectExpr("id % 4 AS partition", "id AS offset").groupBy("partition").count()
    assert {r["partition"]: r["count"] for r in rows.collect()} == {0: 2500, 1: 2500, 2: 2500, 3: 2500}
    assert spark.conf.get("spark.driver.host") == "127.0.0.1"
