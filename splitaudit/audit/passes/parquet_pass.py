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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from splitaudit.audit.passes.bitmaps import BucketKey
from splitaudit.audit.passes.duplicates import Lineage
from splitaudit.audit.passes.filters import FILE_COLUMN, FileKey
from splitaudit.audit.passes.offset_runs import piece_sums, run_pieces
from splitaudit.audit.passes.pass_one import BucketStats, PassOne, Runs
from splitaudit.audit.passes.row_runs import key_codes, pieces_table
from splitaudit.audit.request import SinkColumns

BATCH_ROWS = 1 << 20  # rows per pyarrow batch: numpy's per-call cost stays small next to the rows
TASKS_PER_CORE = 3  # file groups per core: balanced by size, a slow file does not hold up the pass
BUCKET = "bucket"  # a task's row of one (file, topic, partition, bucket)
INVALID = "invalid"  # a task's row for the invalid rows of a file (null coordinate, negative offset)
UNSUITED = "unsuited"  # a task's row for a file this pass cannot read as Spark would: fall back
RUNS = "runs"  # a task's row of a file's runs (`row_runs`): pass 2 of its buckets needs no second read
RUNLESS = "runless"  # a task's row for a file whose rows are too scattered for its runs to be worth keeping
ROWS_PER_RUN = 64  # a file's runs are kept when there are at most one per this many rows (or MIN_RUNS)
MIN_RUNS = 4_096

# What a task yields: (BUCKET, BucketStats, (size, modified)) per bucket of a file, (INVALID, count), (RUNS,
# table, (size, modified)) or (RUNLESS, (size, modified)) per file, or (UNSUITED, path, reason).
TaskRow = tuple[object, ...]


@dataclass(frozen=True)
class ParquetFiles:
    """The local Parquet files of a sink, and the columns of each that hold its coordinates."""

    paths: tuple[str, ...]
    sizes: tuple[int, ...]  # each path's bytes, which balance the tasks
    columns: SinkColumns
    by_file: bool  # the sink frame carries FILE_COLUMN: later stages read only the suspects' files
    lineage: tuple[str, ...] = ()  # the lineage columns the runs carry (`duplicates.Lineage`): none, unclassified


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
    lineage = Lineage.of(sink.columns)
    named = (*lineage.generation, "reader_id") if lineage.classified else ()
    return ParquetFiles(paths, tuple(status.st_size for status in found), columns, FILE_COLUMN in sink.columns, named)


def bucket_stats(spark: SparkSession, files: ParquetFiles) -> PassOne | None:
    """Pass 1 over the files, one Spark task per group of files; None when a file does not suit (see module)."""
    groups = _balanced(files.paths, files.sizes, spark.sparkContext.defaultParallelism * TASKS_PER_CORE)
    columns, lineage = files.columns, files.lineage
    rows = spark.sparkContext.parallelize(groups, len(groups)).flatMap(
        lambda group: _group_rows(group, columns, lineage)
    )
    stats: dict[BucketKey, BucketStats] = {}
    held: dict[BucketKey, set[FileKey]] = {}
    runs: list[pa.Table] = []
    runless: set[FileKey] = set()
    invalid = 0
    for row in rows.collect():
        if row[0] == UNSUITED:
            return None
        if row[0] == INVALID:
            invalid += int(row[1])  # type: ignore[call-overload]
            continue
        if row[0] == RUNS:
            runs.append(row[1])
            continue
        if row[0] == RUNLESS:
            runless.add(row[1])  # type: ignore[arg-type]
            continue
        _, found, file_key = row
        assert isinstance(found, BucketStats)
        stats[found.key] = found if found.key not in stats else stats[found.key].plus(found)
        held.setdefault(found.key, set()).add(file_key)  # type: ignore[arg-type]
    return PassOne(stats, invalid, held if files.by_file else None, Runs(_joined(runs), frozenset(runless)))


def _joined(runs: list[pa.Table]) -> pa.Table | None:
    """The files' runs as one table; None (no runs kept: pass 2 reads the suspects) when there are none or
    files typed their lineage columns too differently to join (an int attempt in one, a string in another)."""
    try:
        return pa.concat_tables(runs, promote_options="permissive") if runs else None
    except pa.ArrowException:
        return None


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


def _group_rows(paths: Iterable[str], columns: SinkColumns, lineage: tuple[str, ...]) -> Iterator[TaskRow]:
    """A task: the rows of each of its files (run in a Spark Python worker)."""
    for path in paths:
        yield from _file_rows(path, columns, lineage)


def _file_rows(path: str, columns: SinkColumns, lineage: tuple[str, ...] = ()) -> Iterator[TaskRow]:
    """One file's sums per (topic, partition, bucket), its invalid rows and its runs (with these lineage columns);
    UNSUITED when its coordinate or lineage columns are absent or the coordinates not a string topic and integer
    partition and offset, or when pyarrow cannot read it (Spark's pass then reads it, and says what is wrong
    with it as it would have)."""
    names = (columns.topic, columns.partition, columns.offset)
    sums: dict[BucketKey, BucketStats] = {}
    runs: list[pa.Table] = []
    rows = invalid = 0
    try:
        status = os.stat(path)
        schema = pq.read_schema(path)
        strings = [n for n in (columns.topic, *lineage) if n in schema.names and _is_string(schema.field(n).type)]
        parquet = pq.ParquetFile(path, read_dictionary=strings)  # strings as Parquet keeps them: no copies
        reason = _unsuited(parquet.schema_arrow, names, lineage)
        if reason:
            yield UNSUITED, path, reason
            return
        for group in range(parquet.metadata.num_row_groups):
            constant = _constant_columns(parquet, group, lineage)
            wanted = [name for name in dict.fromkeys((*names, *lineage)) if name not in constant]
            for batch in parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[group], columns=wanted):
                rows += batch.num_rows
                invalid += _add_batch(sums, runs, _with_constants(batch, constant), names, lineage)
    except (OSError, pa.ArrowException) as ex:  # unreadable; or a partition beyond int, an offset beyond long
        yield UNSUITED, path, str(ex)
        return
    file_key = (status.st_size, status.st_mtime_ns // 1_000_000 * 1_000)  # Spark's (size, modified micros)
    for found in sums.values():
        yield BUCKET, found, file_key
    if invalid:
        yield INVALID, invalid
    pieces = sum(len(table) for table in runs)
    if pieces <= max(MIN_RUNS, rows // ROWS_PER_RUN):
        if pieces:
            yield RUNS, pa.concat_tables(runs), file_key
    else:
        yield RUNLESS, file_key


def _constant_columns(parquet: pq.ParquetFile, group: int, lineage: tuple[str, ...]) -> dict[str, pa.Array]:
    """The lineage columns whose statistics prove them constant in this row group (no null, exact min equal to
    max: a streaming file is written by one reader of one attempt), each as a one-value array of its type: they
    are not read. Only string and integer columns; others, and columns without such statistics, are read."""
    constant: dict[str, pa.Array] = {}
    group_meta = parquet.metadata.row_group(group)
    position = {group_meta.column(i).path_in_schema: i for i in range(group_meta.num_columns)}
    for name in lineage:
        kind = parquet.schema_arrow.field(name).type
        kind = kind.value_type if pa.types.is_dictionary(kind) else kind
        statistics = group_meta.column(position[name]).statistics if name in position else None
        if statistics is None or not (_is_string(kind) or pa.types.is_integer(kind)):
            continue
        exact = getattr(statistics, "is_min_exact", True) and getattr(statistics, "is_max_exact", True)
        if not (statistics.has_min_max and statistics.has_null_count and exact) or statistics.null_count:
            continue
        if statistics.min != statistics.max:
            continue
        try:
            constant[name] = pa.array([statistics.min], kind)
        except (pa.ArrowException, TypeError, ValueError):  # a value its statistics give in another form: read it
            continue
    return constant


def _with_constants(batch: pa.RecordBatch, constant: dict[str, pa.Array]) -> pa.RecordBatch:
    """The batch with each constant column added as a dictionary of its one value (no value copied per row)."""
    if not constant:
        return batch
    zeros = pa.array(np.zeros(batch.num_rows, dtype=np.int32))
    arrays = [*batch.columns, *(pa.DictionaryArray.from_arrays(zeros, value) for value in constant.values())]
    return pa.RecordBatch.from_arrays(arrays, names=[*batch.schema.names, *constant])


def _is_string(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _unsuited(schema: pa.Schema, names: tuple[str, str, str], lineage: tuple[str, ...] = ()) -> str | None:
    """Why this file's coordinates (or lineage columns) cannot be read here as Spark reads them, or None."""
    for name in (*names, *lineage):
        if schema.get_field_index(name) < 0:
            return f"no top-level column {name!r}"
    topic = schema.field(names[0]).type
    if pa.types.is_dictionary(topic):
        topic = topic.value_type
    if not _is_string(topic):
        return f"topic column of type {topic}"
    for name in names[1:]:
        if not pa.types.is_integer(schema.field(name).type):
            return f"column {name!r} of type {schema.field(name).type}"
    for name in lineage:
        kind = schema.field(name).type
        if pa.types.is_nested(kind):
            return f"lineage column {name!r} of type {kind}"
    return None


def _add_batch(
    sums: dict[BucketKey, BucketStats],
    runs: list[pa.Table],
    batch: pa.RecordBatch,
    names: tuple[str, str, str],
    lineage: tuple[str, ...],
) -> int:
    """Add one batch's sums per (topic, partition, bucket) to `sums` and its runs (`row_runs`: per piece its
    topic, partition, lineage, bucket, first and last) to `runs`; return its invalid rows (a null coordinate, a
    negative offset), which are left out of both."""
    topic, partition, offset = (batch.column(name) for name in names)
    offsets = _numpy(offset.cast(pa.int64()), np.int64)
    table = pa.table(
        {
            "topic": topic,
            "partition": partition.cast(pa.int32()),
            **{name: batch.column(name) for name in lineage},
        }
    )
    invalid = 0
    if topic.null_count or partition.null_count or offset.null_count or (len(offsets) and int(offsets.min()) < 0):
        valid = offsets >= 0
        for column in (topic, partition, offset):
            if column.null_count:
                valid &= column.is_valid().to_numpy(zero_copy_only=False)
        invalid = len(valid) - int(np.count_nonzero(valid))
        table, offsets = table.filter(pa.array(valid)), offsets[valid]
    if len(offsets) == 0:
        return invalid
    pieces = run_pieces(key_codes(table.columns), offsets)
    found = pieces_table(table, pieces)
    codes = key_codes([found.column("topic"), found.column("partition")])  # per piece, its (topic, partition)
    partition_key = np.zeros(len(pieces), np.int64) if codes is None else codes.astype(np.int64)
    summed = piece_sums(partition_key, pieces)
    where = _first_of(partition_key)
    topics = found.column("topic").take(pa.array(where[summed.key])).to_pylist()
    partitions = found.column("partition").take(pa.array(where[summed.key])).to_pylist()
    per_bucket = (summed.bucket, summed.rows, summed.first, summed.last, summed.hash_high, summed.hash_low)
    for name, number, bucket, *add in zip(topics, partitions, *(a.tolist() for a in per_bucket), strict=True):
        bucket_stats = BucketStats(name, number, bucket, *add)
        key = bucket_stats.key
        sums[key] = bucket_stats if key not in sums else sums[key].plus(bucket_stats)
    runs.append(found.cast(pa.schema([_plain(field) for field in found.schema])))
    return invalid


def _first_of(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """For each key value 0..max, the index of its first appearance in `keys` (0 for values absent)."""
    first = np.zeros(int(keys.max()) + 1, dtype=np.int64)
    first[keys[::-1]] = np.arange(len(keys) - 1, -1, -1)
    return first


def _plain(field: pa.Field) -> pa.Field:
    """A field as a run table keeps it: dictionary columns decoded (a file's runs are few), so that files' runs
    concatenate whatever their dictionaries."""
    return field.with_type(field.type.value_type) if pa.types.is_dictionary(field.type) else field


def _numpy(array: pa.Array, dtype: type[np.int32] | type[np.int64]) -> Any:
    """An Arrow integer array as numpy of this type (no copy where it already is), nulls as 0 (the caller masks
    them)."""
    if array.null_count:
        array = pc.fill_null(array, 0)
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=dtype)
