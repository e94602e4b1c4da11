"""The sink audit on a real Spark session, on sinks with anomalies planted at known offsets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession

from splitaudit.audit.checks.findings import (
    DOUBLE_ASSIGNMENT,
    DUPLICATE,
    ERROR,
    INVALID,
    MISSING,
    NOT_IN_SOURCE,
    REPLAY,
    WARNING,
)
from splitaudit.audit.passes import filters, pass_one, suspects
from splitaudit.audit.passes.sink import audit_sink
from splitaudit.audit.passes.sink_files import read_sink
from splitaudit.audit.request import SinkColumns

pytestmark = pytest.mark.integration


def _rows(topic: str, partition: int, offsets: range | list[int], reader: str, attempt: int) -> dict[str, list[object]]:
    n = len(offsets)
    return {
        "topic": [topic] * n,
        "partition": [partition] * n,
        "offset": list(offsets),
        "reader_id": [reader] * n,
        "attempt": [attempt] * n,
    }


def _planted() -> pa.Table:
    """Topic t: 4 partitions of offsets 0..9999, with anomalies; topic u: one partition across 4 buckets."""
    parts = [
        _rows("t", 0, range(10_000), "r0", 0),
        _rows("t", 1, range(10_000), "r1a", 0),
        _rows("t", 1, range(100, 200), "r1b", 0),  # a second reader of attempt 0: double assignment
        _rows("t", 2, [o for o in range(10_000) if not 5_000 <= o < 5_050], "r2", 0),  # 50 lost
        _rows("t", 3, range(10_000), "r3a", 0),
        _rows("t", 3, range(9_000, 9_100), "r3c", 1),  # attempt 1 re-reads 100: replay
        # u/0: 0..131071 minus 32760..32780 (crosses a bucket edge) and all of bucket 2 (65536..98303)
        _rows("u", 0, [o for o in range(131_072) if not (32_760 <= o <= 32_780 or 65_536 <= o <= 98_303)], "u0", 0),
    ]
    columns = {name: [value for p in parts for value in p[name]] for name in parts[0]}
    return pa.table(columns)


@pytest.fixture(scope="module")
def planted_parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("sink") / "parquet"
    directory.mkdir()
    table = _planted()
    # several files, as a parallel sink writes them
    for i, start in enumerate(range(0, table.num_rows, 40_000)):
        pq.write_table(table.slice(start, 40_000), directory / f"part-{i:04d}.parquet")
    return directory


def _by_kind(findings: tuple[object, ...]) -> dict[tuple[str, str | None, int | None], object]:
    return {(f.kind, f.topic, f.partition): f for f in findings}  # type: ignore[attr-defined]


def test_planted_anomalies_are_found_with_exact_counts_and_ranges(spark: SparkSession, planted_parquet: Path) -> None:
    result = audit_sink(read_sink(spark, str(planted_parquet), "parquet", SinkColumns()))
    found = _by_kind(result.findings)

    assert set(found) == {
        (DOUBLE_ASSIGNMENT, "t", 1),
        (MISSING, "t", 2),
        (REPLAY, "t", 3),
        (MISSING, "u", 0),
    }
    double = found[(DOUBLE_ASSIGNMENT, "t", 1)]
    assert (double.severity, double.count, double.offset_ranges) == (ERROR, 100, ((100, 199),))  # type: ignore[attr-defined]
    assert {row["reader_id"] for row in double.sample} == {"r1a", "r1b"}  # type: ignore[attr-defined]
    replay = found[(REPLAY, "t", 3)]
    assert (replay.severity, replay.count, replay.offset_ranges) == (WARNING, 100, ((9_000, 9_099),))  # type: ignore[attr-defined]
    lost = found[(MISSING, "t", 2)]
    assert (lost.severity, lost.count, lost.offset_ranges) == (ERROR, 50, ((5_000, 5_049),))  # type: ignore[attr-defined]
    lost_u = found[(MISSING, "u", 0)]
    assert lost_u.count == 21 + 32_768  # type: ignore[attr-defined]
    assert lost_u.offset_ranges == ((32_760, 32_780), (65_536, 98_303))  # type: ignore[attr-defined]

    coverage = {(c.topic, c.partition): (c.rows, c.distinct, c.first_offset, c.last_offset) for c in result.coverage}
    assert coverage == {
        ("t", 0): (10_000, 10_000, 0, 9_999),
        ("t", 1): (10_100, 10_000, 0, 9_999),
        ("t", 2): (9_950, 9_950, 0, 9_999),
        ("t", 3): (10_100, 10_000, 0, 9_999),
        ("u", 0): (131_072 - 32_789, 131_072 - 32_789, 0, 131_071),
    }


def _reads_kept_rows(frame: DataFrame) -> bool:
    """True when the frame's physical plan reads rows kept by persist() (the coalesced frame has no storage
    level of its own to ask)."""
    return "InMemoryTableScan" in frame._jdf.queryExecution().executedPlan().toString()


def test_suspect_rows_hold_exactly_the_suspect_buckets_while_kept(spark: SparkSession, planted_parquet: Path) -> None:
    sink = read_sink(spark, str(planted_parquet), "parquet", SinkColumns())
    # t/1 bucket 0: 10,000 offsets and 100 again; u/0 bucket 1 (32,768..65,535): all but 32,768..32,780
    with suspects.suspect_rows(sink, {("t", 1, 0), ("u", 0, 1)}) as rows:
        assert _reads_kept_rows(rows)
        assert rows.rdd.getNumPartitions() == spark.sparkContext.defaultParallelism
        counts = {
            (r["topic"], r["partition"]): r["count"] for r in rows.groupBy("topic", "partition").count().collect()
        }
        assert counts == {("t", 1): 10_100, ("u", 0): 32_768 - 13}
        assert rows.columns == sink.columns  # the lineage columns too: classification and samples read them
    assert not _reads_kept_rows(rows.select("*"))  # released after the block: planned anew, it reads the sink
    with suspects.suspect_rows(sink, set()) as rows:
        assert rows is sink


def _file_key(path: Path) -> tuple[int, int]:
    """A file's (size, modified microseconds), as Spark's file metadata gives them (Hadoop's time is in whole
    milliseconds)."""
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns // 1_000_000 * 1_000


def test_suspects_are_read_from_the_files_that_hold_them_only(
    spark: SparkSession, planted_parquet: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "sink"
    shutil.copytree(planted_parquet, copy)
    sink = read_sink(spark, str(copy), "parquet", SinkColumns())
    first = pass_one.bucket_stats(sink)
    assert first.stats[("t", 1, 0)].rows == 10_100
    keys = {("t", 1, 0), ("u", 0, 1)}
    # the oracle, by pyarrow: the files holding rows of t/1 offsets 0..32767 or u/0 offsets 32768..65535
    holding, others = set(), []
    for path in sorted(copy.glob("*.parquet")):
        rows = pq.read_table(path).to_pylist()
        if any((r["topic"], r["partition"], r["offset"] >> 15) in keys for r in rows):
            holding.add(_file_key(path))
        else:
            others.append(path)
    # part-0000 (t/1), part-0001 and part-0002 (u/0 bucket 1); part-0003 holds u/0 from offset 98,304 only
    assert [p.name for p in others] == ["part-0003.parquet"]
    assert len(holding) == 3
    files = first.files_holding(keys)
    assert files == holding
    assert pass_one.bucket_stats(sink.drop(filters.FILE_COLUMN)).files is None  # not read from files
    for path in others:  # garbage of the same size and time: reading it would fail
        stat = path.stat()
        path.write_bytes(b"\0" * stat.st_size)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with suspects.suspect_rows(sink, keys, files) as rows:
        counts = {
            (r["topic"], r["partition"]): r["count"] for r in rows.groupBy("topic", "partition").count().collect()
        }
    assert counts == {("t", 1): 10_100, ("u", 0): 32_768 - 13}
    assert first.files_holding(set()) == set()


def test_without_lineage_duplicates_are_unclassified_errors(spark: SparkSession, planted_parquet: Path) -> None:
    sink = read_sink(spark, str(planted_parquet), "parquet", SinkColumns()).drop("reader_id", "attempt")
    result = audit_sink(sink)
    duplicates = {(f.topic, f.partition): (f.severity, f.count) for f in result.findings if f.kind == DUPLICATE}
    assert duplicates == {("t", 1): (ERROR, 100), ("t", 3): (ERROR, 100)}
    assert not result.classified


def test_exactly_once_makes_replays_errors(spark: SparkSession, planted_parquet: Path) -> None:
    result = audit_sink(read_sink(spark, str(planted_parquet), "parquet", SinkColumns()), exactly_once=True)
    assert [f.severity for f in result.findings if f.kind == REPLAY] == [ERROR]


def test_mapped_columns_json_lines_and_invalid_rows(spark: SparkSession, tmp_path: Path) -> None:
    rows = [{"t": "x", "p": 0, "o": o} for o in (0, 1, 2, 2, 4)] + [
        {"t": "x", "p": 0, "o": -1},
        {"t": None, "p": 0, "o": 7},
    ]
    path = tmp_path / "sink.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = audit_sink(read_sink(spark, str(path), "json", SinkColumns("t", "p", "o")))
    found = {(f.kind, f.partition): (f.count, f.offset_ranges) for f in result.findings}
    assert found == {(MISSING, 0): (1, ((3, 3),)), (DUPLICATE, 0): (1, ((2, 2),)), (INVALID, None): (2, ())}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "splitaudit", *args], capture_output=True, text=True, timeout=600, check=False
    )


def test_cli_json_and_exit_codes(planted_parquet: Path, tmp_path: Path) -> None:
    audit = _cli("--json", "audit", "--sink", str(planted_parquet), "--master", "local[2]")
    assert audit.returncode == 1, audit.stderr
    document = json.loads(audit.stdout)
    assert document["summary"] == {
        "duplicate_records": 200,
        "missing_records": 50 + 32_789,
        "double_assigned_partitions": 1,
        "missing_partitions": 0,
        "rewound_partitions": 0,
    }
    assert {(f["kind"], f["topic"], f["partition"], f["count"]) for f in document["findings"]} == {
        (DOUBLE_ASSIGNMENT, "t", 1, 100),
        (MISSING, "t", 2, 50),
        (REPLAY, "t", 3, 100),
        (MISSING, "u", 0, 32_789),
    }

    clean = tmp_path / "clean.csv"
    pacsv.write_csv(pa.table({"topic": ["a"] * 3, "partition": [0] * 3, "offset": [5, 6, 7]}), clean)
    log = tmp_path / "logs" / "spark.log"
    ok = _cli(
        "--json", "audit", "--sink", str(clean), "--sink-format", "csv", "--master", "local[1]", "--log", str(log)
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["findings"] == []
    # Quiet: the console has splitaudit's progress only; Spark's JVM wrote its start-up lines to the log file.
    assert ok.stderr.startswith("✓ start Spark (local[1])")
    for chatter in ("log4j", "WARN", "NativeCodeLoader", "Setting default log level"):
        assert chatter not in ok.stderr
    assert "Using Spark's default log4j profile" in log.read_text()

    wrong_column = _cli("audit", "--sink", str(clean), "--sink-format", "csv", "--offset-col", "pos")
    assert wrong_column.returncode == 2
    assert "no column pos (--offset-col)" in wrong_column.stderr
    assert "Traceback" not in wrong_column.stderr

    absent = _cli("audit", "--sink", str(tmp_path / "nothing-here"))
    assert absent.returncode == 2
    assert "nothing-here" in absent.stderr


@pytest.mark.parametrize("case", ["restore_stock_small", "restore_patched_small"])
def test_real_beam_sinks_agree_with_an_independent_count(spark: SparkSession, case: str) -> None:
    # fixtures/beam_sink/*/expected.json were counted with json + Counter when the runs were made.
    fixture = Path(__file__).parents[2] / "fixtures" / "beam_sink" / case
    expected = json.loads((fixture / "expected.json").read_text())
    result = audit_sink(read_sink(spark, str(fixture / "sink"), "json", SinkColumns()))
    assert result.classified
    coverage = {str(c.partition): c for c in result.coverage if c.topic == expected["topic"]}
    assert {p: (c.rows, c.duplicates, c.missing, c.distinct) for p, c in coverage.items()} == {
        p: (e["sink_rows"], e["duplicate_rows"], e["missing_offsets"], e["expected_records"])
        for p, e in expected["partitions"].items()
    }
    double = {str(f.partition): f.count for f in result.findings if f.kind == DOUBLE_ASSIGNMENT}
    assert double == {
        p: e["double_read_offsets"] for p, e in expected["partitions"].items() if e["double_read_offsets"]
    }
    assert {f.kind for f in result.findings} <= {DOUBLE_ASSIGNMENT}


def _holes(first: int, last: int) -> list[int]:
    """Offsets first..last of a transactional topic: every 1000th offset (o % 1000 == 999) is a commit marker."""
    return [o for o in range(first, last + 1) if o % 1000 != 999]


@pytest.fixture(scope="module")
def source_and_sink(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Topic s with marker holes. Source: p0 0..99,999, p1 0..49,999, p2 0..2,999. Sink: p0 from 10 to 99,499
    without 40,950..41,049 (loss across a marker); p1 all of it, 100..149 twice, plus the marker offset 5,999 and
    60,000..60,009 that the source lacks; no p2; p3 0..99, a partition the source does not have."""
    root = tmp_path_factory.mktemp("source")
    source = {
        "topic": ["s"] * (99_900 + 49_950 + 2_997),
        "partition": [0] * 99_900 + [1] * 49_950 + [2] * 2_997,
        "offset": _holes(0, 99_999) + _holes(0, 49_999) + _holes(0, 2_999),
    }
    pq.write_table(pa.table(source), root / "source.parquet")
    p0 = [o for o in _holes(10, 99_499) if not 40_950 <= o <= 41_049]
    p1 = [*_holes(0, 49_999), *range(100, 150), 5_999, *range(60_000, 60_010)]
    p3 = list(range(100))
    sink = {
        "topic": ["s"] * (len(p0) + len(p1) + len(p3)),
        "partition": [0] * len(p0) + [1] * len(p1) + [3] * len(p3),
        "offset": p0 + p1 + p3,
    }
    (root / "sink").mkdir()
    table = pa.table(sink)
    for i, start in enumerate(range(0, table.num_rows, 30_000)):
        pq.write_table(table.slice(start, 30_000), root / "sink" / f"part-{i:04d}.parquet")
    return root / "sink", root / "source.parquet"


def test_gaps_are_judged_against_the_sources_offsets(spark: SparkSession, source_and_sink: tuple[Path, Path]) -> None:
    sink_path, source_path = source_and_sink
    sink = read_sink(spark, str(sink_path), "parquet", SinkColumns())
    result = audit_sink(sink, source=spark.read.parquet(str(source_path)))
    found = {(f.kind, f.partition): (f.severity, f.count, f.offset_ranges, f.ranges_truncated) for f in result.findings}
    assert found == {
        # below the sink's first offset, the loss (the marker 40,999 in it is not missing), above its last
        (MISSING, 0): (ERROR, 10 + 99 + 499, ((0, 9), (40_950, 40_998), (41_000, 41_049), (99_500, 99_998)), False),
        (MISSING, 2): (ERROR, 2_997, ((0, 998), (1_000, 1_998), (2_000, 2_998)), False),
        (NOT_IN_SOURCE, 1): (WARNING, 11, ((5_999, 5_999), (60_000, 60_009)), False),
        (NOT_IN_SOURCE, 3): (WARNING, 100, ((0, 99),), False),
        (DUPLICATE, 1): (ERROR, 50, ((100, 149),), False),
    }
    coverage = {c.partition: (c.rows, c.distinct, c.first_offset, c.last_offset, c.missing) for c in result.coverage}
    p0 = 99_490 - 99 - 99  # 10..99,499, less its 99 markers, less the 99 lost
    assert coverage == {
        0: (p0, p0, 10, 99_499, 608),
        1: (49_950 + 50 + 11, 49_950 + 11, 0, 60_009, 0),
        2: (0, 0, 0, 2_998, 2_997),  # no sink row: the source's first and last offset
        3: (100, 100, 0, 99, 0),
    }


def test_without_the_source_markers_count_as_missing(spark: SparkSession, source_and_sink: tuple[Path, Path]) -> None:
    sink = read_sink(spark, str(source_and_sink[0]), "parquet", SinkColumns())
    missing = {f.partition: f.count for f in audit_sink(sink).findings if f.kind == MISSING}
    # dense between first and last: p0's 98 markers in 10..99,499 outside the loss run, and the 100 lost
    # (40,999 among them); p1's 50 markers 999..49,999 but for 5,999, and 50,000..59,999
    assert missing == {0: 98 + 100, 1: 49 + 10_000}


def test_bounded_filters_keep_counts_and_runs_exact(
    spark: SparkSession, source_and_sink: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # p0's suspect buckets 0, 1 and 3 become one filtered run 0..3, whose bucket 2 (clean) the workers drop:
    # the counts and the runs stay exact
    monkeypatch.setattr(filters, "MAX_FILTER_RANGES", 1)
    sink_path, source_path = source_and_sink
    sink = read_sink(spark, str(sink_path), "parquet", SinkColumns())
    result = audit_sink(sink, source=spark.read.parquet(str(source_path)))
    found = {(f.kind, f.partition): (f.count, f.offset_ranges, f.ranges_truncated) for f in result.findings}
    assert found == {
        (MISSING, 0): (608, ((0, 9), (40_950, 40_998), (41_000, 41_049), (99_500, 99_998)), False),
        (MISSING, 2): (2_997, ((0, 998), (1_000, 1_998), (2_000, 2_998)), False),
        (NOT_IN_SOURCE, 1): (11, ((5_999, 5_999), (60_000, 60_009)), False),
        (NOT_IN_SOURCE, 3): (100, ((0, 99),), False),
        (DUPLICATE, 1): (50, ((100, 149),), False),
    }
    assert sum(c.missing for c in result.coverage) == 608 + 2_997


def _emitted(
    partition: int, offsets: range | list[int], reader: str, job: str, attempt: int
) -> list[dict[str, object]]:
    return [
        {"topic": "g", "partition": partition, "offset": o, "reader_id": reader, "job_id": job, "attempt": attempt}
        for o in offsets
    ]


@pytest.fixture(scope="module")
def generations() -> list[dict[str, object]]:
    """Sink rows of a job `a`, and of `b` restored from `a`'s savepoint (a new job: its attempts restart at 0).

    p0: a read 0..149 and was cancelled after its savepoint at 100; b reads 100..299 (cross-job replay only).
    p1: b's twin readers both read 100..199 (double assignment within one job) after a read 0..99.
    p2, a mix: a read 0..199; b's reader b1 150..399, its twin b2 180..189 (read by a too) and 300..349; after a
    failover of b (attempt 1) b3 reads 390..409.
    """
    return [
        *_emitted(0, range(0, 150), "a0", "a", 0),
        *_emitted(0, range(100, 300), "b0", "b", 0),
        *_emitted(1, range(0, 100), "a1", "a", 0),
        *_emitted(1, range(100, 200), "b1", "b", 0),
        *_emitted(1, range(100, 200), "b1-twin", "b", 0),
        *_emitted(2, range(0, 200), "a2", "a", 0),
        *_emitted(2, range(150, 400), "b2", "b", 0),
        *_emitted(2, [*range(180, 190), *range(300, 350)], "b2-twin", "b", 0),
        *_emitted(2, range(390, 410), "b2-after-failover", "b", 1),
    ]


def _classes(result: object) -> dict[tuple[str, int | None], tuple[str, int, tuple[tuple[int, int], ...]]]:
    return {(f.kind, f.partition): (f.severity, f.count, f.offset_ranges) for f in result.findings}  # type: ignore[attr-defined]


def test_duplicates_are_classified_by_job_and_attempt(
    spark: SparkSession, tmp_path: Path, generations: list[dict[str, object]]
) -> None:
    sink = tmp_path / "sink"
    sink.mkdir()
    for name, job in (("job-a.jsonl", "a"), ("job-b.jsonl", "b")):  # one file per job, as each job writes its own
        (sink / name).write_text("".join(json.dumps(r) + "\n" for r in generations if r["job_id"] == job))
    result = audit_sink(read_sink(spark, str(sink), "json", SinkColumns()))

    assert result.lineage.generation == ("job_id", "attempt")
    assert _classes(result) == {
        (REPLAY, 0): (WARNING, 50, ((100, 149),)),  # both jobs at attempt 0: replay all the same
        (DOUBLE_ASSIGNMENT, 1): (ERROR, 100, ((100, 199),)),
        # 180..189: read by a, and twice by b (b2 and its twin): double assignment, 2 extra rows each
        (DOUBLE_ASSIGNMENT, 2): (ERROR, 20 + 50, ((180, 189), (300, 349))),
        # 150..199 but 180..189 (a, then b), and 390..399 (b's attempts 0 and 1)
        (REPLAY, 2): (WARNING, 30 + 10 + 10, ((150, 179), (190, 199), (390, 399))),
    }
    double = {f.partition: f for f in result.findings if f.kind == DOUBLE_ASSIGNMENT}
    assert {(row["job_id"], row["reader_id"]) for row in double[1].sample} == {("b", "b1"), ("b", "b1-twin")}
    assert "(job_id, attempt)" in double[1].detail
    coverage = {c.partition: (c.rows, c.distinct, c.first_offset, c.last_offset, c.missing) for c in result.coverage}
    assert coverage == {0: (350, 300, 0, 299, 0), 1: (300, 200, 0, 199, 0), 2: (530, 410, 0, 409, 0)}


def test_without_job_id_generations_are_attempts(
    spark: SparkSession, tmp_path: Path, generations: list[dict[str, object]]
) -> None:
    rows = [{k: v for k, v in r.items() if k != "job_id"} for r in generations]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "sink.parquet")
    result = audit_sink(read_sink(spark, str(tmp_path / "sink.parquet"), "parquet", SinkColumns()))

    assert result.lineage.generation == ("attempt",)
    assert _classes(result) == {
        # a and b share attempt 0: the cross-job replay reads as two readers of one attempt
        (DOUBLE_ASSIGNMENT, 0): (ERROR, 50, ((100, 149),)),
        (DOUBLE_ASSIGNMENT, 1): (ERROR, 100, ((100, 199),)),
        (DOUBLE_ASSIGNMENT, 2): (ERROR, 40 + 20 + 50, ((150, 199), (300, 349))),
        (REPLAY, 2): (WARNING, 10, ((390, 399),)),
    }
    assert all("no job_id column" in f.detail for f in result.findings if f.kind == DOUBLE_ASSIGNMENT)


def test_avro_sink_with_beam_window_names(tmp_path: Path) -> None:
    """An Avro sink named as AvroIO's windowed writes name it (':' in the window), read through the Avro data source
    `splitaudit setup` installs: offset 7 of partition 0 twice, offsets 3..4 of partition 1 absent."""
    import fastavro

    schema = {
        "type": "record",
        "name": "Reading",
        "fields": [
            {"name": "topic", "type": "string"},
            {"name": "partition", "type": "int"},
            {"name": "offset", "type": "long"},
        ],
    }
    sink = tmp_path / "avro"
    sink.mkdir()
    windows = {
        "2026-11-25T11:50:20.000Z-2026-11-25T11:50:30.000Z": [(0, o) for o in range(0, 8)] + [(1, 0), (1, 1), (1, 2)],
        "2026-11-25T11:50:30.000Z-2026-11-25T11:50:40.000Z": [(0, 7), (0, 8), (0, 9), (1, 5), (1, 6)],
    }
    for window, records in windows.items():
        with (sink / f"readings{window}-pane-0-last-00000-of-00001.avro").open("wb") as out:
            rows = [{"topic": "t", "partition": p, "offset": o} for p, o in records]
            fastavro.writer(out, schema, rows, codec="deflate")
    audit = _cli("--json", "audit", "--sink", str(sink), "--sink-format", "avro", "--master", "local[1]")
    assert audit.returncode == 1, audit.stderr
    document = json.loads(audit.stdout)
    found = [(f["kind"], f["partition"], f["count"], f["offset_ranges"]) for f in document["findings"]]
    assert found == [(MISSING, 1, 2, [[3, 4]]), (DUPLICATE, 0, 1, [[7, 7]])]
    ledger = [(f["window_start"], f["rows"]) for f in document["ledger"]]
    assert ledger == [(1795607420000, 11), (1795607430000, 5)]
