"""Spark's own metrics of the stages a benchmarked query ran, read from the session's UI: where its time goes.
Shared by the benchmarks that take `--stages`."""

from __future__ import annotations

import json
import urllib.request
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import SparkSession

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
