"""The filters every read after pass 1 is narrowed by: some buckets' offset ranges, some files.

Spark pushes `offset BETWEEN first AND last` ranges (with topic and partition equalities) down to the Parquet and
ORC readers, whose row-group statistics then skip nearly everything else, and applies a filter on a row's file
(`FILE_COLUMN`, from Spark's file metadata) before opening any file: the later reads of suspect buckets open only
the files that hold them. Where a streaming job's files mix the partitions of their subtask, row-group statistics
alone would keep about half the files.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column
from pyspark.sql import functions as F

from splitaudit.audit.passes.bitmaps import BUCKET_SIZE, BucketKey

FILE_STATISTICS = "splitaudit.file_statistics"  # topic column metadata: read from files with row-group stats
FILE_COLUMN = "_file"  # a sink of files: each row's file, struct(size, modified), from Spark's file metadata
FileKey = tuple[int, int]  # a file's (size in bytes, modification time in microseconds since the epoch)
MAX_FILTER_RANGES = 256  # offset ranges in one pushed-down filter; beyond, the closest ranges are merged
MAX_FILTER_FILES = 4096  # files named in one filter; beyond, the suspects are read from every file


def file_filter(files: set[FileKey]) -> Column:
    """A filter that keeps the rows of these files, which Spark applies to the files' metadata before opening
    them: the other files are not read."""
    if not files:
        return F.lit(False)
    # one expression parsed by Spark (which balances the OR) rather than a Column built call by call: a few
    # hundred files cost as many calls into the JVM each, half a second for a small sink's three reads
    column = f"`{FILE_COLUMN}`"
    terms = (f"({column}.size = {int(s)} AND {column}.modified = {int(m)})" for s, m in sorted(files))
    return F.expr(" OR ".join(terms))


def any_of(terms: list[Column]) -> Column:
    """OR of the terms as a balanced tree (a long left-deep chain is slow to plan and can exhaust the stack);
    false for no terms."""
    if not terms:
        return F.lit(False)
    if len(terms) == 1:
        return terms[0]
    middle = len(terms) // 2
    return any_of(terms[:middle]) | any_of(terms[middle:])


def bucket_runs(keys: Iterable[BucketKey]) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """Per (topic, partition), the buckets as inclusive runs of consecutive buckets; at most MAX_FILTER_RANGES
    runs (or one per partition) in all: beyond, the runs separated by the fewest buckets are joined."""
    runs: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for topic, partition, bucket in sorted(set(keys)):
        own = runs.setdefault((topic, partition), [])
        if own and own[-1][1] == bucket - 1:
            own[-1] = (own[-1][0], bucket)
        else:
            own.append((bucket, bucket))
    excess = sum(len(r) for r in runs.values()) - max(MAX_FILTER_RANGES, len(runs))
    if excess > 0:
        gaps = sorted((r[i + 1][0] - r[i][1], part, i) for part, r in runs.items() for i in range(len(r) - 1))
        closed = {(part, i) for _, part, i in gaps[:excess]}
        for part, own in runs.items():
            joined: list[tuple[int, int]] = []
            for i, run in enumerate(own):
                if i and (part, i - 1) in closed:
                    joined[-1] = (joined[-1][0], run[1])
                else:
                    joined.append(run)
            runs[part] = joined
    return runs


def covered(keys: Iterable[BucketKey]) -> int:
    """How many buckets `offset_filter(keys)` lets through: more than the keys when runs were joined."""
    return sum(last - first + 1 for own in bucket_runs(keys).values() for first, last in own)


def offset_filter(keys: Iterable[BucketKey]) -> Column:
    """A filter that keeps the rows of these buckets (and, when their runs had to be joined, of the buckets
    between), as topic/partition equalities and offset ranges that the file readers push down."""
    terms = [
        (F.col("topic") == F.lit(topic))
        & (F.col("partition") == F.lit(partition))
        & F.col("offset").between(first * BUCKET_SIZE, (last + 1) * BUCKET_SIZE - 1)
        for (topic, partition), own in bucket_runs(keys).items()
        for first, last in own
    ]
    return any_of(terms)
