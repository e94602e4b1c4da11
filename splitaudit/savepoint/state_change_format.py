"""The state changes behind a changelog handle, as `StateChangeFormat` (flink-dstl-dfs, Flink 1.15 - 2.3) writes
them: each (key group, change bytes) in log order.

A file of `FsStateChangelogStorage` (`StateChangeFsUploader`) starts with one byte, 1 when what follows is Snappy
framed (`SnappyStreamCompressionDecorator`), else 0 (the size its `FileStateHandle` records is the uncompressed
stream's after that byte, not the file's); the offsets a `ChangelogStateHandleStreamImpl` names count in
the uncompressed stream after that byte (`ChangelogStreamWrapper.wrapAndSeek`). At each offset one
`StateChangeSet`: `int nGroups`, then per key group `int nChanges, int keyGroup, nChanges x (int len,
byte[len] change)` (key group -1 holds the states' METADATA). An `InMemoryChangelogStateHandle` holds the changes
inline. Each file is read whole (no larger than the reader's file limit, decompressed no larger either), one at a
time.
"""

from __future__ import annotations

from collections.abc import Iterator

from splitaudit.primitives.datainput import DataInput
from splitaudit.primitives.snappy import DATA_CHUNKS, chunk_data, chunk_data_size, read_chunk_header
from splitaudit.savepoint.changelog_handles import ChangelogLogHandle, InMemoryChangelogStateHandle
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import FileStateHandle, StreamStateHandle
from splitaudit.savepoint.streams import open_state_stream

UNCOMPRESSED, SNAPPY = 0, 1


def state_changes(handle: ChangelogLogHandle, files: SavepointFiles) -> Iterator[tuple[int, DataInput]]:
    """Every change of a log handle, in the order Flink applies them: (key group, the change's bytes)."""
    if isinstance(handle, InMemoryChangelogStateHandle):
        for key_group, change, offset in handle.changes:
            yield key_group, DataInput(change, files.metadata_path, offset)
        return
    opened: tuple[StreamStateHandle, DataInput] | None = None
    for stream_handle, offset, handle_at in handle.segments:
        if opened is None or opened[0] != stream_handle:
            opened = (stream_handle, _changelog_file(stream_handle, files, handle_at))
        data = opened[1]
        if offset > len(data):
            raise data.error(f"changelog offset {offset} lies past the {len(data)}-byte change stream", 0)
        data.seek(offset)
        yield from read_state_change_set(data)


def read_state_change_set(data: DataInput) -> Iterator[tuple[int, DataInput]]:
    """One `StateChangeSet` from where `data` stands (`StateChangeFormat.read`)."""
    for _ in range(data.read_length("number of key groups in a state change set", 8)):
        count = data.read_length("number of changes in a key group", 4)
        key_group = data.read_int("key group of state changes")
        for _ in range(count):
            yield key_group, data.sub(data.read_length("state change length"), "state change")


def _changelog_file(handle: StreamStateHandle, files: SavepointFiles, at: int) -> DataInput:
    """A changelog file's change stream: past the compression byte, decompressed if it is Snappy framed. A file
    handle records the size of the uncompressed change stream (`OutputStreamWithPos.getPos()`), not the file's:
    the file is read whole, whatever its size, within the reader's file limit."""
    recorded = None
    if isinstance(handle, FileStateHandle):
        path, data = files.read_absolute(handle.path, None, files.metadata_path, at)
        whole = DataInput(data, path)
        recorded = handle.state_size
    else:
        stream = open_state_stream(handle, files, at, "state changelog")
        whole = stream.read(0, stream.size, "state changelog")
    flag = whole.read_unsigned_byte("changelog compression flag")
    if flag == UNCOMPRESSED:
        changes = whole.sub(whole.remaining(), "state changes")
    elif flag == SNAPPY:
        changes = _snappy_framed(whole, files.max_file_size)
    else:
        raise whole.error(f"changelog compression flag {flag} is neither 0 nor 1", 0)
    if recorded is not None and len(changes) != recorded:
        raise whole.error(
            f"the change stream has {len(changes)} bytes, its handle (byte {at} of _metadata) says {recorded}", 0
        )
    return changes


def _snappy_framed(whole: DataInput, limit: int) -> DataInput:
    """The rest of a changelog file, Snappy framed, decompressed a chunk at a time: no more than `limit` bytes."""
    out = bytearray()
    while whole.remaining():
        kind, length = read_chunk_header(whole)
        body = whole.sub(length, "Snappy chunk")
        size = chunk_data_size(kind, body)
        if kind in DATA_CHUNKS:
            if len(out) + size > limit:
                raise body.error(f"the changelog decompresses to more than {limit} bytes")
            out += chunk_data(kind, body)
    return DataInput(bytes(out), f"{whole.path} (decompressed)")
