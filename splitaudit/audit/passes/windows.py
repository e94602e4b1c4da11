"""The Spark side of judging the windows a restored job wrote again: each sink file's rows, and which windows hold
source records read before the savepoint. What they feed is judged on the driver (`checks.ledger`,
`checks.window_evidence`)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import replace
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from splitaudit.audit.checks.ledger import Ledger
from splitaudit.audit.checks.window_evidence import Window


def count_rows(frame: DataFrame, ledger: Ledger, root: str) -> Ledger:
    """The ledger with each file's rows, counted by Spark over the sink as read (one aggregate of its file
    column: Parquet and ORC need no column's data for it)."""
    counted = frame.groupBy(F.col("_metadata.file_path").alias("file")).count().collect()
    rows = {}
    for row in counted:
        relative = _relative(row["file"], root)
        if relative is not None:
            rows[relative] = int(row["count"])
    files = tuple(replace(f, rows=rows.get(f.path, 0)) for f in ledger.files)
    return replace(ledger, files=files)


def _relative(file_uri: str, root: str) -> str | None:
    """A Spark file path (`file:/sink/a.json`, `s3a://bucket/sink/a.json`) relative to the sink's root."""
    path = unquote(urlparse(file_uri).path) if "://" in file_uri or file_uri.startswith("file:") else file_uri
    base = unquote(urlparse(root).path) if "://" in root or root.startswith("file:") else root
    base = posixpath.normpath(base).rstrip("/")
    marker = base.lstrip("/") + "/"
    at = path.find(marker)
    return None if at < 0 else path[at + len(marker) :]


def windows_read_before(
    records: DataFrame, windows: Iterable[Window], resume: Mapping[tuple[str, int], int]
) -> frozenset[Window]:
    """Of `windows`, those holding a source record read before the savepoint (an offset below `resume`, its next
    offset per topic partition), a record's window being its Kafka timestamp's. `records` has the source topics'
    (topic, partition, offset, timestamp): one join of them with the few windows, on Spark."""
    spans = sorted(set(windows))
    if not spans or not resume:
        return frozenset()
    spark = records.sparkSession
    frame = spark.createDataFrame(spans, "window_start long, window_end long")
    resumed = spark.createDataFrame(
        [(topic, partition, offset) for (topic, partition), offset in resume.items()],
        "topic string, partition int, resume long",
    )
    millis = F.unix_millis(F.col("timestamp"))
    read = (
        records.join(F.broadcast(resumed), ["topic", "partition"])
        .where(F.col("offset") < F.col("resume"))
        .select(millis.alias("millis"))
    )
    held = read.join(
        F.broadcast(frame), (F.col("millis") >= F.col("window_start")) & (F.col("millis") < F.col("window_end"))
    )
    found = held.select(*frame.columns).distinct().collect()
    return frozenset((row["window_start"], row["window_end"]) for row in found)
