"""A file server on 127.0.0.1 for the download tests, and a Progress that keeps what it was told."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from splitaudit.progress import Progress


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output clean."""


@dataclass(frozen=True)
class FileServer:
    """Serves `root` over HTTP at `url`."""

    root: Path
    url: str


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[FileServer]:
    root = tmp_path / "served"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FileServer(root, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class RecordingProgress(Progress):
    """Keeps every step and info line, in order."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    @contextmanager
    def step(self, message: str) -> Iterator[None]:
        self.lines.append(f"step: {message}")
        yield

    def info(self, message: str) -> None:
        self.lines.append(message)
