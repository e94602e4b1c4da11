"""Kafka topics read by Spark's Kafka source, in batch: the source topic's real offsets, and a topic as the sink.

Both read a topic from its log-start to its end offset with `isolation.level=read_committed`, so records of
aborted transactions are skipped and transaction markers (which occupy an offset but are no record) never
appear, and with `failOnDataLoss=false`, because those markers and compaction leave holes in the offsets that
are no loss. Spark's Kafka connector comes from `splitaudit setup` (`splitaudit.clients.spark.spark_session` puts
it on the classpath); on a cluster, give it to spark-submit as usual.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from splitaudit.audit.passes.duplicates import LINEAGE_COLUMNS
from splitaudit.audit.request import SinkColumns
from splitaudit.clients.kafka import partition_offsets, topic_partitions
from splitaudit.errors import ExternalError, UsageError

_CORRUPT = "_corrupt_record"  # from_json puts the text of a record it cannot parse here


def source_offsets(spark: SparkSession, bootstrap: str, topics: tuple[str, ...]) -> DataFrame:
    """The offsets that really exist in `topics`: one row (topic string, partition int, offset long) per record.

    This is the reference set the sink's gaps are judged against: an offset of an aborted transaction, of a
    transaction marker, or removed by compaction is absent here, so its absence from the sink is no loss. Only
    the coordinates are selected, never keys or values. Lazy: each action reads the topic again.

    Raises UsageError when a topic does not exist, ExternalError when the cluster does not answer or Spark
    has no Kafka connector.
    """
    return read_topics(spark, bootstrap, topics).select("topic", "partition", "offset")


def read_kafka_sink(spark: SparkSession, bootstrap: str, topic: str, columns: SinkColumns) -> DataFrame:
    """A Kafka topic as the job's sink, shaped as `splitaudit.audit.passes.sink_files.read_sink` shapes a file sink.

    Each record's value is a JSON object holding the source coordinates of the record it was made from, in the
    fields `columns` names (topic, partition, offset by default; partition and offset JSON integers), and
    optionally the lineage fields reader_id, attempt, subtask, job_id. Returns columns topic (string),
    partition (int), offset (long), then each lineage field that at least one record carries, so the sink
    checks run unchanged.

    Checks every record first, in one aggregation pass (nothing row-level reaches the driver): a value that is
    not such a JSON object, or one that lacks a coordinate, is a UsageError naming the topic, the field, the
    number of such records and the first one's place. The returned DataFrame is lazy and reads the topic again.
    """
    coordinates = {columns.topic: "string", columns.partition: "int", columns.offset: "long"}
    fields = coordinates | {name: kind for name, kind in LINEAGE_COLUMNS.items() if name not in coordinates}
    schema = ", ".join(f"`{name}` {kind}" for name, kind in (fields | {_CORRUPT: "string"}).items())
    records = read_topics(spark, bootstrap, (topic,)).select(
        F.col("partition").alias("_partition"),
        F.col("offset").alias("_offset"),
        F.from_json(F.col("value").cast("string"), schema, {"columnNameOfCorruptRecord": _CORRUPT}).alias("v"),
    )
    unparsed = F.col("v").isNull() | F.col(f"v.{_CORRUPT}").isNotNull()
    checks = {"unparsed": unparsed} | {name: ~unparsed & F.col(f"v.`{name}`").isNull() for name in coordinates}
    stats = records.agg(
        F.count(F.lit(1)).alias("records"),
        *[F.count_if(bad).alias(f"bad_{i}") for i, bad in enumerate(checks.values())],
        *[
            F.min(F.when(bad, F.struct("_partition", "_offset"))).alias(f"first_{i}")
            for i, bad in enumerate(checks.values())
        ],
        *[F.count(F.col(f"v.`{name}`")).alias(f"has_{name}") for name in LINEAGE_COLUMNS if name not in coordinates],
    ).collect()[0]
    roles = dict(zip(coordinates, ("--topic-col", "--partition-col", "--offset-col"), strict=True))
    for i, check in enumerate(checks):
        if stats[f"bad_{i}"]:
            first = stats[f"first_{i}"]
            what = (
                f"are not JSON objects with integer {columns.partition!r} and {columns.offset!r} fields"
                if check == "unparsed"
                else f"have no field {check!r} ({roles[check]})"
            )
            raise UsageError(
                f"Kafka sink topic {topic!r} at {bootstrap}: {stats[f'bad_{i}']} of {stats['records']} records "
                f"{what}; the first at partition {first['_partition']} offset {first['_offset']} of that topic"
            )
    lineage = [name for name in LINEAGE_COLUMNS if name not in coordinates and stats[f"has_{name}"]]
    return records.select(
        F.col(f"v.`{columns.topic}`").alias("topic"),
        F.col(f"v.`{columns.partition}`").alias("partition"),
        F.col(f"v.`{columns.offset}`").alias("offset"),
        *[F.col(f"v.`{name}`").alias(name) for name in lineage],
    )


def topic_records(bootstrap: str, topics: tuple[str, ...]) -> int:
    """How many records the topics hold at most: their offsets from log-start to end (transaction markers and
    compacted records occupy offsets too), from the cluster's metadata, without reading a record. For sizing
    work, not for judging it: the topics may grow before they are read."""
    return sum(p.end - p.log_start for topic in topics for p in partition_offsets(bootstrap, topic).values())


def read_topics(spark: SparkSession, bootstrap: str, topics: tuple[str, ...], *, headers: bool = False) -> DataFrame:
    """All committed records of the topics, earliest to latest, with Spark's Kafka source columns (key, value,
    topic, partition, offset, timestamp, timestampType, and with `headers` the records' headers)."""
    for topic in topics:
        topic_partitions(bootstrap, topic)  # fail fast and clearly: Spark would read a missing topic as empty
    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("kafka.isolation.level", "read_committed")
        .option("failOnDataLoss", "false")
        .option("includeHeaders", str(headers).lower())
    )
    try:
        return reader.load()
    except Exception as ex:  # Spark raises AnalysisException when no `kafka` data source is on its classpath
        if "DATA_SOURCE_NOT_FOUND" in str(ex) or "Failed to find data source" in str(ex):
            raise ExternalError(
                "Spark has no Kafka connector: run `splitaudit setup` (it installs it into the stack home), "
                "or give spark-sql-kafka-0-10 to spark-submit"
            ) from ex
        raise
