"""Pass 1 over a sink of local Parquet files, read by pyarrow in Spark's Python workers: no hash grouping per row.

Spark's pass 1 (`pass_one.bucket_stats`) updates a hash table for every row; on a sink whose files mix partitions
that alone costs 1.4-1.9x a bare scan. Here Spark only hands out the files: each task reads its files' three
coordinate columns with pyarrow (the topic dictionary-encoded, as Parquet stores it), and `offset_runs` sums
each batch per (topic, partition, bucket) from its runs of consecutive offsets. What reaches the driver is one
row per (file, topic, partition, bucket): the same `PassOne` as Spark's pass, files included, so every later
stage is unchanged.

It applies to what `parquet_files` accepts: a Parquet sink whose files Spark lists on the local file system (or
a file system every worker mounts at the same path), with the coordinates as top-level columns of the files
(not the directory names of a partitioned layout). A file whose columns are missing or of another type than a
string topic and integer partition and offset makes the whole pass fall back to Spark's (`None`), so the
result never depends on which pass ran. Measured in benchmarks/sink_audit.py.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from splitaudit.audit.bitmaps import BucketKey
from splitaudit.audit.filters import FILE_COLUMN, FileKey
from splitaudit.audit.offset_runs import Int32s, Keys, bucket_sums
from splitaudit.audit.pass_one import BucketStats, PassOne
from splitaudit.audit.request import SinkColumns

BATCH_ROWS = 1 << 20  # rows per pyarrow batch: numpy's per-call cost stays small next to the rows
TASKS_PER_CORE = 3  # file groups per core: balanced by size, a slow file does not hold up the pass
BUCKET = "bucket"  # a task's row of one (file, topic, partition, bucket)
INVALID = "invalid"  # a task's row for the invalid rows of a file (null coordinate, negative offset)
UNSUITED = "unsuited"  # a task's row for a file this pass cannot read as Spark would: fall back

# What a task yields: (BUCKET, BucketStats, (size, modified)) per bucket of a file, (INVALID, count) or
# (UNSUITED, path, reason).
TaskRow = tuple[object, ...]


@dataclass(frozen=True)
class ParquetFiles:
    """The local Parquet files of a sink, and the columns of each that hold its coordinates."""

    paths: tuple[str, ...]
    sizes: tuple[int, ...]  # each path's bytes, which balance the tasks
    columns: SinkColumns
    by_file: bool  # the sink frame carries FILE_COLUMN: later stages read only the suspects' files


def parquet_files(sink: DataFrame, sink_format: str, columns: SinkColumns) -> ParquetFiles | None:
    """The files pass 1 may read itself, when `sink` (as `sink_files.read_sink` read it, unchanged since) is a
    Parquet sink on a local file system; else None (Spark's pass 1)."""
    if sink_format != "parquet":
        return None
    uris = sink.inputFiles()
    if not uris or not all(urlparse(uri).scheme == "file" for uri in uris):
        return None
    paths = tuple(unquote(urlparse(uri).path) for uri in uris)
    try:
        found = [os.stat(path) for path in paths]
    except OSError:
        return None
    if not all(stat.S_ISREG(status.st_mode) for status in found):
        return None
    return ParquetFiles(paths, tuple(status.st_size for status in found), columns, FILE_COLUMN in sink.columns)


def bucket_stats(spark: SparkSession, files: ParquetFiles) -> PassOne | None:
    """Pass 1 over the files, one Spark task per group of files; None when a file does not suit (see module)."""
    groups = _balanced(files.paths, files.sizes, spark.sparkContext.defaultParallelism * TASKS_PER_CORE)
    columns = files.columns
    rows = spark.sparkContext.parallelize(groups, len(groups)).flatMap(lambda group: _group_rows(group, columns))
    stats: dict[BucketKey, BucketStats] = {}
    held: dict[BucketKey, set[FileKey]] = {}
    invalid = 0
    for row in rows.collect():
        if row[0] == UNSUITED:
            return None
        if row[0] == INVALID:
            invalid += int(row[1])  # type: ignore[call-overload]
            continue
        _, found, file_key = row
        assert isinstance(found, BucketStats)
        stats[found.key] = found if found.key not in stats else stats[found.key].plus(found)
        held.setdefault(found.key, set()).add(file_key)  # type: ignore[arg-type]
    return PassOne(stats, invalid, held if files.by_file else None)


def _balanced(paths: tuple[str, ...], sizes: tuple[int, ...], groups: int) -> list[list[str]]:
    """The files in at most `groups` groups of about equal bytes (largest first, each to the lightest group)."""
    sized = sorted(zip(sizes, paths, strict=True), reverse=True)
    bins: list[tuple[int, list[str]]] = [(0, []) for _ in range(min(groups, len(sized)))]
    for size, path in sized:
        lightest = min(range(len(bins)), key=lambda i: bins[i][0])
        total, members = bins[lightest]
        members.append(path)
        bins[lightest] = (total + size, members)
    return [members for _, members in bins]


def _group_rows(paths: Iterable[str], columns: SinkColumns) -> Iterator[TaskRow]:
    """A task: the rows of each of its files (run in a Spark Python worker)."""
    for path in paths:
        yield from _file_rows(path, columns)


def _file_rows(path: str, columns: SinkColumns) -> Iterator[TaskRow]:
    """One file's sums per (topic, partition, bucket), and its invalid rows; UNSUITED when its coordinate columns
    are absent or not a string topic and integer partition and offset, or when pyarrow cannot read it (Spark's
    pass then reads it, and says what is wrong with it as it would have)."""
    names = (columns.topic, columns.partition, columns.offset)
    sums: dict[BucketKey, BucketStats] = {}
    invalid = 0
    try:
        status = os.stat(path)
        parquet = pq.ParquetFile(path, read_dictionary=[columns.topic])  # the topic as Parquet keeps it: no strings
        reason = _unsuited(parquet.schema_arrow, names)
        if reason:
            yield UNSUITED, path, reason
            return
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=list(dict.fromkeys(names))):
            invalid += _add_batch(sums, *(batch.column(name) for name in names))
    except (OSError, pa.ArrowException) as ex:  # unreadable; or a partition beyond int, an offset beyond long
        yield UNSUITED, path, str(ex)
        return
    file_key = (status.st_size, status.st_mtime_ns // 1_000_000 * 1_000)  # Spark's (size, modified micros)
    for found in sums.values():
        yield BUCKET, found, file_key
    if invalid:
        yield INVALID, invalid


def _unsuited(schema: pa.Schema, names: tuple[str, str, str]) -> str | None:
    """Why this file's coordinates cannot be read here as Spark reads them, or None."""
    for name in names:
        if schema.get_field_index(name) < 0:
            return f"no top-level column {name!r}"
    topic = schema.field(names[0]).type
    if pa.types.is_dictionary(topic):
        topic = topic.value_type
    if not (pa.types.is_string(topic) or pa.types.is_large_string(topic)):
        return f"topic column of type {topic}"
    for name in names[1:]:
        if not pa.types.is_integer(schema.field(name).type):
            return f"column {name!r} of type {schema.field(name).type}"
    return None


def _add_batch(sums: dict[BucketKey, BucketStats], topic: pa.Array, partition: pa.Array, offset: pa.Array) -> int:
    """Add one batch's sums per (topic, partition, bucket) to `sums`; return its invalid rows (a null
    coordinate, a negative offset), which are left out."""
    encoded = topic if pa.types.is_dictionary(topic.type) else pc.dictionary_encode(topic)
    topic_index = _numpy(encoded.indices, np.int32)
    partitions, offsets = _numpy(partition.cast(pa.int32()), np.int32), _numpy(offset.cast(pa.int64()), np.int64)
    invalid = 0
    if topic.null_count or partition.null_count or offset.null_count or (len(offsets) and int(offsets.min()) < 0):
        valid = offsets >= 0
        for column in (topic, partition, offset):
            if column.null_count:
                valid &= column.is_valid().to_numpy(zero_copy_only=False)
        invalid = len(valid) - int(np.count_nonzero(valid))
        topic_index, partitions, offsets = topic_index[valid], partitions[valid], offsets[valid]
    if len(offsets) == 0:
        return invalid
    keys, of_key = _keys(encoded.dictionary.to_pylist(), topic_index, partitions)
    summed = bucket_sums(keys, offsets)
    per_bucket = (summed.key, summed.bucket, summed.rows, summed.first, summed.last, summed.hash_high, summed.hash_low)
    for key, bucket, *add in zip(*(a.tolist() for a in per_bucket), strict=True):
        found = BucketStats(*of_key(key), bucket, *add)
        sums[found.key] = found if found.key not in sums else sums[found.key].plus(found)
    return invalid


def _keys(
    names: list[str], topic_index: Int32s, partitions: Int32s
) -> tuple[Keys | None, Callable[[int], tuple[str, int]]]:
    """Each row's (topic, partition) as a small key for `bucket_sums` (None: one key for all; int16 where they
    fit, which numpy sorts by radix), and the way back from a key. Only a batch of several topics, or of
    partitions far apart, pays for a dictionary of its keys."""
    least, most = int(partitions.min()), int(partitions.max())
    if len(names) == 1 and most - least < (1 << 15):
        keys = None if least == most else (partitions - np.int32(least)).astype(np.int16)
        return keys, lambda key: (names[0], key + least)
    combined = (topic_index.astype(np.int64) << 32) | (partitions.astype(np.int64) + (1 << 31))
    dictionary = pc.dictionary_encode(pa.array(combined))  # (topic, partition) as one non-negative long
    values = _numpy(dictionary.dictionary, np.int64)
    indices = _numpy(dictionary.indices, np.int32)

    def of_key(key: int) -> tuple[str, int]:
        value = int(values[key])
        return names[value >> 32], (value & 0xFFFFFFFF) - (1 << 31)

    return (indices.astype(np.int16) if len(values) < (1 << 15) else indices), of_key


def _numpy(array: pa.Array, dtype: type[np.int32] | type[np.int64]) -> Any:
    """An Arrow integer array as numpy of this type (no copy where it already is), nulls as 0 (the caller masks
    them)."""
    if array.null_count:
        array = pc.fill_null(array, 0)
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=dtype)
