"""The audit on a real Spark standalone cluster (a master and two workers, each its own JVM on 127.0.0.1):
the same findings as `local[2]`, and the `flink_savepoint` data source reading on the cluster's executors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.json as pajson
import pyarrow.parquet as pq
import pytest

from splitaudit.audit.checks.tables import savepoint_table
from splitaudit.savepoint_view import inspect_savepoint
from splitaudit_lab.stack.process import free_port
from splitaudit_lab.stack.spark_cluster import SparkCluster

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
STOCK_SINK = REPO / "fixtures" / "beam_sink" / "restore_stock_small" / "sink"
STOCK_SAVEPOINT = REPO / "fixtures" / "beam_flink_source" / "restore_stock_after"
# The sink and the savepoint come from two runs of the scenario, whose topics have different random names: the
# sink's topic is named as the source topic, or the audit would refuse a sink naming no topic the savepoint reads.
STOCK_TOPIC = json.loads((STOCK_SINK.parent / "expected.json").read_text())["topic"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    spark = SparkCluster(tmp_path_factory.mktemp("spark-cluster"), free_port(), free_port(), (free_port(), free_port()))
    try:
        spark.start()
        yield spark
    finally:
        spark.stop()


def _audit(master: str, sink: Path = STOCK_SINK, sink_format: str = "json") -> dict[str, Any]:
    """`splitaudit --json audit` of the stock restore run's sink (or a copy in another format) and final savepoint,
    in a fresh process."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "splitaudit", "--json", "audit", "--master", master),
            *("--sink", str(sink), "--sink-format", sink_format, "--savepoint", str(STOCK_SAVEPOINT)),
            *("--topic", STOCK_TOPIC),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 1, done.stderr[-3000:]  # findings of severity error
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def _executor_logs(spark: SparkCluster) -> dict[str, str]:
    """Each executor's stderr, by `worker-N/app-…/<executor id>`: the workers keep them in their work dirs."""
    return {
        str(log.parent.relative_to(spark.workdir)): log.read_text(errors="replace")
        for log in sorted(spark.workdir.glob("worker-*/app-*/*/stderr"))
    }


def test_audit_on_the_cluster_finds_what_local_finds(cluster: SparkCluster) -> None:
    assert cluster.healthy()
    on_cluster = _audit(cluster.master_url)
    executors = _executor_logs(cluster)
    assert {key.split("/")[0] for key in executors} == {"worker-1", "worker-2"}  # both workers ran executors
    local = _audit("local[2]")
    assert on_cluster == local
    assert on_cluster["summary"] == {
        "duplicate_records": 200,
        "missing_records": 0,
        "double_assigned_partitions": 4,
        "missing_partitions": 0,
        "rewound_partitions": 0,
    }
    double = [f for f in on_cluster["findings"] if f["kind"] == "double_assignment"]
    assert [(f["partition"], f["count"], f["offset_ranges"]) for f in double] == [(p, 50, [[50, 99]]) for p in range(4)]


def test_the_data_source_reads_on_the_executors(cluster: SparkCluster) -> None:
    # A relative path, as a user types it: the executor runs in its worker's work dir, not the driver's.
    relative = os.path.relpath(STOCK_SAVEPOINT, REPO)
    script = (
        "import json, sys\n"
        "from splitaudit.clients.spark import spark_session\n"
        "spark = spark_session(sys.argv[1], app_name='datasource-on-executors')\n"
        "rows = spark.read.format('flink_savepoint').load(sys.argv[2]).collect()\n"
        "print(json.dumps(sorted([r.asDict() for r in rows], key=lambda r: (r['subtask'], r['partition']))))\n"
        "spark.stop()\n"
    )
    before = set(_executor_logs(cluster))
    done = subprocess.run(
        [sys.executable, "-c", script, cluster.master_url, relative],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout)
    expected = savepoint_table(inspect_savepoint(str(STOCK_SAVEPOINT)), "splits").to_pylist()
    assert rows == sorted(expected, key=lambda r: (r["subtask"], r["partition"]))
    assert [(r["subtask"], r["partition"], r["next_offset"]) for r in rows] == [
        (0, 0, 10_000),
        (0, 2, 10_000),
        (1, 1, 10_000),
        (1, 3, 10_000),
    ]
    logs = {key: text for key, text in _executor_logs(cluster).items() if key not in before}
    python_tasks = [key for key, text in logs.items() if "Starting Python task execution" in text]
    assert python_tasks, f"no executor of this application ran a Python task: {sorted(logs)}"


def test_a_parquet_sink_is_read_by_the_executors_python_workers(cluster: SparkCluster, tmp_path: Path) -> None:
    """Pass 1 of a local Parquet sink runs in the executors' Python workers (pyarrow): the same findings."""
    parquet = tmp_path / "sink"
    parquet.mkdir()
    for index, path in enumerate(sorted(STOCK_SINK.glob("*.jsonl"))):
        pq.write_table(pajson.read_json(path), parquet / f"part-{index:04d}.parquet")
    before = set(_executor_logs(cluster))
    on_cluster = _audit(cluster.master_url, parquet, "parquet")
    logs = {key: text for key, text in _executor_logs(cluster).items() if key not in before}
    assert [key for key, text in logs.items() if "Starting Python task execution" in text]
    assert on_cluster == _audit("local[2]", parquet, "parquet")
    as_json = _audit("local[2]")
    assert on_cluster["summary"] == as_json["summary"]
    assert on_cluster["coverage"] == as_json["coverage"]
    double = [f for f in on_cluster["findings"] if f["kind"] == "double_assignment"]
    assert [(f["partition"], f["count"], f["offset_ranges"]) for f in double] == [(p, 50, [[50, 99]]) for p in range(4)]
