"""A savepoint as Spark DataFrames, for the checks: read once on the driver, so bad input fails with its file
and byte offset before any Spark job runs (the `flink_savepoint` data source serves the same tables to users)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from splitaudit.audit.tables import SCHEMAS, savepoint_table
from splitaudit.savepoint.fileio import DEFAULT_MAX_FILE_SIZE
from splitaudit.savepoint_view import inspect_savepoint


@dataclass(frozen=True)
class SavepointFrames:
    """The `operators`, `splits` and `enumerator` tables of one savepoint or checkpoint."""

    path: str
    checkpoint_id: int
    operators: DataFrame
    splits: DataFrame
    enumerator: DataFrame


def savepoint_frames(
    spark: SparkSession,
    location: str,
    uids: Sequence[str] = (),
    allow_external_state: bool = False,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
) -> SavepointFrames:
    """Read the savepoint at `location` (dir or `_metadata`; local path or URI) into three DataFrames."""
    view = inspect_savepoint(location, uids, allow_external_state, max_file_size)

    def frame(table: str) -> DataFrame:
        rows = savepoint_table(view, table).to_pylist()
        return spark.createDataFrame(rows, from_arrow_schema(SCHEMAS[table]))

    return SavepointFrames(view.path, view.checkpoint_id, frame("operators"), frame("splits"), frame("enumerator"))
