"""A local file read by range, as the reader reads a state file's stream (`StateStream`), for tests on RocksDB
directories written by RocksDB itself (rocksdict) and for the RocksDB fuzzer: a read past the file's end fails the
test, since the reader must check every length against the file before it reads."""

from __future__ import annotations

from pathlib import Path

from splitaudit.primitives.datainput import DataInput


class LocalFile:
    """`size` and `read(start, length, what)` over one file, read whole once (test files are small)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.data = path.read_bytes()

    @property
    def size(self) -> int:
        return len(self.data)

    def read(self, start: int, length: int, what: str) -> DataInput:
        assert start >= 0, what
        assert start + length <= len(self.data), what
        return DataInput(self.data[start : start + length], self.path, start)
