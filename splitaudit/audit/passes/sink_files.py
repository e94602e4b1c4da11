"""Reading a sink of files (Parquet, JSON lines, CSV with a header, ORC) into the frame the sink checks take.

Whatever a job writes, the checks need its Kafka coordinates under fixed names and types (topic string,
partition int, offset long) and, where the job records them, the lineage columns that tell duplicates apart
(`duplicates.LINEAGE_COLUMNS`). `--topic-col`, `--partition-col` and `--offset-col` map a sink's own names.
A Kafka topic as the sink is read into the same shape by `kafka_topic.read_kafka_sink`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from splitaudit.audit.passes.duplicates import LINEAGE_COLUMNS
from splitaudit.audit.passes.filters import FILE_COLUMN, FILE_STATISTICS
from splitaudit.audit.request import FILE_FORMATS, SinkColumns
from splitaudit.errors import UsageError, summary

# Formats whose every scan parses each row's text: the audit reads their coordinates once, into Spark's cache.
PARSED_FORMATS = ("json", "csv")


def read_files(spark: SparkSession, path: str, sink_format: str) -> DataFrame:
    """The sink's files as Spark reads them, with their own columns."""
    if sink_format not in FILE_FORMATS:
        raise UsageError(f"--sink-format must be one of {', '.join(FILE_FORMATS)}, not {sink_format!r}")
    reader = spark.read.format(sink_format)
    if sink_format == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    try:
        return reader.load(path)
    except Exception as ex:  # Spark raises AnalysisException for a missing path or an unreadable format
        raise UsageError(f"{path}: cannot read as {sink_format}: {summary(ex)}") from ex


def read_sink(spark: SparkSession, path: str, sink_format: str, columns: SinkColumns) -> DataFrame:
    """The sink as a DataFrame with columns topic, partition, offset (+ lineage columns when present)."""
    frame = read_files(spark, path, sink_format)
    wanted = {"topic": columns.topic, "partition": columns.partition, "offset": columns.offset}
    absent = [f"{column} (--{role}-col)" for role, column in wanted.items() if column not in frame.columns]
    if absent:
        raise UsageError(
            f"{path}: the sink has no column {', '.join(absent)} (its columns are {', '.join(frame.columns)}), so "
            "it says nothing of the records it was made from: name the columns that hold the source topic, "
            "partition and offset with --topic-col, --partition-col and --offset-col, or map its rows to the source "
            "records they carry with --sink-key EXPR --source-key EXPR (or --match-payload) and --bootstrap"
        )
    # Parquet and ORC keep row-group statistics, from which pass 1 can prove a single topic (`pass_one`)
    statistics = {FILE_STATISTICS: sink_format in ("parquet", "orc")}
    selected = [
        F.col(columns.topic).cast("string").alias("topic", metadata=statistics),
        F.col(columns.partition).cast("int").alias("partition"),
        F.col(columns.offset).cast("long").alias("offset"),
    ]
    selected += [F.col(c) for c in LINEAGE_COLUMNS if c in frame.columns and c not in wanted.values()]
    if "_metadata" not in frame.columns:  # Spark's hidden file metadata, unless a column of the sink hides it
        selected.append(_file_identity().alias(FILE_COLUMN))
    return frame.select(*selected)


def _file_identity() -> Column:
    """Each row's file as (size, modified microseconds), from Spark's file metadata: pass 1 keeps which files
    hold each bucket, and a filter on it skips the other files without opening them (`filters.file_filter`)."""
    size = F.col("_metadata.file_size")
    modified = F.unix_micros(F.col("_metadata.file_modification_time"))
    return F.struct(size.alias("size"), modified.alias("modified"))
