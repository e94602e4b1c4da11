"""Pass 1 read by pyarrow in Spark's Python workers gives exactly Spark's own pass 1, on a real Spark session."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from splitaudit.audit.checks.findings import DOUBLE_ASSIGNMENT, DUPLICATE, INVALID, MISSING, REPLAY
from splitaudit.audit.passes import parquet_pass, pass_one
from splitaudit.audit.passes.sink import audit_sink
from splitaudit.audit.passes.sink_files import read_sink
from splitaudit.audit.request import SinkColumns

pytestmark = pytest.mark.integration


def _streaming_file(rng: np.random.Generator, parts: list[tuple[str, int, np.ndarray]], reader: str) -> pa.Table:
    """One file of a streaming job's subtask: its partitions' offsets each in order, interleaved at random."""
    order = rng.permutation(np.repeat(np.arange(len(parts)), [len(o) for _, _, o in parts]))
    offsets = np.empty(len(order), dtype=np.int64)
    for index, (_, _, own) in enumerate(parts):
        offsets[order == index] = own
    return pa.table(
        {
            "topic": pa.array([parts[i][0] for i in order]),
            "partition": pa.array(np.array([parts[i][1] for i in order], dtype=np.int32)),
            "offset": pa.array(offsets),
            "reader_id": pa.array([reader] * len(order)),
            "attempt": pa.array(np.zeros(len(order), dtype=np.int32)),
        }
    )


@pytest.fixture(scope="module")
def streaming_sink(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two readers' files over two windows: a/0 and b/5 by reader r0, a/1 by r1 from offset 2**33; r1 also
    emits a/0 offsets 40,000..40,999 (double assignment), a/1 loses offsets 2**33 + 70,000..70,049, and one
    row has a null partition."""
    rng = np.random.default_rng(21)
    directory = tmp_path_factory.mktemp("parquet_pass") / "sink"
    directory.mkdir()
    base = 2**33
    for window in range(2):
        span = np.arange(window * 50_000, (window + 1) * 50_000, dtype=np.int64)
        mine = [("a", 0, span), ("b", 5, span + 7)]
        theirs = [("a", 1, span[(span < 70_000) | (span >= 70_050)] + base)]
        if window == 0:
            theirs.append(("a", 0, np.arange(40_000, 41_000, dtype=np.int64)))
        pq.write_table(_streaming_file(rng, mine, "r0"), directory / f"r0-{window}.parquet", row_group_size=30_000)
        pq.write_table(_streaming_file(rng, theirs, "r1"), directory / f"r1-{window}.parquet")
    broken = pa.table(
        {
            "topic": ["a"],
            "partition": pa.array([None], pa.int32()),
            "offset": [3],
            "reader_id": ["r0"],
            "attempt": pa.array([0], pa.int32()),
        }
    )
    pq.write_table(broken, directory / "r0-late.parquet")
    return directory


def test_the_parquet_pass_equals_sparks_pass(spark: SparkSession, streaming_sink: Path) -> None:
    sink = read_sink(spark, str(streaming_sink), "parquet", SinkColumns())
    files = parquet_pass.parquet_files(sink, "parquet", SinkColumns())
    assert files is not None
    assert len(files.paths) == 5
    ours = parquet_pass.bucket_stats(spark, files)
    assert ours is not None
    # every bucket's sums, the invalid rows and which files hold them; Spark's pass keeps no runs
    assert replace(ours, runs=None) == pass_one.bucket_stats(sink)
    assert ours.runs is not None
    assert ours.runs.runless == frozenset()
    runs = ours.runs_of([("a", 0, 1)])[("a", 0, 1)]  # its offsets, and the second reader's, as a few runs
    ends = zip(runs["first"].to_pylist(), runs["last"].to_pylist(), strict=True)
    assert sum(last - first + 1 for first, last in ends) == 33_768
    assert set(runs["reader_id"].to_pylist()) == {"r0", "r1"}
    assert ours.invalid == 1
    assert ours.stats[("a", 0, 1)].rows == 32_768 + 1_000  # offsets 32,768..65,535 and the second reader's 1,000
    assert ours.files is not None
    assert len(ours.files[("a", 0, 1)]) == 3


def test_the_audit_finds_the_same_through_either_pass(spark: SparkSession, streaming_sink: Path) -> None:
    sink = read_sink(spark, str(streaming_sink), "parquet", SinkColumns())
    files = parquet_pass.parquet_files(sink, "parquet", SinkColumns())
    found = audit_sink(sink, files=files)
    assert found == audit_sink(sink)
    summary = {(f.kind, f.topic, f.partition): (f.count, f.offset_ranges) for f in found.findings}
    assert summary == {
        (DOUBLE_ASSIGNMENT, "a", 0): (1_000, ((40_000, 40_999),)),
        (MISSING, "a", 1): (50, ((2**33 + 70_000, 2**33 + 70_049),)),
        (INVALID, None, None): (1, ()),
    }
    assert REPLAY not in {f.kind for f in found.findings}


def test_other_sinks_keep_sparks_pass(spark: SparkSession, streaming_sink: Path, tmp_path: Path) -> None:
    json_sink = tmp_path / "json"
    spark.read.parquet(str(streaming_sink)).write.json(str(json_sink))
    assert (
        parquet_pass.parquet_files(read_sink(spark, str(json_sink), "json", SinkColumns()), "json", SinkColumns())
        is None
    )
    # a file whose offsets are text: Spark casts them, so the whole pass is Spark's
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    pq.write_table(pa.table({"topic": ["a"], "partition": [0], "offset": ["7"]}), mixed / "x.parquet")
    sink = read_sink(spark, str(mixed), "parquet", SinkColumns())
    files = parquet_pass.parquet_files(sink, "parquet", SinkColumns())
    assert files is not None
    assert parquet_pass.bucket_stats(spark, files) is None
    assert [c.to_json() for c in audit_sink(sink, files=files).coverage] == [
        c.to_json() for c in audit_sink(sink).coverage
    ]


def test_suspects_from_kept_runs_and_from_a_second_read_together(spark: SparkSession, tmp_path: Path) -> None:
    # partition 0: two readers' files in offset order (runs kept); partition 1: one file of shuffled offsets,
    # too scattered for its runs to be kept (runless), its suspects read again
    rng = np.random.default_rng(3)
    directory = tmp_path / "mixed"
    directory.mkdir()

    def write(name: str, partition: int, offsets: np.ndarray, reader: str) -> None:
        table = {
            "topic": ["t"] * len(offsets),
            "partition": pa.array([partition] * len(offsets), pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "reader_id": [reader] * len(offsets),
            "attempt": pa.array([0] * len(offsets), pa.int32()),
        }
        pq.write_table(pa.table(table), directory / name)

    write("a.parquet", 0, np.arange(0, 20_000), "r0")
    write("b.parquet", 0, np.arange(12_000, 20_000), "r1")  # a twin from 12,000 on: double assignment
    scattered = np.concatenate((np.arange(0, 20_000), np.arange(5_000, 5_010)))  # 5,000..5,009 twice by r2
    write("c.parquet", 1, rng.permutation(scattered), "r2")
    sink = read_sink(spark, str(directory), "parquet", SinkColumns())
    files = parquet_pass.parquet_files(sink, "parquet", SinkColumns())
    assert files is not None
    first = parquet_pass.bucket_stats(spark, files)
    assert first is not None
    assert first.runs is not None
    assert len(first.runs.runless) == 1
    assert set(first.runs_of([("t", 0, 0), ("t", 1, 0)])) == {("t", 0, 0)}
    found = audit_sink(sink, files=files)
    assert found == audit_sink(sink)  # Spark's pass 1: every suspect read again
    summary = {(f.kind, f.partition): (f.count, f.offset_ranges, len(f.sample)) for f in found.findings}
    assert summary == {
        (DOUBLE_ASSIGNMENT, 0): (8_000, ((12_000, 19_999),), 2),
        (DUPLICATE, 1): (10, ((5_000, 5_009),), 2),
    }
