"""The API reference's examples that need Spark (docs/api/), run: each page includes its example from a section of
this module, so what the docs show is what this test runs; the values asserted are those of the fixtures'
expected.json and README (fixtures/README.md). Paths are relative to a checkout's root, where pytest must run.
tests/unit/test_api_examples.py has the examples that need no Spark.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _run_from_the_checkout_root() -> None:
    # Spark's JVM reads a relative path against the directory it started in, pytest's own: the examples' paths
    # are relative to the checkout's root, so pytest must run there (as `make test` does).
    if Path.cwd().resolve() != ROOT:
        pytest.fail(f"run pytest from the checkout's root ({ROOT}): the examples' paths are relative to it")


# --8<-- [start:data_source]
def test_a_savepoint_as_spark_tables(spark: SparkSession) -> None:
    splits = spark.read.format("flink_savepoint").load("fixtures/beam_flink_source/restore_stock_before")
    assert splits.groupBy("topic", "partition").count().where("count > 1").count() == 0  # none held twice
    rows = splits.orderBy("partition").select("subtask", "topic", "partition", "next_offset").collect()
    assert [tuple(row) for row in rows] == [
        (0, "restore-stock-3b5fcb84", 0, 5000),
        (1, "restore-stock-3b5fcb84", 1, 5000),
        (0, "restore-stock-3b5fcb84", 2, 5000),
        (1, "restore-stock-3b5fcb84", 3, 5000),
    ]
    keyed = (
        spark.read.format("flink_savepoint")
        .option("table", "keyed")
        .option("uid", "tally")  # Flink 1.x files keep operator ids only: name the operators by uid
        .load("fixtures/keyed/1.19.3-heap-savepoint-canonical-inline/savepoint-aa688c-f3cac33821d0")
    )
    # keys and values are JSON text: 600 values fed to 24 keys, `key-<value % 24>`, 25 each
    counts = {row.key: row.value for row in keyed.where("state = 'count'").collect()}
    assert (len(counts), counts['"key-0"'], counts['"key-23"']) == (24, "25", "25")


# --8<-- [end:data_source]


# --8<-- [start:assert_sink_exactly_once]
def test_the_patched_restore_wrote_every_offset_once(splitaudit_spark: SparkSession) -> None:
    from splitaudit.pytest_plugin import assert_sink_exactly_once

    findings = assert_sink_exactly_once("fixtures/beam_sink/restore_patched_small/sink", sink_format="json")
    assert findings.summary.duplicate_records == 0


# --8<-- [end:assert_sink_exactly_once]
