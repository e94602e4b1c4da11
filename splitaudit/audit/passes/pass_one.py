"""Pass 1: every (topic, partition, 32,768-offset bucket)'s rows, first and last offset and fingerprint
(`fingerprint`), the invalid rows, and which files hold each bucket.

This module is Spark's own pass: one scan of codegen'd aggregates grouped by bucket. Grouping by the topic
string is the dearest part of it, so when file statistics prove a single topic (`single_topic`) the groups are
(partition, bucket) and the topic column is not read at all; a sink of files groups by the topic's hash, and by
file as well (`filters.FILE_COLUMN`), so that every later read of the suspect buckets opens only the files that
hold them (`PassOne.files_holding`). A sink of local Parquet files takes `parquet_pass` instead, which gives the
same `PassOne` without grouping every row. Measured figures of both are in benchmarks/sink_audit.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from splitaudit.audit.passes import fingerprint
from splitaudit.audit.passes.bitmaps import BUCKET_BITS, BucketKey
from splitaudit.audit.passes.filters import FILE_COLUMN, FILE_STATISTICS, MAX_FILTER_FILES, FileKey, file_filter


@dataclass(frozen=True)
class BucketStats:
    """One (topic, partition, bucket) after pass 1: rows, offset extremes, and the fingerprint sums."""

    topic: str
    partition: int
    bucket: int
    rows: int
    first_offset: int
    last_offset: int
    hash_high: int
    hash_low: int

    @property
    def key(self) -> BucketKey:
        return self.topic, self.partition, self.bucket

    @property
    def fingerprint(self) -> tuple[int, int]:
        return self.hash_high, self.hash_low

    def plus(self, other: BucketStats) -> BucketStats:
        """This bucket's stats and those of more of its rows (another file's) together."""
        return BucketStats(
            *self.key,
            self.rows + other.rows,
            min(self.first_offset, other.first_offset),
            max(self.last_offset, other.last_offset),
            self.hash_high + other.hash_high,
            self.hash_low + other.hash_low,
        )


def single_topic(frame: DataFrame) -> str | None:
    """The frame's only topic when file statistics prove it cheaply, else None.

    Only for a topic column marked FILE_STATISTICS (`read_sink` marks Parquet and ORC sinks): a filter for any
    other topic (or a null) is pushed down to the reader, whose row-group min/max/null-count statistics skip
    every row group of a single-topic sink without decoding it. Unmarked frames (JSON, CSV, Kafka) would pay a
    full scan for the proof, as dear as grouping by the topic string, so they are not asked.
    """
    if not frame.schema["topic"].metadata.get(FILE_STATISTICS):
        return None
    topic = F.col("topic")
    first = frame.filter(topic.isNotNull()).select("topic").limit(1).collect()
    if not first:
        return None
    name: str = first[0]["topic"]
    return None if frame.filter((topic != F.lit(name)) | topic.isNull()).limit(1).collect() else name


@dataclass(frozen=True)
class Runs:
    """The sink's runs as pass 1 cut its files into them (`row_runs` tables: topic, partition, lineage columns,
    bucket, first, last), for the files whose runs were few enough to keep; `runless` names the others."""

    table: pa.Table | None
    runless: frozenset[FileKey]


@dataclass(frozen=True)
class PassOne:
    """Pass 1's result: every bucket's stats, the number of invalid rows (null key, negative offset), and, for a
    sink read from files (`FILE_COLUMN`), which files hold each bucket: the later reads of suspect buckets then
    open only those files."""

    stats: dict[BucketKey, BucketStats]
    invalid: int
    files: dict[BucketKey, set[FileKey]] | None  # None: the frame was not read from files
    runs: Runs | None = None  # None: pass 1 kept no runs (Spark's pass)

    def files_holding(self, keys: Iterable[BucketKey]) -> set[FileKey] | None:
        """The (size, modified) of the files holding rows of these buckets; None when not known (a frame not read
        from files) or too many to name in one filter (more than MAX_FILTER_FILES)."""
        if self.files is None:
            return None
        holding = set().union(*(self.files.get(key, ()) for key in keys))
        return holding if len(holding) <= MAX_FILTER_FILES else None

    def runs_of(self, keys: Iterable[BucketKey]) -> dict[BucketKey, pa.Table]:
        """The sink's runs of each of these buckets that pass 1 holds all of (every file holding it kept its
        runs): pass 2 of those needs no second read of the sink."""
        runs = self.runs
        if runs is None or runs.table is None or (runs.runless and self.files is None):
            return {}
        files = self.files or {}
        complete = {key for key in keys if not (files.get(key, set()) & runs.runless)}
        if not complete:
            return {}
        table = runs.table
        columns = zip(*(table.column(name).to_pylist() for name in ("topic", "partition", "bucket")), strict=True)
        rows: dict[BucketKey, list[int]] = {}
        for index, key in enumerate(columns):
            if key in complete:
                rows.setdefault(key, []).append(index)
        return {key: table.take(pa.array(indices)) for key, indices in rows.items()}


def bucket_stats(frame: DataFrame) -> PassOne:
    """Pass 1 over (topic, partition, offset): the stats of every bucket, and the rows that are invalid (null key,
    negative offset), which land in groups with a null or negative bucket.

    Reading the topic string of every row (dictionary decode, a variable-length grouping key) costs most of a
    bare scan: when `single_topic` proves there is one topic, the groups are (partition, bucket) and the topic
    column is never read. A sink of files (`FILE_COLUMN`) groups by the topic's 64-bit hash instead of the
    string, and by file as well: Spark's partial aggregate already keeps one group per bucket per file task, so
    the file costs little, and it lets every later read of the suspects open only their files. The names behind
    the hashes are read back from one file each (`_topic_names`); two topics with one 64-bit hash would be
    merged, the same coincidence the fingerprints accept. The driver adds up each bucket's rows of its files.
    """
    topic = single_topic(frame)
    by_file = FILE_COLUMN in frame.columns
    high, low = fingerprint.fingerprint_sums(F.col("offset"))
    keys: list[Column | str] = ["partition", F.shiftright("offset", BUCKET_BITS).alias("bucket")]
    if topic is None:
        keys.insert(0, F.xxhash64("topic").alias("topic_hash") if by_file else F.col("topic"))
    if by_file:
        file = F.col(FILE_COLUMN)
        keys += [file["size"].alias("file_size"), file["modified"].alias("file_modified")]
    aggregates = [
        F.count(F.lit(1)).alias("rows"),
        F.min("offset").alias("first_offset"),
        F.max("offset").alias("last_offset"),
        high,
        low,
    ]
    groups = frame.groupBy(*keys).agg(*aggregates).collect()
    names = _topic_names(frame, groups) if topic is None and by_file else {}
    stats: dict[BucketKey, BucketStats] = {}
    files: dict[BucketKey, set[FileKey]] = {}
    invalid = 0
    for row in groups:
        name = topic if topic is not None else names.get(row["topic_hash"]) if by_file else row["topic"]
        if name is None or row["partition"] is None or row["bucket"] is None or row["bucket"] < 0:
            invalid += row["rows"]
            continue
        key = (name, row["partition"], row["bucket"])
        sums = (row["rows"], row["first_offset"], row["last_offset"], row["hash_high"], row["hash_low"])
        bucket = BucketStats(*key, *sums)
        stats[key] = bucket if key not in stats else stats[key].plus(bucket)
        if by_file:
            files.setdefault(key, set()).add((row["file_size"], row["file_modified"]))
    return PassOne(stats, invalid, files if by_file else None)


def _topic_names(frame: DataFrame, groups: list[Row]) -> dict[int, str]:
    """The topic behind each topic_hash of pass 1's groups, read back from one file holding it (the hash of
    null rows has no name: they are invalid)."""
    files: dict[int, FileKey] = {}
    for row in groups:
        files.setdefault(row["topic_hash"], (row["file_size"], row["file_modified"]))
    if not files:
        return {}
    topic_hash = F.xxhash64("topic")
    named = (
        frame.filter(file_filter(set(files.values())) & topic_hash.isin(list(files)))
        .groupBy(topic_hash.alias("topic_hash"))
        .agg(F.min("topic").alias("topic"))
        .collect()
    )
    return {row["topic_hash"]: row["topic"] for row in named if row["topic"] is not None}
