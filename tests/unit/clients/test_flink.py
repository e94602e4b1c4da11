"""FlinkRestClient's reading of REST answers (a JobManager's documents given as data; no server)."""

from __future__ import annotations

from typing import Any

from splitaudit.clients.flink import NO_WATERMARK, FlinkRestClient


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
