"""The bucket passes over a (topic, partition, offset) frame: the Spark queries the sink audit is built from.

`bucket_stats` is pass 1: one scan of codegen'd aggregates per (topic, partition, 32,768-offset bucket): rows,
first and last offset, and the offsets' fingerprint (`fingerprint`). Grouping by the topic string is the dearest
part of it, so when file statistics prove a single topic (`single_topic`) the groups are (partition, bucket)
and the topic column is not read at all; a sink of files groups by the topic's hash. A sink of files is also
grouped by file (`FILE_COLUMN`, from Spark's file metadata), so that every later read of the suspect buckets
opens only the files that hold them (`PassOne.files_holding`, `file_filter`): where a streaming job's files mix
the partitions of their subtask, row-group statistics alone would keep about half the files.

`exact_buckets` is pass 2, for suspect buckets only: their offset bitmaps, built by Spark's own
`bitmap_construct_agg` (`bitmaps` has the layout), give exact distinct counts, and against the source's bitmaps
exact missing and unexpected counts; the built-in aggregate needs no Arrow transfer and no Python worker.
`offset_filter` turns the suspect buckets into `offset BETWEEN first AND last` ranges that Spark pushes down to
the Parquet/ORC reader, whose row-group statistics then skip nearly everything else: pass 2 reads only the
suspects' row groups instead of joining every row of the sink on a computed bucket column. Measured figures of
both passes are in benchmarks/sink_audit.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from splitaudit.audit import fingerprint
from splitaudit.audit.bitmaps import BUCKET_BITS, BUCKET_SIZE, BucketKey

FILE_STATISTICS = "splitaudit.file_statistics"  # topic column metadata: read from files with row-group stats
MAX_FILTER_RANGES = 256  # offset ranges in one pushed-down filter; beyond, the closest ranges are merged
MAX_FILTER_FILES = 4096  # files named in one filter; beyond, the suspects are read from every file
KEY_COLUMNS = ("topic", "partition", "bucket")
FILE_COLUMN = "_file"  # a sink of files: each row's file, struct(size, modified), from Spark's file metadata
FileKey = tuple[int, int]  # a file's (size in bytes, modification time in microseconds since the epoch)


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


@dataclass(frozen=True)
class SuspectBucket:
    """One suspect bucket after pass 2: how many distinct offsets the sink holds in it, how many the source
    holds, and how many either holds (their union); with the bitmaps when they were fetched (None: that side
    has no offset there, or the bitmap was not asked for)."""

    sink_offsets: int
    source_offsets: int
    union_offsets: int
    sink_bitmap: bytes | None = None
    source_bitmap: bytes | None = None

    @property
    def bitmaps_known(self) -> bool:
        """True when the bitmaps of both sides are known (a side with no offset here needs none)."""
        return (self.sink_offsets == 0 or self.sink_bitmap is not None) and (
            self.source_offsets == 0 or self.source_bitmap is not None
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
class PassOne:
    """Pass 1's result: every bucket's stats, the number of invalid rows (null key, negative offset), and, for a
    sink read from files (`FILE_COLUMN`), which files hold each bucket: the later reads of suspect buckets then
    open only those files."""

    stats: dict[BucketKey, BucketStats]
    invalid: int
    files: dict[BucketKey, set[FileKey]] | None  # None: the frame was not read from files

    def files_holding(self, keys: Iterable[BucketKey]) -> set[FileKey] | None:
        """The (size, modified) of the files holding rows of these buckets; None when not known (a frame not read
        from files) or too many to name in one filter (more than MAX_FILTER_FILES)."""
        if self.files is None:
            return None
        holding = set().union(*(self.files.get(key, ()) for key in keys))
        return holding if len(holding) <= MAX_FILTER_FILES else None


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


def file_filter(files: set[FileKey]) -> Column:
    """A filter that keeps the rows of these files, which Spark applies to the files' metadata before opening
    them: the other files are not read."""
    size, modified = F.col(FILE_COLUMN)["size"], F.col(FILE_COLUMN)["modified"]
    return any_of([(size == F.lit(s)) & (modified == F.lit(m)) for s, m in sorted(files)])


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


def _covered(keys: Iterable[BucketKey]) -> int:
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


@contextmanager
def suspect_rows(sink: DataFrame, keys: set[BucketKey], files: set[FileKey] | None = None) -> Iterator[DataFrame]:
    """The rows of these buckets of the sink (and of those that `offset_filter`'s joined runs span), read once
    and kept (memory, spilling to disk) while the block runs; the sink itself when there are no keys. `files`
    (`PassOne.files_holding`) names the files that hold them: the others are not opened.

    Pass 2, the classification and the samples each read only suspect buckets; where row-group statistics prune
    well (a sink sorted by partition and offset) each such read is cheap, but on a sink whose files interleave
    partitions each is about a full scan without `files`. Kept, they cost one read.

    The kept rows have as many partitions as their scan had tasks (one per few files), nearly all empty when
    the suspects are few; every later stage over them would schedule a task per partition, and on a busy
    machine each task costs more than its rows. So the block reads them coalesced to one partition per core
    (no shuffle: the kept partitions are merged as they are read).
    """
    if not keys:
        yield sink
        return
    wanted = offset_filter(keys) if files is None else file_filter(files) & offset_filter(keys)
    rows = sink.filter(wanted).persist()
    try:
        rows.count()  # filled by one job, before concurrent queries could each start filling it
        yield rows.coalesce(sink.sparkSession.sparkContext.defaultParallelism)
    finally:
        rows.unpersist()


def exact_buckets(
    sink: DataFrame,
    sink_keys: set[BucketKey],
    source: DataFrame | None = None,
    source_keys: set[BucketKey] | frozenset[BucketKey] = frozenset(),
    *,
    with_bitmaps: bool,
) -> dict[BucketKey, SuspectBucket]:
    """Pass 2: exact counts of the given buckets of the sink (and of the source), with their bitmaps if asked.

    The rows of both sides go through one aggregate: per bucket, the bitmap of the sink's offsets, of the
    source's, and of either's; their cardinalities give missing (either - sink) and unexpected (either - source)
    offsets exactly. Without a source, only the sink's bitmap is built.
    """
    sides = [(sink, sink_keys, "sink")] + ([(source, set(source_keys), "source")] if source is not None else [])
    parts = [
        frame.filter(offset_filter(keys)).select("topic", "partition", "offset", F.lit(side).alias("side"))
        for frame, keys, side in sides
        if keys
    ]
    if not parts:
        return {}
    rows = reduce(DataFrame.unionByName, parts)
    position = F.col("offset").bitwiseAND(BUCKET_SIZE - 1)
    bitmap = {side: F.bitmap_construct_agg(F.when(F.col("side") == side, position)) for side in ("sink", "source")}
    aggregates = [bitmap["sink"].alias("sink")]
    if source is not None:
        aggregates += [bitmap["source"].alias("source"), F.bitmap_construct_agg(position).alias("either")]
    built = rows.groupBy("topic", "partition", F.shiftright("offset", BUCKET_BITS).alias("bucket")).agg(*aggregates)
    if any(_covered(keys) > len(keys) for _, keys, _ in sides):
        # joined runs: keep only the wanted buckets (a semi-join of the aggregated rows, a few per bucket)
        wanted = sorted(set(sink_keys) | set(source_keys))
        keys = sink.sparkSession.createDataFrame(wanted, "topic string, partition int, bucket bigint")
        built = built.join(F.broadcast(keys), list(KEY_COLUMNS), "left_semi")
    names = [name for name in ("sink", "source", "either") if name in built.columns]
    counts = [F.bitmap_count(name).alias(f"{name}_count") for name in names]
    fetched: list[Column | str] = [*KEY_COLUMNS, *counts, *(names[:2] if with_bitmaps else [])]
    exact = {}
    for row in built.select(*fetched).collect():
        in_sink = row["sink_count"]
        in_source = row["source_count"] if source is not None else 0
        exact[(row["topic"], row["partition"], row["bucket"])] = SuspectBucket(
            in_sink,
            in_source,
            row["either_count"] if source is not None else in_sink,
            bytes(row["sink"]) if with_bitmaps and in_sink else None,
            bytes(row["source"]) if with_bitmaps and in_source else None,
        )
    return exact
