"""The checkpoint/savepoint `_metadata` container: `Checkpoints` header + `MetadataV2V3SerializerBase` body.

Mirrors `MetadataV2Serializer` (Flink 1.3-1.10: a legacy chain length per operator, a legacy duration and
legacy-state count per subtask, no coordinator or channel state), `MetadataV3Serializer` (Flink 1.11-1.15),
`MetadataV4Serializer` (1.16-1.20: V3 + a Java-serialized `CheckpointProperties` trailer),
`MetadataV5Serializer` (2.0: operator name and uid in clear text), `MetadataV6Serializer` (2.1-2.3: typed
channel-state handles) and tolerates `MetadataV7Serializer` (unreleased: an optional reference checkpoint id per
subtask). Layouts: splitaudit/savepoint/FORMAT.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import mmh3

from splitaudit.primitives.datainput import DataInput
from splitaudit.primitives.javaser import STREAM_MAGIC, class_name, read_java_object
from splitaudit.savepoint.handles import (
    ByteStreamStateHandle,
    KeyedStateHandle,
    OperatorStateHandle,
    read_keyed_state_handle,
    read_operator_state_handle,
    read_stream_handle,
    skip_channel_state_handle,
)

HEADER_MAGIC_NUMBER = 0x4960672D
MASTER_STATE_MAGIC_NUMBER = 0xC96B1696 - (1 << 32)  # read as a signed Java int
SUPPORTED_VERSIONS = (2, 3, 4, 5, 6, 7)
LEGACY_CHAIN_LENGTH = 1  # MetadataV2Serializer: "chain length" before Flink 1.3, always 1 since


def operator_id_from_uid(uid: str) -> str:
    """The operator id Flink derives from `.uid(uid)`: Guava murmur3_128(seed 0) of its UTF-8, as hex.

    `StreamGraphHasherV2`; equal to `OperatorID.toHexString()` (lower part bytes first).
    """
    return bytes(mmh3.hash_bytes(uid.encode("utf-8"), 0, True)).hex()


@dataclass(frozen=True)
class MasterState:
    """`MasterState` of a master hook: name, version and opaque payload."""

    name: str
    version: int
    payload: bytes


@dataclass(frozen=True)
class OperatorSubtaskState:
    """`OperatorSubtaskState` of one running subtask (channel state is only stepped over)."""

    subtask: int
    managed_operator_state: OperatorStateHandle | None
    raw_operator_state: OperatorStateHandle | None
    managed_keyed_state: KeyedStateHandle | None
    raw_keyed_state: KeyedStateHandle | None
    input_channel_handles: int
    output_channel_handles: int


@dataclass(frozen=True)
class OperatorState:
    """`OperatorState`: one operator of the job graph; `name`/`uid` are in the file from V5 (Flink 2.0)."""

    operator_id: str
    name: str | None
    uid: str | None
    parallelism: int
    max_parallelism: int
    coordinator_state: ByteStreamStateHandle | None
    subtask_states: tuple[OperatorSubtaskState, ...]
    finished_subtasks: tuple[int, ...]
    fully_finished: bool


@dataclass(frozen=True)
class CheckpointProperties:
    """What the V4+ trailer (`CheckpointProperties`, Java serialization) says about the snapshot."""

    kind: str  # "savepoint" | "checkpoint"
    savepoint_format: str | None  # "CANONICAL" | "NATIVE" for savepoints


@dataclass(frozen=True)
class CheckpointMetadata:
    """A whole `_metadata` file."""

    path: str
    version: int
    checkpoint_id: int
    master_states: tuple[MasterState, ...]
    operators: tuple[OperatorState, ...]
    properties: CheckpointProperties | None  # None for V2 and V3, which have no trailer


def read_metadata(data: bytes, path: str) -> CheckpointMetadata:
    """Parse `_metadata` bytes; any inconsistency is an `InputError` naming `path` and the byte offset."""
    inp = DataInput(data, path)
    magic = inp.read_int("magic number")
    if magic != HEADER_MAGIC_NUMBER:
        raise inp.error(f"not a Flink checkpoint/savepoint metadata file (magic {magic & 0xFFFFFFFF:#010x})", 0)
    version_at = inp.tell()
    version = inp.read_int("metadata version")
    if version not in SUPPORTED_VERSIONS:
        raise inp.error(
            f"metadata version {version} is not supported (this reader knows versions 2 to 7, "
            "written by Flink 1.8 to 2.3)",
            version_at,
        )
    checkpoint_id = inp.read_long("checkpoint id")
    if checkpoint_id < 0:
        raise inp.error(f"negative checkpoint id {checkpoint_id}", 8)
    master_states = tuple(_read_master_state(inp) for _ in range(inp.read_length("number of master states", 8)))
    # An operator entry is at least 16 (id) + 4 + 4 + 1 (coordinator tag) + 4 (subtask count) bytes.
    operators = tuple(
        _read_operator_state(inp, version) for _ in range(inp.read_length("number of operator states", 29))
    )
    properties = None if version <= 3 else _read_properties(inp)
    inp.expect_end("the metadata")
    return CheckpointMetadata(path, version, checkpoint_id, master_states, operators, properties)


def _read_master_state(inp: DataInput) -> MasterState:
    at = inp.tell()
    if inp.read_int("master state magic") != MASTER_STATE_MAGIC_NUMBER:
        raise inp.error("bad master state magic number", at)
    block = inp.sub(inp.read_length("master state length"), "master state")
    version = block.read_int("master state version")
    name = block.read_utf("master state name")
    payload = block.read_length_prefixed("master state payload")
    block.expect_end("the master state")
    return MasterState(name, version, payload)


def _read_operator_state(inp: DataInput, version: int) -> OperatorState:
    name: str | None = None
    uid: str | None = None
    if version >= 5:
        name = inp.read_utf("operator name") or None
        uid = inp.read_utf("operator uid") or None
    operator_id = inp.read_bytes(16, "operator id").hex()
    parallelism_at = inp.tell()
    parallelism = inp.read_int("parallelism")
    max_parallelism = inp.read_int("max parallelism")
    if not 0 < parallelism <= max_parallelism:
        raise inp.error(
            f"operator {operator_id}: parallelism {parallelism} / max parallelism {max_parallelism} is impossible",
            parallelism_at,
        )
    if version == 2:
        chain_at = inp.tell()
        if (chain := inp.read_int("legacy chain length")) != LEGACY_CHAIN_LENGTH:
            raise inp.error(f"operator {operator_id}: legacy chain length {chain} (Flink 1.3+ write 1)", chain_at)
    coordinator_at = inp.tell()
    coordinator = None if version == 2 else read_stream_handle(inp)
    if coordinator is not None and not isinstance(coordinator, ByteStreamStateHandle):
        # deserializeAndCheckByteStreamStateHandle: coordinator state is always inline.
        raise inp.error(f"operator {operator_id}: coordinator state is not an inline byte handle", coordinator_at)
    count_at = inp.tell()
    count = inp.read_int("number of subtask states")
    if count == -1:  # FullyFinishedOperatorState
        if coordinator is not None:
            raise inp.error(f"operator {operator_id}: fully finished but has coordinator state", count_at)
        return OperatorState(operator_id, name, uid, parallelism, max_parallelism, None, (), (), True)
    if count < 0 or count > parallelism:
        raise inp.error(f"operator {operator_id}: {count} subtask states for parallelism {parallelism}", count_at)
    subtasks = []
    finished = []
    for _ in range(count):
        index_at = inp.tell()
        index = inp.read_int("subtask index")
        subtask = index if index >= 0 else -index - 1
        if subtask >= parallelism:
            raise inp.error(f"operator {operator_id}: subtask {subtask} >= parallelism {parallelism}", index_at)
        if index < 0:
            finished.append(subtask)
        else:
            subtasks.append(_read_subtask_state(inp, index, version))
    return OperatorState(
        operator_id,
        name,
        uid,
        parallelism,
        max_parallelism,
        coordinator,
        tuple(subtasks),
        tuple(finished),
        False,
    )


def _read_subtask_state(inp: DataInput, subtask: int, version: int) -> OperatorSubtaskState:
    if version == 2:  # MetadataV2Serializer.deserializeSubtaskState: two unused legacy fields first
        inp.read_long("legacy duration")
        legacy_at = inp.tell()
        if (legacy := inp.read_int("number of legacy states")) != 0:
            raise inp.error(f"{legacy} legacy states (Flink <= 1.1's 'Checkpointed' interface) in a subtask", legacy_at)
    managed = _read_optional_operator_handle(inp, "managed")
    raw = _read_optional_operator_handle(inp, "raw")
    managed_keyed = read_keyed_state_handle(inp)
    raw_keyed = read_keyed_state_handle(inp)
    channels = [0, 0]
    for index, what in enumerate(("input", "output") if version >= 3 else ()):  # V2 has no channel state
        # A channel handle is at least 4 ints, a long and a delegate tag.
        count = inp.read_length(f"number of {what} channel state handles", 25)
        for _ in range(count):
            skip_channel_state_handle(inp, typed=version >= 6)
        channels[index] = count
    if version >= 7 and inp.read_bool("reference checkpoint flag"):
        inp.read_long("reference checkpoint id")
    return OperatorSubtaskState(subtask, managed, raw, managed_keyed, raw_keyed, channels[0], channels[1])


def _read_optional_operator_handle(inp: DataInput, what: str) -> OperatorStateHandle | None:
    """An `int` presence flag (0/1) then the handle: the flag is an int, unlike keyed handles."""
    at = inp.tell()
    flag = inp.read_int(f"has {what} operator state")
    if flag == 0:
        return None
    if flag != 1:
        raise inp.error(f"has {what} operator state flag is {flag}, not 0 or 1", at)
    return read_operator_state_handle(inp)


def _read_properties(inp: DataInput) -> CheckpointProperties:
    """The V4+ trailer: `ObjectOutputStream.writeObject(CheckpointProperties)`, read as data.

    Only `checkpointType` matters: a `SavepointType` (with `formatType` CANONICAL/NATIVE) or a
    `CheckpointType`. A missing, truncated or foreign trailer is corruption.
    """
    at = inp.tell()
    if inp.remaining() < len(STREAM_MAGIC) or inp.read_bytes(4, "trailer") != STREAM_MAGIC:
        raise inp.error("missing CheckpointProperties trailer (Java serialization stream)", at)
    inp.seek(at)
    properties = read_java_object(inp, "the CheckpointProperties trailer")
    if class_name(properties) != "org.apache.flink.runtime.checkpoint.CheckpointProperties":
        raise inp.error(f"the trailer holds a {class_name(properties)}, not CheckpointProperties", at)
    checkpoint_type = getattr(properties, "checkpointType", None)
    type_class = class_name(checkpoint_type)
    if type_class == "org.apache.flink.runtime.checkpoint.SavepointType":
        format_type = getattr(getattr(checkpoint_type, "formatType", None), "constant", None)
        if format_type not in ("CANONICAL", "NATIVE"):
            raise inp.error(f"unknown savepoint format {format_type!r} in the trailer", at)
        return CheckpointProperties("savepoint", str(format_type))
    if type_class == "org.apache.flink.runtime.checkpoint.CheckpointType":
        return CheckpointProperties("checkpoint", None)
    raise inp.error(f"unknown snapshot type {type_class!r} in the trailer", at)
