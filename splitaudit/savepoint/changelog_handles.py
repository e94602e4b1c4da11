"""The changelog state backend's keyed-state handles (FLIP-158), as `MetadataV2V3SerializerBase` writes them
(Flink 1.15 - 2.3; tags of `splitaudit/savepoint/handles.py`).

- `ChangelogStateBackendHandleImpl` (tag 8; 14 adds the checkpoint id): `int startKeyGroup, int numKeyGroups,
  long checkpointedSize, int n x KeyedStateHandle materialized` (the base backend's snapshot: a heap
  `KeyGroupsStateHandle` or a RocksDB `IncrementalRemoteKeyedStateHandle`), `int n x KeyedStateHandle
  nonMaterialized` (the log since that materialization), `long materializationId, [14: long checkpointId],
  UTF stateHandleId`.
- `ChangelogStateHandleStreamImpl` (tag 10; 13 adds the storage identifier), what `FsStateChangelogStorage`
  uploads: `int startKeyGroup, int numKeyGroups, int n x (long offset, StreamStateHandle file)`, `long size,
  long checkpointedSize, UTF stateHandleId, [13: UTF storageIdentifier]`: one serialized `StateChangeSet` at each
  offset of each file (`splitaudit/savepoint/state_change_format.py`).
- `InMemoryChangelogStateHandle` (tag 9, the in-memory storage of tests): `int startKeyGroup, int numKeyGroups,
  long from, long to, int n x (int keyGroup, int len, byte[len] change), UTF stateHandleId`.

`handles.read_keyed_state_handle` hands these tags here, with the readers of the handles they nest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from splitaudit.primitives.datainput import DataInput

if TYPE_CHECKING:  # handles.py imports this module: its types are named for the type checker only
    from splitaudit.savepoint.handles import (
        IncrementalRemoteKeyedStateHandle,
        KeyedStateHandle,
        KeyGroupsStateHandle,
        StreamStateHandle,
    )

CHANGELOG_HANDLE = 8
CHANGELOG_BYTE_INCREMENT_HANDLE = 9
CHANGELOG_FILE_INCREMENT_HANDLE = 10
CHANGELOG_FILE_INCREMENT_HANDLE_V2 = 13
CHANGELOG_HANDLE_V2 = 14


@dataclass(frozen=True)
class ChangelogStateHandleStreamImpl:
    """Tag 10 / 13: state changes in files of the changelog storage; `segments` are (file handle, offset of a
    change set in the file's uncompressed stream, where the file handle starts in `_metadata`), in log order."""

    tag: int
    start_key_group: int
    number_of_key_groups: int
    segments: tuple[tuple[StreamStateHandle, int, int], ...]
    size: int
    state_handle_id: str
    storage_identifier: str | None


@dataclass(frozen=True)
class InMemoryChangelogStateHandle:
    """Tag 9: state changes inline in `_metadata`: (key group, change bytes, where the bytes start)."""

    start_key_group: int
    number_of_key_groups: int
    changes: tuple[tuple[int, bytes, int], ...]
    state_handle_id: str


ChangelogLogHandle = ChangelogStateHandleStreamImpl | InMemoryChangelogStateHandle


@dataclass(frozen=True)
class ChangelogStateBackendHandleImpl:
    """Tag 8 / 14: the keyed state of one subtask under the changelog backend: the base backend's materialized
    snapshot (`materialized`, key-group or RocksDB handles) and the log of changes made since it
    (`non_materialized`), applied in order on restore (`ChangelogBackendRestoreOperation`). `at` is where the
    handle starts in `_metadata`."""

    tag: int
    start_key_group: int
    number_of_key_groups: int
    materialized: tuple[KeyGroupsStateHandle | IncrementalRemoteKeyedStateHandle, ...]
    non_materialized: tuple[ChangelogLogHandle, ...]
    materialization_id: int
    checkpoint_id: int | None
    state_handle_id: str
    at: int


def read_changelog_handle(
    inp: DataInput,
    tag: int,
    at: int,
    read_keyed: Callable[[DataInput], KeyedStateHandle | None],
    read_stream: Callable[[DataInput], StreamStateHandle],
) -> ChangelogStateBackendHandleImpl | ChangelogLogHandle:
    """The body of a changelog handle whose tag byte (at `at`) was read; `read_keyed` and `read_stream` read the
    handles it nests (one level deeper)."""
    start = inp.read_int("start key group")
    count = inp.read_int("number of key groups")
    if tag in (CHANGELOG_HANDLE, CHANGELOG_HANDLE_V2):
        inp.read_long("checkpointed size")
        materialized: list[KeyGroupsStateHandle | IncrementalRemoteKeyedStateHandle] = []
        for _ in range(inp.read_length("number of materialized handles", 1)):
            handle_at = inp.tell()
            handle = read_keyed(inp)
            if isinstance(
                handle, ChangelogStateBackendHandleImpl | ChangelogStateHandleStreamImpl | InMemoryChangelogStateHandle
            ):
                raise inp.error(f"a materialized changelog handle is a {type(handle).__name__}", handle_at)
            if handle is not None:
                materialized.append(handle)
        logs = []
        for _ in range(inp.read_length("number of non-materialized handles", 1)):
            log_at = inp.tell()
            log = read_keyed(inp)
            if not isinstance(log, ChangelogStateHandleStreamImpl | InMemoryChangelogStateHandle):
                raise inp.error(f"a non-materialized changelog handle is a {type(log).__name__}", log_at)
            logs.append(log)
        materialization_id = inp.read_long("materialization id")
        checkpoint_id = inp.read_long("checkpoint id") if tag == CHANGELOG_HANDLE_V2 else None
        handle_id = inp.read_utf("state handle id")
        return ChangelogStateBackendHandleImpl(
            tag, start, count, tuple(materialized), tuple(logs), materialization_id,
            checkpoint_id, handle_id, at,
        )  # fmt: skip
    if tag == CHANGELOG_BYTE_INCREMENT_HANDLE:
        inp.read_long("from sequence number")
        inp.read_long("to sequence number")
        changes = []
        for _ in range(inp.read_length("number of changes", 8)):
            key_group = inp.read_int("key group")
            length = inp.read_length("change length")
            changes.append((key_group, inp.read_bytes(length, "change bytes"), inp.offset() - length))
        return InMemoryChangelogStateHandle(start, count, tuple(changes), inp.read_utf("state handle id"))
    segments = []
    for _ in range(inp.read_length("number of changelog segments", 9)):
        offset_at = inp.tell()
        offset = inp.read_long("changelog offset")
        if offset < 0:
            raise inp.error(f"negative changelog offset {offset}", offset_at)
        handle_at = inp.offset()
        segments.append((read_stream(inp), offset, handle_at))
    size = inp.read_long("size")
    inp.read_long("checkpointed size")
    handle_id = inp.read_utf("state handle id")
    storage = inp.read_utf("storage identifier") if tag == CHANGELOG_FILE_INCREMENT_HANDLE_V2 else None
    return ChangelogStateHandleStreamImpl(tag, start, count, tuple(segments), size, handle_id, storage)
