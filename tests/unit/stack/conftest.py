"""A file server on 127.0.0.1 for the download tests."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


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
