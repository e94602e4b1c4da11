"""`StateMetaInfoSnapshot`s as `StateMetaInfoSnapshotReadersWriters` writes them (meta-info versions 6 and 7).

The same layout describes the states of an operator-state stream (`OperatorBackendSerializationProxy`) and of a
keyed-state stream (`KeyedBackendSerializationProxy`): `UTF name, int backendStateType (0 KEY_VALUE, 1 OPERATOR,
2 BROADCAST, 3 PRIORITY_QUEUE), int n x (UTF key, UTF value) options, int n x (UTF key, TypeSerializerSnapshot)`.
Unchanged from Flink 1.17 to 2.3. Layouts: splitaudit/savepoint/FORMAT.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.typeserializers import NO_SKIPS, SerializerSnapshot, Skips, read_serializer_snapshot

BACKEND_STATE_TYPES = ("KEY_VALUE", "OPERATOR", "BROADCAST", "PRIORITY_QUEUE")


@dataclass(frozen=True)
class StateMetaInfoSnapshot:
    """`StateMetaInfoSnapshot` (meta-info v6/v7): a state's name, backend type, options and serializers."""

    name: str
    backend_state_type: str
    options: tuple[tuple[str, str], ...]
    serializers: tuple[SerializerSnapshot, ...]

    def option(self, key: str) -> str | None:
        return dict(self.options).get(key)

    def serializer(self, key: str) -> SerializerSnapshot | None:
        return next((s for s in self.serializers if s.key == key), None)


def read_state_meta_info(stream: DataInput, skips: Skips = NO_SKIPS) -> tuple[StateMetaInfoSnapshot, bool]:
    """`StateMetaInfoSnapshotReadersWriters.CurrentReaderImpl`; False when a serializer snapshot's body is one
    this reader cannot step over and `skips` does not say where it ends (the section cannot be read on past it)."""
    name = stream.read_utf("state name")
    type_at = stream.tell()
    backend_type = stream.read_int("backend state type")
    if not 0 <= backend_type < len(BACKEND_STATE_TYPES):
        raise stream.error(f"unknown backend state type {backend_type} of state {name!r}", type_at)
    options = tuple(
        (stream.read_utf("option key"), stream.read_utf("option value"))
        for _ in range(stream.read_length("number of state options", 4))
    )
    serializers: list[SerializerSnapshot] = []
    complete = True
    for _ in range(stream.read_length("number of state serializers", 10)):
        snapshot, complete = read_serializer_snapshot(stream, stream.read_utf("serializer key"), skips)
        serializers.append(snapshot)
        if not complete:
            break
    state = StateMetaInfoSnapshot(name, BACKEND_STATE_TYPES[backend_type], options, tuple(serializers))
    return state, complete
