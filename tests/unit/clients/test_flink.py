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
