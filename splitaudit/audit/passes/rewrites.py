"""What a restored job's rewritten window files did to the records: held once though read twice, or lost.

A window that closed before the savepoint a job was restored from had its file before it (`ledger`). When the
restored job reads that window's records again (a twin reader, an offset reset) and writes the file again, the
new file replaces the old one. Which records the window held is known from the source topic: a record's window
is its Kafka timestamp's, as it is for a job that windows by the records' Kafka time (KafkaIO's
`withLogAppendTime()` / `withCreateTime()`, the only way a re-read record lands in a closed window). Of the
records of a rewritten window that the job had read before the savepoint (offsets below the savepoint's next
offsets of their partition):

- present once in the sink: read twice, held once (`masked_duplicates`; the duplicate checks cannot see them);
- absent from the sink: the replaced file held them and its replacement does not (`lost_by_rewrite`: lost
  *because* they were read again, by a re-read that began inside the window).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from splitaudit.audit.checks.beam_names import instant_text
from splitaudit.audit.checks.findings import ERROR, LOST_BY_REWRITE, MASKED_DUPLICATES, WARNING, Finding
from splitaudit.audit.passes.duplicates import runs_per_kind

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

KEY = ["topic", "partition", "offset"]


def check_rewrites(
    sink: DataFrame,
    records: DataFrame,
    windows: tuple[tuple[int, int], ...],
    resume: Mapping[tuple[str, int], int],
    savepoint: str,
) -> list[Finding]:
    """Findings for the records of the rewritten `windows` (epoch millis) read before the savepoint (`resume`:
    its next offset per topic partition). `sink` has the sink's (topic, partition, offset) rows; `records` the
    source topics' (topic, partition, offset, timestamp)."""
    if not windows or not resume:
        return []
    spark = sink.sparkSession
    spans = spark.createDataFrame(list(windows), "window_start long, window_end long")
    resumed = spark.createDataFrame(
        [(topic, partition, offset) for (topic, partition), offset in resume.items()],
        "topic string, partition int, resume long",
    )
    millis = F.unix_millis(F.col("timestamp"))
    read_before = (
        records.select(*KEY, millis.alias("millis"))
        .join(F.broadcast(resumed), ["topic", "partition"])
        .where(F.col("offset") < F.col("resume"))
    )
    in_rewritten = read_before.join(
        F.broadcast(spans), (F.col("millis") >= F.col("window_start")) & (F.col("millis") < F.col("window_end"))
    ).select(*KEY)
    held = sink.select(*KEY).groupBy(*KEY).agg(F.count(F.lit(1)).alias("rows"))
    judged = in_rewritten.join(held, KEY, "left").select(
        *KEY,
        F.lit(1).cast("long").alias("extra_rows"),
        F.when(F.col("rows").isNull(), F.lit(LOST_BY_REWRITE))
        .when(F.col("rows") == 1, F.lit(MASKED_DUPLICATES))
        .alias("kind"),
    )
    span = f"{len(windows)} rewritten windows ({instant_text(windows[0][0])}..{instant_text(windows[-1][1])})"
    findings = []
    for runs in runs_per_kind(judged.where(F.col("kind").isNotNull())):
        lost = runs.kind == LOST_BY_REWRITE
        findings.append(
            Finding(
                kind=runs.kind,
                severity=ERROR if lost else WARNING,
                topic=runs.topic,
                partition=runs.partition,
                count=runs.extra_rows,
                offset_ranges=runs.ranges,
                ranges_truncated=runs.truncated,
                detail=(
                    f"records of {span} read before the savepoint {savepoint}, absent from the sink: the files "
                    "that held them were replaced by files the restored job wrote from its own re-read, which "
                    "began inside their window (lost because they were read again)"
                    if lost
                    else f"records of {span} read before the savepoint {savepoint} and read again by the restored "
                    "job, held once: the file the restored job wrote replaced the one holding the first read"
                ),
                evidence=(
                    "a record's window is its Kafka timestamp's; the window's file was written after the "
                    "savepoint, and the record's offset is below the savepoint's next offset of its partition"
                ),
            )
        )
    return findings
