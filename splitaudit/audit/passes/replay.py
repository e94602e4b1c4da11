"""Sink records at or past the savepoint's next offsets: a restore from that savepoint reads them again.

The savepoint says where each partition resumes (`SavepointTables.resume_offsets`: its lowest next offset). Whatever the
sink already holds from there on was emitted after the snapshot and will be emitted a second time after a
restore: expected with an at-least-once sink (a warning), a duplicate with an exactly-once one (an error).
One aggregation over the sink, filtered per partition by a broadcast join on the small position table.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from splitaudit.audit.checks.findings import ERROR, PAST_SAVEPOINT, WARNING, Finding
from splitaudit.audit.checks.savepoint_tables import SavepointTables


def check_past_savepoint(
    sink: DataFrame, savepoint: SavepointTables, *, exactly_once: bool = False
) -> tuple[Finding, ...]:
    """Per (topic, partition): the sink rows at or past the savepoint's next offset, and their offset range."""
    resume = savepoint.resume_offsets
    if not resume:
        return ()
    spark = sink.sparkSession
    starts = spark.createDataFrame(
        [(t, p, o) for (t, p), o in resume.items()], "topic string, partition int, next_offset bigint"
    )
    past = (
        sink.join(F.broadcast(starts), ["topic", "partition"])
        .where(F.col("offset") >= F.col("next_offset"))
        .groupBy("topic", "partition", "next_offset")
        .agg(F.count(F.lit(1)).alias("rows"), F.max("offset").alias("last"))
        .orderBy("topic", "partition")
        .collect()
    )
    severity = ERROR if exactly_once else WARNING
    return tuple(
        Finding(
            PAST_SAVEPOINT,
            severity,
            r["topic"],
            r["partition"],
            r["rows"],
            ((r["next_offset"], r["last"]),),
            detail=f"{r['rows']} sink rows at or past next offset {r['next_offset']} of checkpoint "
            f"{savepoint.checkpoint_id}: a restore from {savepoint.path} emits them again",
        )
        for r in past
    )
