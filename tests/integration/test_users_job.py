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

from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from pyspark.sql import SparkSession

from splitaudit.progress import Progress
from splitaudit.scenario.users_job import UsersJobSettings, run_users_job_scenario, users_job_jar
from splitaudit.scenario.users_job_results import OffsetRange, UsersJobReport
from splitaudit.stack.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.needs_build]

N, M, K = 200, 200, 200  # per partition: before the savepoint, while the job is down, after the restore
PARTITIONS = 4
LONG = pytest.mark.users_job

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
