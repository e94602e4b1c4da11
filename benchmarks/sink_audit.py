"""Sink-audit benchmark: splitaudit's fingerprint-then-suspects audit against a bare scan and a naive audit, same run.

Generates a Parquet sink of N rows in one of two layouts (`--layout`), then times on one Spark session: a bare scan
of the three key columns, splitaudit's `audit_sink`, and the naive audit (groupBy(topic, partition, offset).count()
for duplicates, lag() over a window ordered by offset for gaps). Every approach must find exactly the planted
anomalies; splitaudit's findings (kind, topic, partition, count, offset ranges) must equal the planted ones. Prints
JSON with the times, the ratios to the bare scan, and the peak RSS of the Spark driver JVM and of this Python driver
while each size is scanned and audited (sinks are generated first, outside the measurement), and the same peaks
sampled while the audits alone ran. The naive audits run after all of those, with their own peak: the JVM keeps the
heap they grow, so running them in between would inflate the audit's figures.

- `sorted`: one topic, 12 partitions of dense offsets from 0, each in files of its own, lineage columns subtask
  and attempt; 1,000 duplicate rows planted in partition 3 and a 100-offset gap in partition 7. Row-group
  statistics prune everything but the suspects' row groups, and prove the single topic.
- `streaming`: what a Kafka-to-files job writes: 800 files, file i written by subtask i % 4 in time window i // 4
  and holding that window's records of the subtask's three partitions interleaved in time order; two topics
  (8 + 4 partitions), offsets from bases beyond 2**31, payload columns (16-byte key, 8-56-byte value, two
  timestamps) and lineage reader_id, subtask, attempt. Planted: a 300-offset gap (orders 5), 1,500 offsets of
  orders 2 emitted again by another subtask's reader (double assignment) and 2,000 of clicks 1 emitted again by
  their own reader in attempt 1 (replay). Row-group statistics prune little.

`--damage wide` plants what a real beam#31313 incident leaves instead of the few duplicates: in the sorted layout
every partition read twice from a third of its offsets on (in files of their own, written after), in the
streaming one every partition of topic orders read twice from a third of the time windows on by a twin reader
(double assignment), with the replay and the gap; every planted range is asserted exactly. `--no-lineage` audits
and scans the sink without its lineage columns (every duplicate then unclassified); with them, the bare scan
reads the lineage columns too, as the audit does.

`--stages` turns Spark's UI on (127.0.0.1, a free port) and reports Spark's own metrics of each stage of the
last audit (wall and task time, rows and bytes read, rows shuffled): where the audit's time goes.

The bare scan (the floor) is count(*), max(offset), max(partition) and count(topic): all three columns are read and
decoded, and no topic string is compared. An earlier floor took max(topic), whose string comparison on every row
made it about 4x dearer at 100 M rows; it is still timed, as `bare_scan_max_topic_s`, to compare with figures
measured against it. One untimed scan first warms the JVM, so that no timed query pays for JIT compilation, and one
audit of the first sink starts Spark's Python workers (reported as `cold_first_audit_s`). The machine is shared:
`--repeat N` times the scans and the audit N times each, interleaved, and reports the fastest of each (the naive
audit runs once).

    .venv/bin/python benchmarks/sink_audit.py [--layout streaming] --rows 10000000 [--rows 100000000] \
        [--data /big/disk] [--repeat 3] [--skip-naive] [--stages] [--damage few|wide] [--no-lineage]

`--spark-pass` also times the same audit with Spark's grouped pass 1 (`pass_one.bucket_stats`), the audit as it
was before `parquet_pass`: the before and after of one run. `--lean` generates the streaming layout without its
payload columns (a billion rows of it take 4.5 GB instead of ~65 GB); `--cluster N` starts the stack's Spark
standalone cluster (a master and N one-core workers on 127.0.0.1, `--executor-memory` each) for the run and
stops it after. The peaks reported are the Spark driver JVM's, this Python driver's, the executor JVMs' (the
largest and their sum, on a cluster) and the PySpark Python workers' (their sum). The free space of `--data` is
checked against the sinks' expected size before anything is generated.

The measured figures, before and after, are in docs/audit.md ("How it scales").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F
from spark_bench import UI_CONFIG, StageMetrics, add_master_options, spark_master, timed

from splitaudit.audit.checks.findings import DOUBLE_ASSIGNMENT, DUPLICATE, MISSING, REPLAY
from splitaudit.audit.passes.parquet_pass import parquet_files
from splitaudit.audit.passes.sink import audit_sink
from splitaudit.audit.passes.sink_files import read_sink
from splitaudit.audit.request import SinkColumns
from splitaudit.clients.spark import spark_session

PARTITIONS = 12
DUPLICATES = 1_000
DUPLICATE_PARTITION = 3
GAP = 100
GAP_PARTITION = 7
FILE_ROWS = 2_000_000

# The streaming layout: what a Kafka-to-files job writes. Subtask s reads every SUBTASKS-th (topic, partition);
# each of its files holds one time window of all its partitions, interleaved in time order, with payload columns.
STREAM_TOPICS = (("orders", 8), ("clicks", 4))
STREAM_FILES = 800
SUBTASKS = 4
OFFSET_BASE = 3_000_000_000  # beyond int32, and not bucket-aligned (below): offsets of a long-lived topic
STREAM_GAP = ("orders", 5, 300)  # (topic, partition, offsets missing)
STREAM_DOUBLE = ("orders", 2, 1_500)  # offsets emitted again by a second reader of attempt 0
STREAM_REPLAY = ("clicks", 1, 2_000)  # offsets emitted again by their own reader in attempt 1
WIDE_TOPIC = "orders"  # --damage wide: every partition of it read twice from the restore on
WIDE_RESTORE, WIDE_RESTORE_OF = 1, 3  # the restore: after this share of the time windows

Expected = dict[tuple[str, str, int], tuple[int, tuple[tuple[int, int], ...]]]  # (kind, topic, partition)


@dataclass(frozen=True)
class Layout:
    """A generated sink: how many rows it has and exactly what the audit must find in it."""

    rows: int
    expected: Expected

    @property
    def naive_expected(self) -> tuple[int, int]:
        """What the naive audit finds: duplicate rows and missing offsets, unclassified."""
        duplicates = sum(count for (kind, _, _), (count, _) in self.expected.items() if kind != MISSING)
        return duplicates, sum(count for (kind, _, _), (count, _) in self.expected.items() if kind == MISSING)


def generate_sorted(directory: Path, rows: int, *, wide: bool = False) -> Layout:
    """The sorted layout: one topic, partition p holds offsets 0..rows/12-1 in files of its own, three key
    columns and two lineage columns (no reader_id: duplicates unclassified), with the planted duplicates and gap.
    `wide`: instead of the 1,000 planted duplicates, every partition read twice from a third of its offsets on
    (the second reading in files of their own, written after), the gap missing from both readings."""
    per_partition = rows // PARTITIONS
    duplicate_start, gap_start = per_partition // 3, per_partition // 2
    expected: Expected = {(MISSING, "events", GAP_PARTITION): (GAP, ((gap_start, gap_start + GAP - 1),))}
    if wide:
        for partition in range(PARTITIONS):
            ranges: tuple[tuple[int, int], ...] = ((duplicate_start, per_partition - 1),)
            if partition == GAP_PARTITION:
                ranges = ((duplicate_start, gap_start - 1), (gap_start + GAP, per_partition - 1))
            count = sum(last - first + 1 for first, last in ranges)
            expected[(DUPLICATE, "events", partition)] = (count, ranges)
    else:
        expected[(DUPLICATE, "events", DUPLICATE_PARTITION)] = (
            DUPLICATES,
            ((duplicate_start, duplicate_start + DUPLICATES - 1),),
        )
    duplicated = sum(count for (kind, _, _), (count, _) in expected.items() if kind == DUPLICATE)
    layout = Layout(per_partition * PARTITIONS - GAP + duplicated, expected)
    if (directory / "_SUCCESS").exists():
        return layout
    directory.mkdir(parents=True, exist_ok=True)
    file_index = 0
    written: set[int] = set()
    for partition in [*range(PARTITIONS), *(range(PARTITIONS) if wide else ())]:
        second = partition in written  # the second reading of a wide layout
        offsets = np.arange(per_partition, dtype=np.int64)
        if partition == GAP_PARTITION:
            offsets = np.concatenate((offsets[:gap_start], offsets[gap_start + GAP :]))
        if second:
            offsets = offsets[offsets >= duplicate_start]
        elif partition == DUPLICATE_PARTITION and not wide:
            offsets = np.concatenate((offsets, offsets[duplicate_start : duplicate_start + DUPLICATES]))
        written.add(partition)
        for chunk in range(0, len(offsets), FILE_ROWS):
            part = offsets[chunk : chunk + FILE_ROWS]
            table = pa.table(
                {
                    "topic": pa.array(["events"] * len(part), pa.string()),
                    "partition": pa.array(np.full(len(part), partition, dtype=np.int32)),
                    "offset": pa.array(part),
                    "subtask": pa.array(np.full(len(part), (partition + second) % 2, dtype=np.int32)),
                    "attempt": pa.array(np.zeros(len(part), dtype=np.int32)),
                }
            )
            pq.write_table(table, directory / f"part-{file_index:05d}.parquet")
            file_index += 1
    (directory / "_SUCCESS").touch()
    return layout


@dataclass(frozen=True)
class _Emitted:
    """Rows of one (topic, partition) emitted by one reader into one file."""

    index: int  # the (topic, partition)'s index in _stream_partitions()
    offsets: npt.NDArray[np.int64]
    subtask: int
    attempt: int


def _stream_partitions() -> list[tuple[str, int]]:
    return [(topic, partition) for topic, count in STREAM_TOPICS for partition in range(count)]


def generate_streaming(directory: Path, rows: int, *, payload: bool = True, wide: bool = False) -> Layout:
    """The streaming layout: STREAM_FILES files, file i written by subtask i % SUBTASKS in time window
    i // SUBTASKS, holding that window's records of the subtask's partitions interleaved in (random) time order;
    offsets from large per-partition bases; payload columns key (16 bytes), value (8-56 bytes) and two
    timestamps; lineage reader_id, subtask, attempt. Planted: a gap, a double assignment (a second reader emits
    a run of another subtask's partition) and a replay (the reader emits a run again in attempt 1). `wide`: instead
    of the one planted double assignment, every partition of topic orders read twice from a restore on (window
    WIDE_RESTORE of every WIDE_RESTORE_OF): from then, each subtask's files also hold, interleaved, the records of
    the previous subtask's orders partitions (a twin reader in the same attempt), the gap missing from both."""
    partitions = _stream_partitions()
    windows = STREAM_FILES // SUBTASKS
    per_window = rows // (len(partitions) * windows)
    dense = per_window * windows
    bases = [OFFSET_BASE * (1 + index % 3) + index * 987_654_321 for index in range(len(partitions))]
    index_of = {part: index for index, part in enumerate(partitions)}
    gap_index, double_index, replay_index = (
        index_of[plant[:2]] for plant in (STREAM_GAP, STREAM_DOUBLE, STREAM_REPLAY)
    )
    gap_first = bases[gap_index] + dense // 2 + 12_345
    double_first = bases[double_index] + dense // 3 + 777
    replay_first = bases[replay_index] + (dense * 2) // 3 + 4_321
    restore_window = windows * WIDE_RESTORE // WIDE_RESTORE_OF
    expected: Expected = {
        (MISSING, *STREAM_GAP[:2]): (STREAM_GAP[2], ((gap_first, gap_first + STREAM_GAP[2] - 1),)),
        (REPLAY, *STREAM_REPLAY[:2]): (STREAM_REPLAY[2], ((replay_first, replay_first + STREAM_REPLAY[2] - 1),)),
    }
    if wide:
        for index, (topic, partition) in enumerate(partitions):
            if topic != WIDE_TOPIC:
                continue
            first, last = bases[index] + restore_window * per_window, bases[index] + dense - 1
            ranges: tuple[tuple[int, int], ...] = ((first, last),)
            if index == gap_index:
                ranges = ((first, gap_first - 1), (gap_first + STREAM_GAP[2], last))
            expected[(DOUBLE_ASSIGNMENT, topic, partition)] = (sum(b - a + 1 for a, b in ranges), ranges)
    else:
        expected[(DOUBLE_ASSIGNMENT, *STREAM_DOUBLE[:2])] = (
            STREAM_DOUBLE[2],
            ((double_first, double_first + STREAM_DOUBLE[2] - 1),),
        )
    twice = sum(count for (kind, _, _), (count, _) in expected.items() if kind != MISSING)
    layout = Layout(dense * len(partitions) - STREAM_GAP[2] + twice, expected)
    if (directory / "_SUCCESS").exists():
        return layout
    directory.mkdir(parents=True, exist_ok=True)
    extra: dict[int, list[_Emitted]] = {}
    double_window = (double_first - bases[double_index]) // per_window
    double_reader = (double_index + 1) % SUBTASKS  # not the partition's own subtask
    if not wide:
        extra.setdefault(double_window * SUBTASKS + double_reader, []).append(
            _Emitted(double_index, np.arange(double_first, double_first + STREAM_DOUBLE[2]), double_reader, 0)
        )
    replay_reader = replay_index % SUBTASKS
    extra.setdefault((windows - 1) * SUBTASKS + replay_reader, []).append(
        _Emitted(replay_index, np.arange(replay_first, replay_first + STREAM_REPLAY[2]), replay_reader, 1)
    )
    rng = np.random.default_rng(14)
    pool = pa.py_buffer(rng.integers(0, 256, size=64 << 20, dtype=np.uint8).tobytes())  # payload bytes: slices
    topics = pa.array([topic for topic, _ in STREAM_TOPICS])
    topic_of = np.array([[topic for topic, _ in STREAM_TOPICS].index(t) for t, _ in partitions], dtype=np.int32)
    partition_of = np.array([p for _, p in partitions], dtype=np.int32)
    for file_index in range(STREAM_FILES):
        subtask, window = file_index % SUBTASKS, file_index // SUBTASKS
        emitted = []
        read = list(range(subtask, len(partitions), SUBTASKS))
        if wide and window >= restore_window:  # the twin reads the previous subtask's orders partitions too
            twin = range((subtask - 1) % SUBTASKS, len(partitions), SUBTASKS)
            read += [index for index in twin if partitions[index][0] == WIDE_TOPIC]
        for index in read:
            offsets = bases[index] + np.arange(window * per_window, (window + 1) * per_window, dtype=np.int64)
            if index == gap_index:
                offsets = offsets[(offsets < gap_first) | (offsets >= gap_first + STREAM_GAP[2])]
            emitted.append(_Emitted(index, offsets, subtask, 0))
        own = np.concatenate([np.full(len(e.offsets), k, dtype=np.int32) for k, e in enumerate(emitted)])
        rng.shuffle(own)  # the time order: each partition's offsets in order, the partitions interleaved
        index_column = np.empty(len(own), dtype=np.int32)
        offset_column = np.empty(len(own), dtype=np.int64)
        for k, e in enumerate(emitted):
            positions = np.flatnonzero(own == k)
            index_column[positions] = e.index
            offset_column[positions] = e.offsets
        late = extra.get(file_index, [])  # emitted at the end of the window
        index_column = np.concatenate([index_column, *(np.full(len(e.offsets), e.index, np.int32) for e in late)])
        offset_column = np.concatenate([offset_column, *(e.offsets for e in late)])
        subtasks = np.concatenate(
            [np.full(len(own), subtask, np.int32), *(np.full(len(e.offsets), e.subtask, np.int32) for e in late)]
        )
        attempts = np.concatenate(
            [np.zeros(len(own), np.int32), *(np.full(len(e.offsets), e.attempt, np.int32) for e in late)]
        )
        count = len(offset_column)
        columns = {
            "topic": pa.DictionaryArray.from_arrays(pa.array(topic_of[index_column]), topics),
            "partition": pa.array(partition_of[index_column]),
            "offset": pa.array(offset_column),
        }
        if payload:
            lengths = rng.integers(8, 57, size=count, dtype=np.int32)
            value_offsets = np.concatenate((np.zeros(1, np.int32), np.cumsum(lengths, dtype=np.int32)))
            start = int(rng.integers(0, pool.size - int(value_offsets[-1]) - 16 * count))
            key_start = start + int(value_offsets[-1])
            timestamps = 1_700_000_000_000 + window * 60_000 + np.sort(rng.integers(0, 60_000, size=count))
            columns |= {
                "key": pa.FixedSizeBinaryArray.from_buffers(
                    pa.binary(16), count, [None, pool.slice(key_start, 16 * count)]
                ),
                "value": pa.BinaryArray.from_buffers(
                    pa.binary(), count, [None, pa.py_buffer(value_offsets.tobytes()), pool.slice(start)]
                ),
                "event_time": pa.array(timestamps - rng.integers(0, 5_000, size=count), pa.timestamp("ms")),
                "kafka_time": pa.array(timestamps, pa.timestamp("ms")),
            }
        table = pa.table(
            {
                **columns,
                "reader_id": pa.array([f"reader-{s}" for s in range(SUBTASKS)])
                .dictionary_encode()
                .take(pa.array(subtasks)),
                "subtask": pa.array(subtasks),
                "attempt": pa.array(attempts),
            }
        )
        pq.write_table(table, directory / f"part-{file_index:05d}.parquet")
    (directory / "_SUCCESS").touch()
    return layout


GENERATORS: dict[str, Callable[..., Layout]] = {"sorted": generate_sorted, "streaming": generate_streaming}
# Bytes on disk per row, measured on generated sinks (100 M rows), with a margin: the free-space check's basis
# (a wide layout has up to 1.5 times the rows).
ROW_BYTES = {"sorted": 6, "streaming": 72, "streaming-lean": 12}
LINEAGE = ("reader_id", "attempt", "subtask", "job_id")  # the lineage columns `read_sink` keeps


def unclassified(expected: Expected) -> Expected:
    """What the audit finds in a sink read without its lineage columns: every duplicate a DUPLICATE."""
    return {
        (DUPLICATE if kind in (DOUBLE_ASSIGNMENT, REPLAY) else kind, t, p): v for (kind, t, p), v in expected.items()
    }


class PeakRss(threading.Thread):
    """Peak RSS, sampled every 0.2 s, of this process, of the Spark driver JVM (pyspark's gateway), of the executor
    JVMs a standalone cluster's workers started (their largest, and their sum) and of every PySpark Python
    worker on the machine (their sum: they run only for Spark's tasks); `reset` starts a new window, so each
    sink size gets its own peaks."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.python = self.jvm = self.executor = self.executors = self.python_workers = 0
        self.done = threading.Event()

    def reset(self) -> None:
        self.python = self.jvm = self.executor = self.executors = self.python_workers = 0

    def peaks_mib(self) -> dict[str, int]:
        return {
            "spark_driver_jvm": self.jvm >> 20,
            "python_driver": self.python >> 20,
            "largest_executor_jvm": self.executor >> 20,
            "executor_jvms": self.executors >> 20,
            "python_workers": self.python_workers >> 20,
        }

    def run(self) -> None:
        me = psutil.Process()
        while not self.done.wait(0.2):
            self.python = max(self.python, me.memory_info().rss)
            executors, workers = [], 0
            mine = {child.pid for child in me.children(recursive=True)}
            for process in psutil.process_iter(["cmdline", "memory_info"]):
                command = " ".join(process.info["cmdline"] or ())
                rss = process.info["memory_info"].rss if process.info["memory_info"] else 0
                if process.pid in mine and "org.apache.spark.deploy.SparkSubmit" in command:  # pyspark's gateway
                    self.jvm = max(self.jvm, rss)
                elif "CoarseGrainedExecutorBackend" in command:
                    executors.append(rss)
                elif "pyspark.daemon" in command or "pyspark.worker" in command:
                    workers += rss
            self.executor = max(self.executor, *executors, 0)
            self.executors = max(self.executors, sum(executors))
            self.python_workers = max(self.python_workers, workers)


def bare_scan(spark: SparkSession, path: str, *, lineage: bool = True) -> tuple[int, int]:
    """The floor: read the columns the audit reads once (an aggregate over each, so none is pruned): the three key
    columns, and with `lineage` those lineage columns the sink has."""
    frame = spark.read.parquet(path)
    extra = [F.count(c) for c in LINEAGE if lineage and c in frame.columns]
    row = frame.agg(F.count("*"), F.max("offset"), F.max("partition"), F.count("topic"), *extra).first()
    assert row is not None
    return int(row[0]), int(row[1])


def bare_scan_max_topic(spark: SparkSession, path: str) -> tuple[int, int]:
    """The earlier floor: the same with max(topic), a string comparison per row."""
    frame = spark.read.parquet(path)
    row = frame.agg(F.count("*"), F.max("offset"), F.max("partition"), F.max("topic")).first()
    assert row is not None
    return int(row[0]), int(row[1])


def naive(spark: SparkSession, path: str) -> tuple[int, int]:
    frame = spark.read.parquet(path).select("topic", "partition", "offset")
    duplicates = (
        frame.groupBy("topic", "partition", "offset")
        .count()
        .filter("count > 1")
        .agg(F.coalesce(F.sum(F.col("count") - 1), F.lit(0)))
        .first()
    )
    window = Window.partitionBy("topic", "partition").orderBy("offset")
    gaps = (
        frame.distinct()
        .withColumn("previous", F.lag("offset").over(window))
        .filter(F.col("offset") > F.col("previous") + 1)
        .agg(F.coalesce(F.sum(F.col("offset") - F.col("previous") - 1), F.lit(0)))
        .first()
    )
    assert duplicates is not None
    assert gaps is not None
    return int(duplicates[0]), int(gaps[0])


def splitaudit_audit(spark: SparkSession, path: str, *, spark_pass: bool = False, lineage: bool = True) -> Expected:
    """The audit's findings in the shape of `Layout.expected`: count and offset ranges per (kind, topic, partition).
    With `spark_pass`, pass 1 is Spark's grouped aggregate (`pass_one.bucket_stats`, the audit before
    `parquet_pass`), not the sink's files read by pyarrow; without `lineage`, the sink is read without its
    lineage columns."""
    sink = read_sink(spark, path, "parquet", SinkColumns())
    if not lineage:
        sink = sink.drop(*LINEAGE)
    files = None if spark_pass else parquet_files(sink, "parquet", SinkColumns())
    result = audit_sink(sink, files=files)
    return {(f.kind, f.topic, f.partition): (f.count, f.offset_ranges) for f in result.findings}  # type: ignore[misc]


def _rounded(values: list[float]) -> list[float]:
    return [round(v, 2) for v in values]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, action="append", help="sink size(s) to run (default 10,000,000)")
    parser.add_argument("--layout", choices=sorted(GENERATORS), default="sorted", help="the sink's layout")
    parser.add_argument("--data", type=Path, default=Path("benchmarks/out/sinks"))
    parser.add_argument("--skip-naive", action="store_true", help="omit the naive audit (it is ~100x a scan)")
    parser.add_argument("--repeat", type=int, default=1, help="time scans and audit N times, report the fastest")
    parser.add_argument("--stages", action="store_true", help="turn the UI on and report each audit stage's metrics")
    parser.add_argument(
        "--spark-pass", action="store_true", help="also time the audit with Spark's grouped pass 1 (the baseline)"
    )
    parser.add_argument("--lean", action="store_true", help="streaming layout without its payload columns")
    parser.add_argument(
        "--damage", choices=("few", "wide"), default="few", help="a few planted duplicates, or partitions read twice"
    )
    parser.add_argument(
        "--no-lineage", action="store_true", help="audit (and scan) the sink without its lineage columns"
    )
    add_master_options(parser)
    args = parser.parse_args()
    sizes = args.rows or [10_000_000]
    if args.lean and args.layout != "streaming":
        parser.error("--lean is for the streaming layout (the sorted one has no payload columns)")
    name = f"{args.layout}{'-lean' if args.lean else ''}{'-wide' if args.damage == 'wide' else ''}"
    generate = partial(GENERATORS[args.layout], wide=args.damage == "wide")
    if args.lean:
        generate = partial(generate, payload=False)
    for rows in sizes:  # the largest sink must fit: say so before generating anything
        estimate = ROW_BYTES[name.removesuffix("-wide")] * rows * (3 if args.damage == "wide" else 2) // 2
        if not (args.data / f"{name}-{rows}" / "_SUCCESS").exists() and estimate > _free_bytes(args.data):
            parser.error(f"{args.data} has {_free_bytes(args.data) >> 30} GiB free; {rows} rows need ~{estimate >> 30}")
    layouts = {}  # generated before the sampler starts: generating is not part of what is measured
    for rows in sizes:
        layouts[rows] = generate(args.data / f"{name}-{rows}", rows)
        if args.no_lineage:
            layouts[rows] = Layout(layouts[rows].rows, unclassified(layouts[rows].expected))
    peak = PeakRss()
    peak.start()
    config = {"spark.sql.shuffle.partitions": "8", "spark.driver.memory": "4g"}
    if args.stages:
        config |= UI_CONFIG
    where = spark_master(args.master, args.cluster, args.data / "spark-cluster", args.executor_memory)
    try:
        with where as (master, master_config):
            report = _run(args, master, config | master_config, sizes, name, layouts, peak)
    finally:
        peak.done.set()
    print(json.dumps(report, indent=2))


def _free_bytes(directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    return shutil.disk_usage(directory).free


def _run(
    args: argparse.Namespace,
    master: str,
    config: dict[str, str],
    sizes: list[int],
    name: str,
    layouts: dict[int, Layout],
    peak: PeakRss,
) -> dict[str, Any]:
    """Every timed query on one Spark session, size by size."""
    spark = spark_session(master, app_name="splitaudit-bench", config=config)
    spark.sparkContext.setLogLevel("ERROR")
    stage_metrics = StageMetrics(spark) if args.stages else None
    report: dict[str, Any] = {
        "layout": args.layout,
        "damage": args.damage,
        "lineage": not args.no_lineage,
        "master": master,
        "sink": name,
        "cpus": os.cpu_count(),
        "repeat": args.repeat,
        "sizes": {},
    }
    bare_scan(spark, str(args.data / f"{name}-{sizes[0]}"))  # warm-up: no timed query pays for JIT
    audit = partial(splitaudit_audit, lineage=not args.no_lineage)
    # and one audit, which starts Spark's Python workers (and imports pyarrow in them): reported, not compared
    seconds, found = timed(partial(audit, spark, str(args.data / f"{name}-{sizes[0]}")))
    assert found == layouts[sizes[0]].expected, found
    report["cold_first_audit_s"] = round(seconds, 2)
    audit_peak = PeakRss()
    audit_peak.start()
    for rows in sizes:
        path = str(args.data / f"{name}-{rows}")
        layout = layouts[rows]
        entry: dict[str, Any] = {}
        peak.reset()
        scans, audits, string_scans, spark_passes = [], [], [], []
        audit_peaks: dict[str, int] = {}
        for _ in range(args.repeat):  # interleaved, so that a burst of load elsewhere hits all of them alike
            seconds, (count, _) = timed(partial(bare_scan, spark, path, lineage=not args.no_lineage))
            assert count == layout.rows, count
            scans.append(seconds)
            if stage_metrics is not None:
                stage_metrics.mark()
            audit_peak.reset()
            seconds, found = timed(partial(audit, spark, path))
            assert found == layout.expected, found
            audits.append(seconds)
            audit_peaks = {key: max(value, audit_peaks.get(key, 0)) for key, value in audit_peak.peaks_mib().items()}
            if stage_metrics is not None:
                entry["audit_stages"] = stage_metrics.since_mark()  # of the last run
            seconds, (count, _) = timed(partial(bare_scan_max_topic, spark, path))
            assert count == layout.rows, count
            string_scans.append(seconds)
            if args.spark_pass:
                seconds, found = timed(partial(audit, spark, path, spark_pass=True))
                assert found == layout.expected, found
                spark_passes.append(seconds)
        scan_seconds, audit_seconds = min(scans), min(audits)
        entry["bare_scan_s"] = round(scan_seconds, 2)
        entry["splitaudit_s"] = round(audit_seconds, 2)
        entry["splitaudit_over_scan"] = round(audit_seconds / scan_seconds, 2)
        entry["bare_scan_max_topic_s"] = round(min(string_scans), 2)
        entry["splitaudit_over_max_topic_scan"] = round(audit_seconds / min(string_scans), 2)
        entry["peak_rss_mib"] = peak.peaks_mib()
        entry["audit_peak_rss_mib"] = audit_peaks  # sampled while the audits ran only
        entry["runs_s"] = {"bare_scan": _rounded(scans), "splitaudit": _rounded(audits)}
        if spark_passes:
            entry["spark_pass_s"] = round(min(spark_passes), 2)
            entry["spark_pass_over_scan"] = round(min(spark_passes) / scan_seconds, 2)
            entry["runs_s"]["spark_pass"] = _rounded(spark_passes)
        report["sizes"][str(rows)] = entry
        print(json.dumps({str(rows): entry}), flush=True)
    audit_peak.done.set()
    # the naive audits last: the JVM keeps the heap they grow, which would inflate the audit's peak RSS
    for rows in sizes if not args.skip_naive else []:
        entry = report["sizes"][str(rows)]
        peak.reset()
        naive_seconds, found = timed(partial(naive, spark, str(args.data / f"{name}-{rows}")))
        assert found == layouts[rows].naive_expected, found
        entry["naive_s"] = round(naive_seconds, 2)
        entry["naive_over_scan"] = round(naive_seconds / entry["bare_scan_s"], 2)
        entry["speedup_over_naive"] = round(naive_seconds / entry["splitaudit_s"], 2)
        entry["naive_peak_rss_mib"] = peak.peaks_mib()
        print(json.dumps({str(rows): entry}), flush=True)
    spark.stop()
    return report


if __name__ == "__main__":
    main()
