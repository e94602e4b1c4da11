"""The users' job (beam_pipelines/java/users-job) through a savepoint restore, stock and patched, for each consumer
configuration: what it really reads twice, found by matching both outputs (the output topic and the Parquet
files, neither with Kafka coordinates) back to the input by each record's unique `timestamp`.

Per partition: N records before the savepoint (offsets 0..N-1), M while the job is down (N..N+M-1), K once the
restored job runs (N+M..N+M+K-1); parallelism 2. Where the stock build's twin reader (beam#31313: a fresh split
of every partition beside the restored one) starts decides what is read twice:

- `none` (no group.id, so Kafka's auto.offset.reset=latest): at the log end at the restore, so the backlog is
  read once (by the restored reader) and every record produced after the restore twice: N+M..N+M+K-1.
- `group` (a group, commitOffsetsInFinalize, earliest): at the group's committed offset, N (the first job
  committed what its checkpoints covered): the backlog and everything after, N..N+M+K-1.
- `earliest` (no group, earliest): at 0, every offset: 0..N+M+K-1.

Patched: every offset exactly once, in both outputs. `make test` runs stock and patched with `none`; `make
users-job` (marker `users_job`) the other configurations and the run with the lineage kit's columns.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from pyspark.sql import SparkSession

from splitaudit.audit.findings import BY_LINEAGE, DOUBLE_ASSIGNMENT, INFERRED
from splitaudit.guard.twin import COMMITTED, LOG_END_AT_RESTORE, LOG_START
from splitaudit.progress import Progress
from splitaudit.scenario.users_job import UsersJobSettings, run_users_job_scenario, users_job_jar
from splitaudit.scenario.users_job_results import OffsetRange, UsersJobReport
from splitaudit.stack.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.needs_build]

N, M, K = 200, 200, 200  # per partition: before the savepoint, while the job is down, after the restore
PARTITIONS = 4
LONG = pytest.mark.users_job

SOURCE_KEY = "get_json_object(CAST(value AS STRING), '$.timestamp')"  # the input record's identity

# Where the guard, asked before the restore, says each stock twin starts: (start_is, twin_start, the offsets
# already in the topic that it reads twice).
STOCK_TWIN: dict[str, tuple[str, int | None, tuple[OffsetRange, ...]]] = {
    "none": (LOG_END_AT_RESTORE, None, ()),
    "group": (COMMITTED, N, ((N, N + M - 1),)),
    "earliest": (LOG_START, 0, ((0, N + M - 1),)),
}

# Why the audit says the duplicates are a second reader's, not a replay: where their run starts against the
# savepoint's next offset N (at N itself only the jar tells a twin from a replay).
STOCK_EVIDENCE = {
    "none": "above it",
    "group": "there too, and Beam 2.62.0 with beam-runners-flink-1.19, unpatched re-initialises restored splits",
    "earliest": "below it",
}

# The offsets of every partition that the stock build's restored job reads twice, per consumer configuration.
STOCK_READ_TWICE: dict[str, OffsetRange] = {
    "none": (N + M, N + M + K - 1),
    "group": (N, N + M + K - 1),
    "earliest": (0, N + M + K - 1),
}


def _run(stack: Stack, tmp_path: Path, variant: str, consumer: str, lineage: bool = False) -> UsersJobReport:
    settings = UsersJobSettings(
        consumer=consumer, partitions=PARTITIONS, before=N, down=M, after=K, parallelism=2, lineage=lineage
    )
    jar = users_job_jar(variant)
    return run_users_job_scenario(stack, tmp_path / f"{variant}-{consumer}", jar, variant, Progress(), settings)


def _truth(report: UsersJobReport) -> list[tuple[object, ...]]:
    """Per partition and output: phases, rows, offsets read twice, read more often, missing."""
    return [
        (p.partition, p.before, p.down, p.after, name, out.rows, out.read_twice, out.read_more, out.missing)
        for p in report.partitions
        for name, out in (("topic", p.topic), ("parquet", p.parquet))
    ]


def _expected(read_twice: OffsetRange | None) -> list[tuple[object, ...]]:
    twice = () if read_twice is None else (read_twice,)
    extra = 0 if read_twice is None else read_twice[1] - read_twice[0] + 1
    return [
        (p, (0, N - 1), (N, N + M - 1), (N + M, N + M + K - 1), name, N + M + K + extra, twice, (), ())
        for p in range(PARTITIONS)
        for name in ("topic", "parquet")
    ]


@pytest.mark.parametrize(
    ("variant", "consumer"),
    [
        ("stock", "none"),
        ("patched", "none"),
        pytest.param("stock", "group", marks=LONG),
        pytest.param("patched", "group", marks=LONG),
        pytest.param("stock", "earliest", marks=LONG),
        pytest.param("patched", "earliest", marks=LONG),
    ],
)
def test_restore_reads_twice_where_the_twin_starts(stack: Stack, tmp_path: Path, variant: str, consumer: str) -> None:
    report = _run(stack, tmp_path, variant, consumer)
    expected = _expected(STOCK_READ_TWICE[consumer] if variant == "stock" else None)
    assert _truth(report) == expected, _truth(report)
    assert report.unmatched_rows == (0, 0)
    assert report.clean == (variant == "patched")

    # The guard, asked just before the restore (the topic then ended at N + M), predicted exactly that: the
    # twin's start, the part already in the topic read twice, and every record produced after the restore.
    assert report.guard.safe == (variant == "patched")
    predicted = [(t.partition, t.restored_from, t.start_is, t.twin_start, t.read_twice) for t in report.guard.twins]
    assert predicted == ([] if variant == "patched" else [(p, N, *STOCK_TWIN[consumer]) for p in range(PARTITIONS)])
    if variant == "stock":
        first, last = STOCK_READ_TWICE[consumer]
        assert first == (N + M if consumer == "none" else STOCK_TWIN[consumer][1])  # the log end at the restore
        assert last == N + M + K - 1  # and on to the last record produced after the restore

    # The audit of the Parquet output, which has no coordinates: mapped to the input by the record's timestamp,
    # every offset read twice found, as double assignment inferred from where the run starts and ends.
    code, audit = _audit_identity(stack, report)
    if variant == "patched":
        assert (code, audit["findings"], audit["summary"]["duplicate_records"]) == (0, [], 0)
        return
    first, last = STOCK_READ_TWICE[consumer]
    found = [(f["kind"], f["partition"], f["count"], f["offset_ranges"], f["classified_by"]) for f in audit["findings"]]
    assert code == 1
    assert found == [(DOUBLE_ASSIGNMENT, p, last - first + 1, [[first, last]], INFERRED) for p in range(PARTITIONS)]
    assert audit["summary"]["missing_records"] == 0
    assert audit["summary"]["duplicate_records"] == PARTITIONS * (last - first + 1)
    evidence = audit["findings"][0]["evidence"]
    assert f"every offset {first}..{last} is in the sink at least twice" in evidence
    assert "the next offset of the savepoint the job was restored from" in evidence
    assert f" is {N}, the run starts {STOCK_EVIDENCE[consumer]}" in evidence


def _audit_identity(stack: Stack, report: UsersJobReport, *, by_identity: bool = True) -> tuple[int, dict[str, Any]]:
    """`splitaudit audit` of the run's Parquet output against its input topic, restored from the first savepoint
    with the run's jar: by the records' timestamp, or by the lineage kit's coordinates."""
    identity = ["--sink-key", "timestamp", "--source-key", SOURCE_KEY] if by_identity else []
    command = [
        sys.executable, "-m", "splitaudit", "--json", "audit", "--master", "local[1]",
        "--sink", report.parquet_dir, "--bootstrap", stack.kafka.bootstrap, "--topic", report.input_topic,
        "--before", report.savepoint_before, "--savepoint", report.savepoint_after, "--jar", report.jar, *identity,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, document


@LONG
def test_lineage_columns_name_the_two_readers(stack: Stack, spark: SparkSession, tmp_path: Path) -> None:
    """The same job with the lineage kit's columns in its Parquet rows: the same offsets read twice, and each of
    them by two readers of the restored job, one each; everything else by one reader. Spark reads the files (no
    ':' in their names)."""
    report = _run(stack, tmp_path, "stock", "none", lineage=True)
    assert _truth(report) == _expected(STOCK_READ_TWICE["none"]), _truth(report)
    assert spark.read.parquet(report.parquet_dir).count() == PARTITIONS * (N + M + 2 * K)
    rows = ds.dataset(report.parquet_dir, format="parquet").to_table()
    assert rows.column_names[-7:] == ["topic", "partition", "offset", "subtask", "reader_id", "attempt", "job_id"]
    assert set(rows["topic"].to_pylist()) == {report.input_topic}
    assert set(rows["job_id"].to_pylist()) == {report.job_id_before, report.job_id_after}
    assert set(rows["attempt"].to_pylist()) == {0}
    per_offset = rows.group_by(["partition", "offset"]).aggregate(
        [("reader_id", "count_distinct"), ("job_id", "count_distinct"), ("offset", "count")]
    )
    twice = per_offset.filter(pc.equal(per_offset["offset_count"], 2))
    assert twice.num_rows == PARTITIONS * K
    assert set(twice["reader_id_count_distinct"].to_pylist()) == {2}  # two readers ...
    assert set(twice["job_id_count_distinct"].to_pylist()) == {1}  # ... of one job: double assignment
    assert sorted(twice["offset"].to_pylist()) == sorted(list(range(N + M, N + M + K)) * PARTITIONS)

    # The audit by the kit's coordinates classifies the same offsets from lineage: two readers of one job.
    code, audit = _audit_identity(stack, report, by_identity=False)
    found = [(f["kind"], f["partition"], f["count"], f["offset_ranges"], f["classified_by"]) for f in audit["findings"]]
    assert code == 1
    assert found == [(DOUBLE_ASSIGNMENT, p, K, [[N + M, N + M + K - 1]], BY_LINEAGE) for p in range(PARTITIONS)]
    assert audit["summary"]["missing_records"] == 0
