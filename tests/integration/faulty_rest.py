"""A fault between a REST client and Flink: an HTTP proxy on 127.0.0.1 that forwards every call to the
JobManager's REST API, and for a while answers calls about jobs with HTTP 500 and a server-side Java trace, as
Flink 1.19 does for `GET /jobs/:id` while the job is being cancelled by a savepoint."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

import requests

# What Flink 1.19 answered `GET /jobs/<id>` with when the job was cancelled by a savepoint (abridged trace).
CANCELLATION = {
    "errors": [
        "Internal server error.",
        "<Exception on server side:\njava.util.concurrent.CancellationException\n"
        "\tat java.base/java.util.concurrent.CompletableFuture.cancel(CompletableFuture.java:2510)\n"
        "\tat org.apache.flink.runtime.rest.handler.legacy.DefaultExecutionGraphCache.getExecutionGraphInfo("
        "DefaultExecutionGraphCache.java:70)\n\nEnd of exception on server side>",
    ]
}


class FaultyRest:
    """The proxy in front of `target` (http://127.0.0.1:PORT of a JobManager), serving on a free port of
    127.0.0.1 from a thread of this process while used as a context manager."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.failing_until = 0.0  # monotonic time until which calls under /jobs/ answer 500
        self.failed = 0  # calls answered 500 so far
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, name="faulty-rest", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail_for(self, seconds: float) -> None:
        """Answer every call under /jobs/ with HTTP 500 for the next `seconds`."""
        self.failing_until = time.monotonic() + seconds

    def __enter__(self) -> FaultyRest:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, ex: BaseException | None, tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.path.startswith("/jobs/") and time.monotonic() < proxy.failing_until:
                    proxy.failed += 1
                    status, content = 500, json.dumps(CANCELLATION).encode()
                else:
                    headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
                    answer = requests.request(
                        self.command, proxy.target + self.path, data=body, headers=headers, timeout=60
                    )
                    status, content = answer.status_code, answer.content
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PATCH = _serve  # noqa: N815

            def log_message(self, format: str, *args: object) -> None:  # quiet: the test reads the watch's report
                return

        return Handler
