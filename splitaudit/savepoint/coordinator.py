"""Coordinator state of a FLIP-27 source: `SourceCoordinatorSerdeUtils` / `SourceCoordinator.toBytes`.

Stored inline in `_metadata` (a tag-1 handle named with the operator id): `int coordinatorSerdeVersion`
(VERSION_1 = 1 from Flink 1.14 to 2.3; VERSION_0 came before), `int enumeratorSerializerVersion`,
`int len`, `byte[len]` enumerator checkpoint. VERSION_1 allows no trailing bytes, VERSION_0 tolerated them.
"""

from __future__ import annotations

from dataclasses import dataclass

from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.handles import ByteStreamStateHandle

SERDE_VERSIONS = (0, 1)


@dataclass(frozen=True)
class CoordinatorState:
    """The enumerator checkpoint of a source coordinator; `payload_offset` is its position in `_metadata`."""

    serde_version: int
    serializer_version: int
    payload: bytes
    payload_offset: int


def read_coordinator_state(handle: ByteStreamStateHandle, path: str) -> CoordinatorState:
    inp = DataInput(handle.data, path, handle.data_offset)
    serde_version = inp.read_int("coordinator serde version")
    if serde_version not in SERDE_VERSIONS:
        raise inp.error(f"coordinator serde version {serde_version} is not supported (0 or 1)", 0)
    serializer_version = inp.read_int("enumerator serializer version")
    length = inp.read_length("enumerator checkpoint length")
    payload_offset = inp.offset()
    payload = inp.read_bytes(length, "enumerator checkpoint")
    if serde_version == 1:
        inp.expect_end("the enumerator checkpoint")
    return CoordinatorState(serde_version, serializer_version, payload, payload_offset)
