"""The Spark data source `flink_savepoint`: a savepoint's operators, reader splits, enumerator or keyed state as a
table.

    spark.read.format("flink_savepoint").option("table", "splits").load("/savepoints/savepoint-1a2b3c-…")

Options: `table` (`splits`, the default; `operators`; `enumerator`; `keyed`: every keyed-state entry), `uid`
(comma-separated operator uids: name the operators of Flink 1.x files, which store only ids, and keep only
those), `allowExternalState` (`true` to also read state files outside the savepoint directory). Columns are
`tables.SCHEMAS`. The savepoint is read once, in one Python worker, by the pure-Python reader: it is small next
to any sink (the `keyed` table is streamed in batches, a key group's bytes a window at a time).

Installing splitaudit registers it: Spark imports every top-level module named `pyspark_*` that has a
`DefaultSource` when a session first looks a format up, and the package ships `pyspark_flink_savepoint`. So
`format("flink_savepoint")` works in any session whose Python has splitaudit installed (a notebook too);
`register(spark)` does the same explicitly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from splitaudit.audit.tables import SCHEMAS, TABLES, keyed_batches, savepoint_table
from splitaudit.errors import UsageError
from splitaudit.savepoint.fileio import absolute_location
from splitaudit.savepoint_view import inspect_savepoint

FORMAT = "flink_savepoint"


class FlinkSavepointDataSource(DataSource):
    """`flink_savepoint`: the tables of `splitaudit.audit.tables` read from one savepoint or checkpoint.

    Spark makes one per `load()`, with the reader's options (`self.options`: `path`, `table`, `uid`,
    `allowExternalState`); the package's `pyspark_flink_savepoint.DefaultSource` is this class.
    """

    @classmethod
    def name(cls) -> str:
        """The format name Spark looks it up by: `spark.read.format("flink_savepoint")`."""
        return FORMAT

    def schema(self) -> StructType:
        """The Spark schema of the `table` option's table (`SCHEMAS`, converted from Arrow); UsageError naming the
        tables when the option names none of them."""
        return from_arrow_schema(SCHEMAS[_table(self.options)])

    def reader(self, schema: StructType) -> DataSourceReader:
        """The reader of the savepoint `load()` was given; UsageError when it was given no path."""
        return FlinkSavepointReader(self.options)


class FlinkSavepointReader(DataSourceReader):
    """Reads the whole savepoint in one partition and returns the table as Arrow batches."""

    def __init__(self, options: Mapping[str, str]) -> None:  # Spark's case-insensitive option map
        location = options.get("path")
        if not location:
            raise UsageError(f"{FORMAT}: give the savepoint path to load(), e.g. load('/savepoints/savepoint-…')")
        self.options = options
        # Made on the driver and shipped to the executor that reads: a relative path means the driver's.
        self.location = absolute_location(location)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The table as Arrow batches, read in the one Python worker Spark runs this in: the `keyed` table
        streamed (`keyed_batches`), the others built from `inspect_savepoint`'s view. A savepoint the reader
        cannot read fails the Spark job with the reader's InputError (file and byte offset)."""
        uids = [uid.strip() for uid in self.options.get("uid", "").split(",") if uid.strip()]
        allow_external = self.options.get("allowExternalState", "false").lower() == "true"
        table = _table(self.options)
        if table == "keyed":
            yield from keyed_batches(self.location, uids, allow_external)
            return
        view = inspect_savepoint(self.location, uids, allow_external)
        yield from savepoint_table(view, table).to_batches()


def register(spark: SparkSession) -> None:
    """Register `flink_savepoint` with `spark` (needed only where the package's auto-registration is off)."""
    spark.dataSource.register(FlinkSavepointDataSource)


def _table(options: Mapping[str, str]) -> str:
    table = options.get("table", "splits")
    if table not in TABLES:
        raise UsageError(f"{FORMAT}: option table must be one of {', '.join(TABLES)}, not {table!r}")
    return table
