"""The inputs of an aggregate reconciliation (`audit.aggregate`), read: the span between two savepoints, the
twin-start hypotheses Kafka's offsets allow, and the sink's records written after the earlier savepoint.

The boundary after SP0 is SP0's time (when its `_metadata` was written): a Kafka sink's records whose Kafka
timestamp is at or after it, or a file sink's files modified at or after it. Both are said in the report.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from splitaudit.audit.aggregate import ORDER, Reconciliation, Span, reconcile
from splitaudit.audit.hypotheses import hypotheses_of
from splitaudit.audit.kafka_topic import read_topics
from splitaudit.audit.request import AuditRequest
from splitaudit.audit.rewind import resume_offsets
from splitaudit.audit.savepoint_tables import SavepointTables
from splitaudit.audit.sink_files import read_files
from splitaudit.clients.kafka import topics_offsets
from splitaudit.errors import UsageError
from splitaudit.savepoint.fileio import metadata_written_at


def reconcile_sink(
    spark: SparkSession,
    request: AuditRequest,
    before: SavepointTables,
    savepoint: SavepointTables,
    topics: tuple[str, ...],
) -> Reconciliation:
    """Reconcile the request's aggregating sink (a count or a sum) with the source `topics` from `before`'s
    offsets to `savepoint`'s."""
    match, bootstrap, sink = request.aggregate, request.bootstrap, request.sink
    if match is None or bootstrap is None or sink is None:  # AuditRequest: --aggregate needs them
        raise UsageError("--aggregate needs --sink and --bootstrap")
    span = Span(resume_offsets(before), resume_offsets(savepoint))
    offsets = topics_offsets(bootstrap, topics, request.group)
    hypotheses = hypotheses_of(
        {tp: o for tp, o in span.start.items() if tp in span.end},
        {tp: o.log_start for tp, o in offsets.items()},
        {tp: o.committed for tp, o in offsets.items()},
    )
    written_at = metadata_written_at(before.path)
    after, boundary = _after(spark, request, sink, written_at)
    return reconcile(read_topics(spark, bootstrap, topics), after, match, span, hypotheses, boundary)


def _after(spark: SparkSession, request: AuditRequest, sink: str, written_at: float) -> tuple[DataFrame, str]:
    """The sink's records written at or after SP0's time, with their pane order, and the boundary in words."""
    when = datetime.fromtimestamp(written_at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    cutoff = F.lit(written_at).cast("timestamp")
    if request.sink_format == "kafka":
        records = read_topics(spark, str(request.bootstrap), (sink,)).where(F.col("timestamp") >= cutoff)
        ordered = records.withColumn(ORDER, F.struct("timestamp", "partition", "offset"))
        return ordered, f"the sink topic's records with a Kafka timestamp at or after SP0's time {when}"
    files = read_files(spark, sink, request.sink_format)
    modified = F.col("_metadata.file_modification_time")
    ordered = files.where(modified >= cutoff).withColumn(ORDER, F.struct(modified, F.col("_metadata.file_path")))
    return ordered, f"the sink's files modified at or after SP0's time {when}"
