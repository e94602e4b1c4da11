"""The bytes behind a stream state handle (`StreamStateHandle.openInputStream`), read whole or by range.

Inline bytes (tag 1) are already in `_metadata`; files (tags 2, 6, 15) are read through `SavepointFiles`, which
confines them to the savepoint directory. Ranges let keyed state be read a window of one key group at a time.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import (
    ByteStreamStateHandle,
    FileStateHandle,
    RelativeFileStateHandle,
    SegmentFileStateHandle,
    StreamStateHandle,
)


@dataclass(frozen=True)
class StateStream:
    """One handle's stream: `size` bytes; `read` returns a range of them, offsets in the file's own terms."""

    handle: ByteStreamStateHandle | FileStateHandle | RelativeFileStateHandle | SegmentFileStateHandle
    files: SavepointFiles
    handle_offset: int  # where the handle is in `_metadata`, for messages about its file

    @property
    def size(self) -> int:
        if isinstance(self.handle, ByteStreamStateHandle):
            return len(self.handle.data)
        return self.handle.state_size

    def read(self, start: int, length: int, what: str) -> DataInput:
        """`length` bytes from `start` (relative to the stream's beginning), as a decoder."""
        handle, files, at = self.handle, self.files, self.handle_offset
        if start < 0 or length < 0 or start + length > self.size:
            where, offset = self._location(start)
            raise InputError(
                where, offset, f"{what}: bytes [{start}, {start + length}) lie outside the {self.size}-byte stream"
            )
        if isinstance(handle, ByteStreamStateHandle):
            return DataInput(handle.data[start : start + length], files.metadata_path, handle.data_offset + start)
        if isinstance(handle, RelativeFileStateHandle):
            path, data = files.read_relative(
                handle.relative_path, handle.state_size, files.metadata_path, at, (start, length)
            )
            return DataInput(data, path, start)
        if isinstance(handle, FileStateHandle):
            span = (0, handle.state_size)
            path, data = files.read_absolute(handle.path, span, files.metadata_path, at, part=(start, length))
            return DataInput(data, path, start)
        span = (handle.start_pos, handle.state_size)
        part = (handle.start_pos + start, length)
        path, data = files.read_absolute(handle.physical_path, span, files.metadata_path, at, whole=False, part=part)
        return DataInput(data, path, handle.start_pos + start)

    def _location(self, start: int) -> tuple[str, int]:
        """The file holding the stream's byte `start` and that byte's offset in it, for messages: a file handle's
        own file (an SST or MANIFEST of a RocksDB snapshot is named, not the `_metadata` that lists it)."""
        handle = self.handle
        if isinstance(handle, ByteStreamStateHandle):
            return self.files.metadata_path, handle.data_offset + max(start, 0)
        if isinstance(handle, RelativeFileStateHandle):
            return posixpath.join(self.files.directory, handle.relative_path), start
        if isinstance(handle, FileStateHandle):
            return handle.path, start
        return handle.physical_path, handle.start_pos + start


def open_state_stream(handle: StreamStateHandle, files: SavepointFiles, at: int, what: str) -> StateStream:
    """The stream of a handle that holds bytes; any other handle (null, empty segment, nested key groups) is bad
    input for `what`."""
    if isinstance(handle, ByteStreamStateHandle | FileStateHandle | RelativeFileStateHandle | SegmentFileStateHandle):
        return StateStream(handle, files, at)
    raise InputError(files.metadata_path, at, f"a {type(handle).__name__} cannot hold {what}")
