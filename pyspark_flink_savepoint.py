"""Registers splitaudit's `flink_savepoint` Spark data source: Spark imports `pyspark_*` modules' `DefaultSource`."""

from splitaudit.audit.datasource import FlinkSavepointDataSource as DefaultSource

__all__ = ["DefaultSource"]
