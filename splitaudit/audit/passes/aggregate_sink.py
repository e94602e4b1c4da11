"""The inputs of an aggregate reconciliation (`audit.aggregate`), read: the span between two savepoints, the
twin-start hypotheses Kafka's offsets allow, and the sink's records written after the earlier savepoint.

The boundary after SP0 is SP0's time (when its `_metadata` was written): a Kafka sink's records whose Kafka
timestamp is at or after it, or a file sink's files modified at or after it. Both are said in the report.

The log end at the restore (where the twin of a consumer with Kafka's default `latest` starts) is known only from
evidence after the restore: the first sink record (or file) written after SP0 is the restored job's, so the log
end when it was written is the log end at the restore unless records were appended between the restore and that
first write. It is read from Kafka as the first offset whose timestamp is at or after that moment (the log end
where none is), which is the append order on a topic with `LogAppendTime` and producers' clocks otherwise: a
start it gets wrong is rejected by the keys it mispredicts, never chosen.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from splitaudit.audit.checks.hypotheses import Partition, hypotheses_of
from splitaudit.audit.checks.savepoint_tables import SavepointTables
from splitaudit.audit.passes.aggregate import ORDER, Reconciliation, Span, reconcile
from splitaudit.audit.passes.kafka_topic import read_topics
from splitaudit.audit.passes.sink_files import read_files
from splitaudit.audit.request import AuditRequest
from splitaudit.clients.kafka import offsets_for_time, topics_offsets
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
    span = Span(before.resume_offsets, savepoint.resume_offsets)
    offsets = topics_offsets(bootstrap, topics, request.group)
    written_at = metadata_written_at(before.path)
    after, boundary, first_written = _after(spark, request, sink, written_at)
    log_end: dict[Partition, int | None] = {}
    if first_written is not None:
        for topic in topics:
            found = offsets_for_time(bootstrap, topic, first_written)
            log_end |= {tp: offsets[tp].end if o is None else o for tp, o in found.items() if tp in offsets}
    hypotheses = hypotheses_of(
        {tp: o for tp, o in span.start.items() if tp in span.end},
        {tp: o.log_start for tp, o in offsets.items()},
        {tp: o.committed for tp, o in offsets.items()},
        log_end,
    )
    reconciled = reconcile(read_topics(spark, bootstrap, topics), after, match, span, hypotheses, boundary)
    if first_written is None:
        return reconciled
    first = _iso(first_written / 1000)
    note = f"log end at the restore: the source's log end when the sink was first written after SP0, {first}"
    return replace(reconciled, notes=(*reconciled.notes, note))


def _after(
    spark: SparkSession, request: AuditRequest, sink: str, written_at: float
) -> tuple[DataFrame, str, int | None]:
    """The sink's records written at or after SP0's time, with their pane order; the boundary in words; and when the
    first of them was written (epoch ms; None when there is none)."""
    when = _iso(written_at)
    cutoff = F.lit(written_at).cast("timestamp")
    if request.sink_format == "kafka":
        records = read_topics(spark, str(request.bootstrap), (sink,)).where(F.col("timestamp") >= cutoff)
        ordered = records.withColumn(ORDER, F.struct("timestamp", "partition", "offset"))
        boundary = f"the sink topic's records with a Kafka timestamp at or after SP0's time {when}"
        return ordered, boundary, _first(ordered, F.col("timestamp"))
    files = read_files(spark, sink, request.sink_format)
    modified = F.col("_metadata.file_modification_time")
    ordered = files.where(modified >= cutoff).withColumn(ORDER, F.struct(modified, F.col("_metadata.file_path")))
    return ordered, f"the sink's files modified at or after SP0's time {when}", _first(ordered, modified)


def _first(rows: DataFrame, time: Column) -> int | None:
    """The earliest `time` of `rows`, in epoch ms (None when there are no rows)."""
    earliest = rows.agg(F.min(F.unix_millis(time)).alias("first")).collect()[0]["first"]
    return None if earliest is None else int(earliest)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
