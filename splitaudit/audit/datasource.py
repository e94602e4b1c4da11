"""The Spark data source `flink_savepoint`: a savepoint's operators, reader splits, enumerator or keyed state as a
table.

    spark.read.format("flink_savepoint").option("table", "splits").load("/savepoints/savepoint-1a2b3c-…")

Options: `table` (`splits`, the default; `operators`; `enumerator`; `keyed`: every keyed-state entry), `uid`
(comma-separated operator uids: name the operators of Flink 1.x files, which store only ids, and keep only
those), `allowExternalState` (`true` to also read state files outside the savepoint directory), `keyedPartBytes`
(the `keyed` table's input partitions: a key-group handle larger than this many bytes is read in runs of key
groups of about this size; default 64 MiB). Columns are `tables.SCHEMAS`.

The `operators`, `splits` and `enumerator` tables are read once, in one Python worker, by the pure-Python reader:
they are small next to any sink. The `keyed` table is planned on the driver from `_metadata` alone
(`savepoint_view.plan_keyed_state`: one input partition per subtask's keyed state handle, or per run of key
groups of a large key-group handle), and each Spark task reads only its part with the same decoders
(`read_keyed_part`), streamed in batches, a key group's bytes a window at a time: keyed reads use every core, and
the rows are those of `read_keyed_state`, in its order.

Installing splitaudit registers it: Spark imports every top-level module named `pyspark_*` that has a
`DefaultSource` when a session first looks a format up, and the package ships `pyspark_flink_savepoint`. So
`format("flink_savepoint")` works in any session whose Python has splitaudit installed (a notebook too);
`register(spark)` does the same explicitly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from splitaudit.audit.checks.tables import SCHEMAS, TABLES, keyed_part_batches, savepoint_table
from splitaudit.errors import UsageError
from splitaudit.savepoint.fileio import SavepointFiles, absolute_location
from splitaudit.savepoint_view import KeyedStatePart, inspect_savepoint, plan_keyed_state

FORMAT = "flink_savepoint"
KEYED_PART_BYTES = 64 << 20  # the `keyed` table's default input partition: about this many bytes of one handle


class FlinkSavepointDataSource(DataSource):
    """`flink_savepoint`: the tables of `splitaudit.audit.checks.tables` read from one savepoint or checkpoint.

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
    """Reads the `keyed` table in one partition per part of `plan_keyed_state`, any other table in one partition,
    and returns it as Arrow batches."""

    def __init__(self, options: Mapping[str, str]) -> None:  # Spark's case-insensitive option map
        location = options.get("path")
        if not location:
            raise UsageError(f"{FORMAT}: give the savepoint path to load(), e.g. load('/savepoints/savepoint-…')")
        self.table = _table(options)
        self.uids = [uid.strip() for uid in options.get("uid", "").split(",") if uid.strip()]
        self.allow_external = options.get("allowExternalState", "false").lower() == "true"
        self.part_bytes = _positive_int(options, "keyedPartBytes", KEYED_PART_BYTES)
        # Made on the driver and shipped to the executor that reads: a relative path means the driver's.
        self.location = absolute_location(location)

    def partitions(self) -> Sequence[InputPartition]:
        """On the driver: the `keyed` table's parts, planned from `_metadata` alone; one partition otherwise (and
        for a savepoint without keyed state)."""
        if self.table != "keyed":
            return [InputPartition(None)]
        files = SavepointFiles(self.location, self.allow_external)
        parts = plan_keyed_state(files, self.uids, self.part_bytes)
        return [InputPartition(part) for part in parts] or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The partition's Arrow batches, read in the Python worker Spark runs it in: a `keyed` table's part
        (`plan_keyed_state`'s, its handle or key groups only), or the other tables built from `inspect_savepoint`'s
        view. A savepoint the reader cannot read fails the Spark job with the reader's InputError (file and byte
        offset)."""
        part = partition.value
        if isinstance(part, KeyedStatePart):
            yield from keyed_part_batches(SavepointFiles(self.location, self.allow_external), part)
        elif self.table != "keyed":
            view = inspect_savepoint(self.location, self.uids, self.allow_external)
            yield from savepoint_table(view, self.table).to_batches()


def register(spark: SparkSession) -> None:
    """Register `flink_savepoint` with `spark` (needed only where the package's auto-registration is off)."""
    spark.dataSource.register(FlinkSavepointDataSource)


def _table(options: Mapping[str, str]) -> str:
    table = options.get("table", "splits")
    if table not in TABLES:
        raise UsageError(f"{FORMAT}: option table must be one of {', '.join(TABLES)}, not {table!r}")
    return table


def _positive_int(options: Mapping[str, str], name: str, default: int) -> int:
    text = options.get(name)
    if text is None:
        return default
    if not text.strip().isdigit() or int(text) <= 0:
        raise UsageError(f"{FORMAT}: option {name} must be a positive number of bytes, not {text!r}")
    return int(text)
