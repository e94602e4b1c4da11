"""What the Spark benchmarks share: timing an action, the stack's standalone cluster to run on (`--cluster`), and
Spark's own metrics of the stages a benchmarked query ran, read from the session's UI (`--stages`): where its time
goes."""

from __future__ import annotations

import argparse
import json
import shutil
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from splitaudit_lab.stack.kafka import KafkaBroker
from splitaudit_lab.stack.process import free_port
from splitaudit_lab.stack.spark_cluster import SparkCluster


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    """The action's wall time in seconds, and its result."""
    started = time.monotonic()
    result = action()
    return time.monotonic() - started, result


@contextmanager
def kept_topic_run(run: Path, keep: bool, make: Callable[[str], None]) -> Iterator[KafkaBroker]:
    """A run folder with a Kafka broker of its own on 127.0.0.1: `make(bootstrap)` writes the run's topic and sink
    once (with `keep`, a folder whose `made` marker is there is reused as it is); the broker is stopped after and,
    without `keep`, the folder removed."""
    made = run / "made"  # written once the topic and the sink are complete
    if not (keep and made.is_file()):
        shutil.rmtree(run, ignore_errors=True)
    broker = KafkaBroker(run / "kafka", free_port(), free_port())
    broker.start()
    try:
        if not made.is_file():
            make(broker.bootstrap)
            made.touch()
        yield broker
    finally:
        broker.stop()
        if not keep:
            shutil.rmtree(run, ignore_errors=True)


def add_master_options(parser: argparse.ArgumentParser) -> None:
    """`--master`, `--cluster` and `--executor-memory`: where a benchmark runs (`spark_master`)."""
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--cluster",
        type=int,
        default=0,
        metavar="WORKERS",
        help="run on a local standalone cluster of 1-core workers (instead of --master)",
    )
    parser.add_argument("--executor-memory", default="4g", help="each cluster worker's memory for its executor")


@contextmanager
def spark_master(
    master: str, workers: int, directory: Path, executor_memory: str
) -> Iterator[tuple[str, dict[str, str]]]:
    """Where a benchmark's session runs, for the length of a `with` block: the master URL and the session settings
    it needs. `master` as given (no settings) when `workers` is 0, else the stack's Spark standalone cluster, started
    for the block and stopped after it: a master and `workers` one-core workers on 127.0.0.1 with `executor_memory`
    each, their files in `directory`."""
    if not workers:
        yield master, {}
        return
    cluster = SparkCluster(
        directory,
        free_port(),
        free_port(),
        tuple(free_port() for _ in range(workers)),
        worker_memory=executor_memory,
    )
    cluster.start()
    try:
        yield cluster.master_url, {"spark.executor.memory": executor_memory, "spark.cores.max": str(workers)}
    finally:
        cluster.stop()


# what a session needs for StageMetrics: its UI on (at the driver's address, 127.0.0.1), at a free port
UI_CONFIG = {"spark.ui.enabled": "true", "spark.ui.port": "0"}


class StageMetrics:
    """Spark's own metrics of every stage completed since `mark`, from the REST API of the session's UI: where
    an audit's time goes."""

    def __init__(self, spark: SparkSession) -> None:
        url = spark.sparkContext.uiWebUrl
        assert url is not None, "the UI is off: --stages turns it on"
        self.base = f"{url}/api/v1/applications/{spark.sparkContext.applicationId}"
        self.seen: set[int] = set()

    def _stages(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.base}/stages?status=complete") as response:
            stages: list[dict[str, Any]] = json.load(response)
        return stages

    def mark(self) -> None:
        self.seen = {stage["stageId"] for stage in self._stages()}

    def since_mark(self) -> list[dict[str, Any]]:
        """Per new stage: id, what ran (the call site), wall time, task time, rows and bytes read, rows shuffled,
        bytes spilled to disk."""
        rows = []
        for stage in sorted(self._stages(), key=lambda s: s["stageId"]):
            if stage["stageId"] in self.seen:
                continue
            started = _ui_time(stage.get("firstTaskLaunchedTime") or stage["submissionTime"])
            rows.append(
                {
                    "stage": stage["stageId"],
                    "name": stage["name"].split(" at ")[0],
                    "wall_s": round(_ui_time(stage["completionTime"]) - started, 2),
                    "task_s": round(stage["executorRunTime"] / 1000, 2),
                    "tasks": stage["numTasks"],
                    "input_rows": stage["inputRecords"],
                    "input_mib": round(stage["inputBytes"] / 2**20, 1),
                    "shuffle_write_rows": stage["shuffleWriteRecords"],
                    "spill_mib": round(stage["diskBytesSpilled"] / 2**20, 1),
                }
            )
        return rows


def _ui_time(text: str) -> float:
    """Seconds since the epoch of a UI timestamp such as 2026-11-23T03:40:01.123GMT."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%Z").replace(tzinfo=UTC).timestamp()
