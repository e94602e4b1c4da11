"""State handles as `MetadataV2V3SerializerBase` writes them (Flink 1.11 - 2.3), one type per handle tag.

Stream handles (tags 0, 1, 2, 3, 6, 15, 16), the operator-state handles (4, 17) and the keyed-state handles
(3, 7, 12 key-group handles; 5, 11 incremental RocksDB handles) are read into frozen dataclasses, the changelog
backend's (8, 9, 10, 13, 14) by `changelog_handles.py`;
channel-state handles of unaligned checkpoints (`ChannelStateHandleSerializer` V1 for metadata V3-V5 and
`ChannelStateHandleSerializerV2` for V6+) are skipped. Layouts: splitaudit/savepoint/FORMAT.md, "State handles".
"""

from __future__ import annotations

from dataclasses import dataclass

from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.changelog_handles import (
    CHANGELOG_BYTE_INCREMENT_HANDLE,
    CHANGELOG_FILE_INCREMENT_HANDLE,
    CHANGELOG_FILE_INCREMENT_HANDLE_V2,
    CHANGELOG_HANDLE,
    CHANGELOG_HANDLE_V2,
    ChangelogStateBackendHandleImpl,
    ChangelogStateHandleStreamImpl,
    InMemoryChangelogStateHandle,
    read_changelog_handle,
)

# Tags of MetadataV2V3SerializerBase (unchanged 1.17 → 2.3; 15-17 since 1.20).
NULL_HANDLE = 0
BYTE_STREAM_HANDLE = 1
FILE_STREAM_STATE_HANDLE = 2
KEY_GROUPS_HANDLE = 3
PARTITIONABLE_OPERATOR_STATE_HANDLE = 4
INCREMENTAL_KEY_GROUPS_HANDLE = 5
RELATIVE_STREAM_STATE_HANDLE = 6
SAVEPOINT_KEY_GROUPS_HANDLE = 7
INCREMENTAL_KEY_GROUPS_HANDLE_V2 = 11
KEY_GROUPS_HANDLE_V2 = 12
SEGMENT_FILE_HANDLE = 15
EMPTY_SEGMENT_FILE_HANDLE = 16
SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE = 17

# Handles nest (key-group → delegate, changelog → keyed handles); real files nest two or three deep.
MAX_NESTING = 16

# OperatorStateHandle.Mode ordinals.
DISTRIBUTION_MODES = ("SPLIT_DISTRIBUTE", "UNION", "BROADCAST")


@dataclass(frozen=True)
class ByteStreamStateHandle:
    """Tag 1, `ByteStreamStateHandle`: bytes inline in `_metadata`; `data_offset` is where they start."""

    name: str
    data: bytes
    data_offset: int


@dataclass(frozen=True)
class FileStateHandle:
    """Tag 2, `FileStateHandle`: an absolute path or URI (`file:/…`, `s3://…`)."""

    path: str
    state_size: int


@dataclass(frozen=True)
class RelativeFileStateHandle:
    """Tag 6, `RelativeFileStateHandle`: a file in the directory that holds `_metadata`."""

    relative_path: str
    state_size: int


@dataclass(frozen=True)
class SegmentFileStateHandle:
    """Tag 15, `SegmentFileStateHandle` (1.20+, file merging): a byte range of a shared physical file."""

    physical_path: str
    logical_file_id: str
    start_pos: int
    state_size: int
    scope: str


@dataclass(frozen=True)
class EmptySegmentFileStateHandle:
    """Tag 16, `EmptySegmentFileStateHandle` (1.20+): a file-merging handle with no data."""


@dataclass(frozen=True)
class KeyGroupsStateHandle:
    """`KeyGroupsStateHandle` (tag 3; 12 with a state handle id) or `KeyGroupsSavepointStateHandle` (tag 7): the
    `KeyGroupRangeOffsets` (first key group, one offset per key group into the delegate stream, 0 = empty) and
    the stream. Tag 7 is always Flink's canonical savepoint format; 3/12 hold a heap backend's own format or a
    full RocksDB snapshot in the canonical one. `delegate_offset` is where the delegate starts in `_metadata`."""

    start_key_group: int
    offsets: tuple[int, ...]
    delegate: StreamStateHandle
    tag: int = 3
    delegate_offset: int = 0
    state_handle_id: str | None = None


StreamStateHandle = (
    ByteStreamStateHandle
    | FileStateHandle
    | RelativeFileStateHandle
    | SegmentFileStateHandle
    | EmptySegmentFileStateHandle
    | KeyGroupsStateHandle
    | None
)


@dataclass(frozen=True)
class StateMetaInfo:
    """`OperatorStateHandle.StateMetaInfo`: one named list/union/broadcast state and its element offsets."""

    name: str
    mode: str
    offsets: tuple[int, ...]


@dataclass(frozen=True)
class OperatorStateHandle:
    """Tag 4 `OperatorStreamStateHandle`, or tag 17 `FileMergingOperatorStreamStateHandle` (1.20+).

    For tag 17 the offsets are relative to the start of the segment the delegate names.
    """

    tag: int
    states: tuple[StateMetaInfo, ...]
    delegate: StreamStateHandle
    delegate_offset: int  # where the delegate handle starts in `_metadata`, for messages about its file
    is_empty: bool


@dataclass(frozen=True)
class IncrementalRemoteKeyedStateHandle:
    """Tag 5 / 11 `IncrementalRemoteKeyedStateHandle`: a RocksDB native snapshot (incremental checkpoint, or a
    NATIVE savepoint), its SST and other files by their local names in RocksDB's directory (`shared`: SST files
    possibly shared between checkpoints; `private`: MANIFEST, CURRENT, OPTIONS), and `meta_state` holding the
    `KeyedBackendSerializationProxy` that names the column families."""

    tag: int
    checkpoint_id: int
    backend_id: str
    start_key_group: int
    number_of_key_groups: int
    meta_state: StreamStateHandle
    # (local name, its file's handle, where that handle starts in `_metadata`, for messages about the file)
    shared: tuple[tuple[str, StreamStateHandle, int], ...]
    private: tuple[tuple[str, StreamStateHandle, int], ...]
    state_handle_id: str | None


KeyedStateHandle = (
    KeyGroupsStateHandle
    | IncrementalRemoteKeyedStateHandle
    | ChangelogStateBackendHandleImpl
    | ChangelogStateHandleStreamImpl
    | InMemoryChangelogStateHandle
)
CHANGELOG_TAGS = (
    CHANGELOG_HANDLE,
    CHANGELOG_BYTE_INCREMENT_HANDLE,
    CHANGELOG_FILE_INCREMENT_HANDLE,
    CHANGELOG_FILE_INCREMENT_HANDLE_V2,
    CHANGELOG_HANDLE_V2,
)


def _check_depth(inp: DataInput, depth: int) -> None:
    if depth > MAX_NESTING:
        raise inp.error(f"state handles nested more than {MAX_NESTING} deep")


def read_stream_handle(inp: DataInput, depth: int = 0) -> StreamStateHandle:
    """`deserializeStreamStateHandle`: the tag byte is read unsigned (`dis.read()`)."""
    _check_depth(inp, depth)
    at = inp.tell()
    tag = inp.read_unsigned_byte("stream state handle tag")
    if tag == NULL_HANDLE:
        return None
    if tag == BYTE_STREAM_HANDLE:
        name = inp.read_utf("ByteStreamStateHandle name")
        size = inp.read_length("ByteStreamStateHandle length")
        data_offset = inp.offset()
        return ByteStreamStateHandle(name, inp.read_bytes(size, "ByteStreamStateHandle data"), data_offset)
    if tag == FILE_STREAM_STATE_HANDLE:
        state_size = inp.read_long("FileStateHandle size")
        return FileStateHandle(inp.read_utf("FileStateHandle path"), state_size)
    if tag == RELATIVE_STREAM_STATE_HANDLE:
        relative_path = inp.read_utf("RelativeFileStateHandle path")
        return RelativeFileStateHandle(relative_path, inp.read_long("RelativeFileStateHandle size"))
    if tag == KEY_GROUPS_HANDLE:
        start, offsets = _read_key_group_range_offsets(inp)
        delegate_offset = inp.offset()
        return KeyGroupsStateHandle(start, offsets, read_stream_handle(inp, depth + 1), tag, delegate_offset)
    if tag == SEGMENT_FILE_HANDLE:
        start_pos = inp.read_long("segment start")
        state_size = inp.read_long("segment size")
        scope_at = inp.tell()
        scope = inp.read_int("segment scope")
        if scope not in (0, 1):
            raise inp.error(f"segment file scope {scope} is neither SHARED (0) nor EXCLUSIVE (1)", scope_at)
        physical_path = inp.read_utf("segment physical file path")
        logical_file_id = inp.read_utf("segment logical file id")
        if start_pos < 0 or state_size < 0:
            raise inp.error(f"segment range ({start_pos}, {state_size}) is negative", at)
        return SegmentFileStateHandle(
            physical_path, logical_file_id, start_pos, state_size, ("SHARED", "EXCLUSIVE")[scope]
        )
    if tag == EMPTY_SEGMENT_FILE_HANDLE:
        return EmptySegmentFileStateHandle()
    raise inp.error(f"unknown stream state handle tag {tag}", at)


def _read_key_group_range_offsets(inp: DataInput) -> tuple[int, tuple[int, ...]]:
    """`int startKeyGroup, int numKeyGroups, long[numKeyGroups] offsets` of the key-group handles."""
    start = inp.read_int("start key group")
    count = inp.read_length("number of key groups", 8)
    return start, tuple(inp.read_long("key-group offset") for _ in range(count))


def read_operator_state_handle(inp: DataInput) -> OperatorStateHandle | None:
    """`deserializeOperatorStateHandle`: tag 0 (null), 4 or 17."""
    at = inp.tell()
    tag = inp.read_unsigned_byte("operator state handle tag")
    if tag == NULL_HANDLE:
        return None
    if tag not in (PARTITIONABLE_OPERATOR_STATE_HANDLE, SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE):
        raise inp.error(f"unknown operator state handle tag {tag}", at)
    # Each entry is at least a 2-byte name length, a mode byte and a 4-byte count.
    states = []
    for _ in range(inp.read_length("number of operator states", 7)):
        name = inp.read_utf("operator state name")
        mode_at = inp.tell()
        mode = inp.read_unsigned_byte("distribution mode")
        if mode >= len(DISTRIBUTION_MODES):
            raise inp.error(f"unknown distribution mode {mode} of state {name!r}", mode_at)
        offsets = tuple(inp.read_long("state element offset") for _ in range(inp.read_length("number of offsets", 8)))
        states.append(StateMetaInfo(name, DISTRIBUTION_MODES[mode], offsets))
    is_empty = False
    if tag == SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE:
        inp.read_utf("task-owned directory")
        inp.read_utf("shared directory")
        is_empty = inp.read_bool("isEmpty flag")
    delegate_offset = inp.offset()
    delegate = read_stream_handle(inp)
    return OperatorStateHandle(tag, tuple(states), delegate, delegate_offset, is_empty)


def read_keyed_state_handle(inp: DataInput, depth: int = 0) -> KeyedStateHandle | None:
    """`deserializeKeyedStateHandle`; the tag byte is read with `readByte`."""
    _check_depth(inp, depth)
    at = inp.tell()
    tag = inp.read_unsigned_byte("keyed state handle tag")
    if tag == NULL_HANDLE:
        return None
    if tag in (KEY_GROUPS_HANDLE, KEY_GROUPS_HANDLE_V2, SAVEPOINT_KEY_GROUPS_HANDLE):
        start, offsets = _read_key_group_range_offsets(inp)
        delegate_offset = inp.offset()
        delegate = read_stream_handle(inp, depth + 1)
        handle_id = inp.read_utf("state handle id") if tag == KEY_GROUPS_HANDLE_V2 else None
        return KeyGroupsStateHandle(start, offsets, delegate, tag, delegate_offset, handle_id)
    if tag in (INCREMENTAL_KEY_GROUPS_HANDLE, INCREMENTAL_KEY_GROUPS_HANDLE_V2):
        checkpoint_id = inp.read_long("checkpoint id")
        backend_id = inp.read_utf("backend id")
        start = inp.read_int("start key group")
        count = inp.read_int("number of key groups")
        if tag == INCREMENTAL_KEY_GROUPS_HANDLE_V2:
            inp.read_long("checkpointed size")
        meta_state = read_stream_handle(inp, depth + 1)
        files = []
        for what in ("shared", "private"):
            listed = []
            for _ in range(inp.read_length(f"number of {what} state files", 3)):
                name = inp.read_utf("local path")
                at = inp.offset()
                listed.append((name, read_stream_handle(inp, depth + 1), at))
            files.append(tuple(listed))
        handle_id = inp.read_utf("state handle id") if tag == INCREMENTAL_KEY_GROUPS_HANDLE_V2 else None
        return IncrementalRemoteKeyedStateHandle(
            tag, checkpoint_id, backend_id, start, count, meta_state, files[0], files[1], handle_id
        )
    if tag in CHANGELOG_TAGS:  # the changelog backend (changelog_handles.py)
        return read_changelog_handle(
            inp,
            tag,
            inp.base + at,
            lambda nested: read_keyed_state_handle(nested, depth + 1),
            lambda nested: read_stream_handle(nested, depth + 1),
        )
    raise inp.error(f"unknown keyed state handle tag {tag}", at)


def skip_channel_state_handle(inp: DataInput, typed: bool) -> None:
    """Step over one input/output channel-state handle of an unaligned checkpoint.

    `typed` is metadata V6+ (`ChannelStateHandleSerializerV2`): a type byte first, 1/2 = the V1 layout,
    3/4 = merged handles (`int subtask, long size, delegate, int len, byte[len] offsets`).
    """
    if typed:
        at = inp.tell()
        kind = inp.read_unsigned_byte("channel state handle type")
        if kind in (3, 4):
            inp.read_int("subtask index")
            inp.read_long("state size")
            read_stream_handle(inp)
            inp.read_length_prefixed("serialized channel offsets")
            return
        if kind not in (1, 2):
            raise inp.error(f"unknown channel state handle type {kind}", at)
    inp.read_int("subtask index")
    inp.read_int("gate or partition index")
    inp.read_int("channel or subpartition index")
    for _ in range(inp.read_length("number of channel state offsets", 8)):
        inp.read_long("channel state offset")
    inp.read_long("state size")
    read_stream_handle(inp)
