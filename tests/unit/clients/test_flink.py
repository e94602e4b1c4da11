"""FlinkRestClient's reading of REST answers (a JobManager's documents given as data; no server)."""

from __future__ import annotations

from typing import Any

import pytest

from splitaudit.clients.flink import NO_WATERMARK, FlinkRestClient, FlinkRestError


class _WatermarkFlink(FlinkRestClient):
    """A job of a source and two downstream vertices; the last one just deployed, its subtasks report nothing."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:1")

    def _call(self, method: str, path: str, timeout: float | None = None, **kwargs: Any) -> Any:
        documents: dict[str, Any] = {
            "/jobs/j": {
                "plan": {"nodes": [{"id": "src"}, {"id": "win", "inputs": [{}]}, {"id": "sink", "inputs": [{}]}]}
            },
            "/jobs/j/vertices/win/watermarks": [
                {"id": "0.currentInputWatermark", "value": "1700000010000"},
                {"id": "1.currentInputWatermark", "value": "1700000005000"},
            ],
            "/jobs/j/vertices/sink/watermarks": [],
        }
        return documents[path]


def test_a_vertex_without_watermarks_yet_has_flinks_no_watermark() -> None:
    assert _WatermarkFlink().input_watermarks("j") == {"win": 1_700_000_005_000, "sink": NO_WATERMARK}


class _EndingFlink(FlinkRestClient):
    """A job RUNNING when asked, ended on its own (`ended_as`) by the time the cancel reaches the JobManager."""

    def __init__(self, ended_as: str) -> None:
        super().__init__("http://127.0.0.1:1")
        self.state, self.ended_as = "RUNNING", ended_as
        self.calls: list[str] = []

    def _call(self, method: str, path: str, timeout: float | None = None, **kwargs: Any) -> Any:
        self.calls.append(f"{method} {path}")
        if method == "PATCH":
            self.state = self.ended_as
            if self.state == "FINISHED":
                reason = (
                    "Job cancellation failed because the job has already reached another terminal state (FINISHED)."
                )
                raise FlinkRestError(method, path, 409, [f"RestHandlerException: {reason}"])
            raise FlinkRestError(method, path, 409, ["a conflict that is no ending"])
        return {"jid": "j", "state": self.state}


def test_a_cancel_that_meets_the_job_finished_on_its_own_is_no_error() -> None:
    flink = _EndingFlink("FINISHED")
    flink.cancel("j")
    assert flink.calls == ["GET /jobs/j", "PATCH /jobs/j", "GET /jobs/j"]


def test_a_cancel_refused_while_the_job_runs_on_is_an_error() -> None:
    flink = _EndingFlink("RUNNING")
    with pytest.raises(FlinkRestError, match="HTTP 409: a conflict that is no ending"):
        flink.cancel("j")


class _GrowingMetrics(FlinkRestClient):
    """A subtask whose KafkaSourceReader registers its partition's gauges between the watch's listing of the
    metric names and its request of their values: the fetcher's next dump brings them and a count of records
    read from that partition."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:1")
        self.calls: list[str] = []
        self.metrics = {"Source__A.KafkaSourceReader.commitsSucceeded": "0", "Source__A.numRecordsOut": "0"}

    def _call(self, method: str, path: str, timeout: float | None = None, **kwargs: Any) -> Any:
        wanted = kwargs.get("params", {}).get("get")
        self.calls.append("values" if wanted else "names")
        if wanted is None:
            listing = [{"id": name} for name in self.metrics]
            if len(self.calls) == 1:  # the dump after this listing: the split's gauges and its records
                self.metrics |= {
                    "Source__A.numRecordsOut": "100",
                    "Source__A.KafkaSourceReader.topic.t.partition.0.currentOffset": "199",
                }
            return listing
        return [{"id": name, "value": self.metrics[name]} for name in wanted.split(",")]


def test_metric_values_are_read_again_when_names_appeared_after_the_listing() -> None:
    flink = _GrowingMetrics()
    assert flink.subtask_metrics("j", "v", 0, "Source__") == {
        "Source__A.KafkaSourceReader.commitsSucceeded": "0",
        "Source__A.KafkaSourceReader.topic.t.partition.0.currentOffset": "199",
        "Source__A.numRecordsOut": "100",
    }
    # the first values (a count of 100 and no gauge of the partition) are not kept
    assert flink.calls == ["names", "values", "names", "values", "names"]
