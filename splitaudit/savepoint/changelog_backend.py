"""The keyed state of one subtask under the changelog state backend, as `ChangelogBackendRestoreOperation` and
`ChangelogBackendLogApplier` (Flink 1.15 - 2.3) restore it: the materialized snapshot's entries, with the log of
changes since it applied in order, so the entries are the state as of the checkpoint.

A change (`AbstractStateChangeLogger`) is `byte op` (`StateChangeOperation`: 0 CLEAR, 1 SET, 2 SET_INTERNAL, 3 ADD,
4 MERGE_NS, 5 ADD_ELEMENT, 6 ADD_OR_UPDATE_ELEMENT, 7 REMOVE_ELEMENT, 8 METADATA; Flink's main branch adds 8
REMOVE_FIRST_ELEMENT and moves METADATA to 9, told apart by length). METADATA:
`int metaInfoVersion, StateMetaInfoSnapshot` (as in a keyed snapshot), for key/value states `bool ttl, [Java
serialized StateTtlConfig], bool hasDefault, [default value]` (`KvStateChangeLoggerImpl.writeDefaultValueAndTtl`),
then `short stateId, byte backendStateType`. Any other: `short stateId`, for key/value states the key and
namespace as their serializers write them, then what the operation carries (the appliers of
`state/changelog/restore/`): SET, SET_INTERNAL: the value (a list or map state's whole list or map); ADD: a list to
append or a map to put; ADD_ELEMENT: a list element, a map entry (key, value), or timers (`int n`, n elements);
ADD_OR_UPDATE_ELEMENT: a map entry; REMOVE_ELEMENT: a map key or a timer; MERGE_NS: `namespace target, int n, n
namespaces`. Changes of key groups outside the handle's range are passed over, as Flink does.

The log is read first and its effect kept per state, key and namespace (memory grows with the log, not with the
materialized state, which is streamed); the materialized entries then come through changed, dropped or as they
were, and what the log alone holds follows each key group's. The log names no key serializer: it is the
materialized snapshot's, or the one a timer state's `TimerSerializer` nests; without either a change's key is
found as the bytes before the only end that lets the namespace and the rest of the change read exactly. What cannot
be applied without the job's code (a reducing or aggregating state's merged namespaces) or decoded is an `unread`
entry saying so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.primitives.javaser import read_java_object
from splitaudit.savepoint.changelog_handles import ChangelogStateBackendHandleImpl
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.keyed import (
    READ,
    UNREAD,
    KeyedBackendHeader,
    KeyedStateEntry,
    StateCodec,
    Undecoded,
    raw_status,
)
from splitaudit.savepoint.metainfo import BACKEND_STATE_TYPES, StateMetaInfoSnapshot, read_state_meta_info
from splitaudit.savepoint.state_change_format import state_changes
from splitaudit.savepoint.typeserializers import TIMER, Decoder, Resolver, SerializerSnapshot

OPERATIONS = (
    "CLEAR",
    "SET",
    "SET_INTERNAL",
    "ADD",
    "MERGE_NS",
    "ADD_ELEMENT",
    "ADD_OR_UPDATE_ELEMENT",
    "REMOVE_ELEMENT",
    "METADATA",
    "METADATA",
)
CLEAR, SET, SET_INTERNAL, ADD, MERGE_NS, ADD_ELEMENT, ADD_OR_UPDATE_ELEMENT, REMOVE_ELEMENT = range(8)
# Released Flink (1.15 - 2.0) codes METADATA 8; Flink's main branch adds REMOVE_FIRST_ELEMENT (a timer polled) as 8,
# a change of 3 bytes (`byte op, short stateId`), and moves METADATA to 9, a change of more than 8 bytes.
METADATA, METADATA_NEXT, REMOVE_FIRST = 8, 9, -8
REMOVE_FIRST_BYTES = 3


def operation_of(change: DataInput) -> int:
    """A change's operation (`StateChangeOperation`), read from its first byte."""
    at = change.tell()
    code = change.read_unsigned_byte("state change operation")
    if code >= len(OPERATIONS):
        raise change.error(f"unknown state change operation {code}", at)
    if code == METADATA and len(change) == REMOVE_FIRST_BYTES:
        return REMOVE_FIRST
    return METADATA if code == METADATA_NEXT else code


META_INFO_VERSIONS = (6, 7)  # StateMetaInfoSnapshotReadersWriters versions of the layout metainfo.py reads
MAX_KEY_SEARCH = 4096  # the most bytes of one change searched for the end of a key no decoder knows
UNKNOWN_KEY = SerializerSnapshot("KEY_SERIALIZER", "unknown", 0)


class _Reader(Protocol):
    header: KeyedBackendHeader

    def entries(self) -> Iterator[KeyedStateEntry]: ...


@dataclass
class _Scope:
    """What the log did to one state's key and namespace: the value it set (`value`, `cleared` when it cleared it
    or replaced it whole), the list elements it appended, the map entries it put (None: removed), or why its
    effect is unknown."""

    key: Any
    namespace: Any
    cleared: bool = False
    value: Any = None
    has_value: bool = False
    appended: list[Any] = field(default_factory=list)
    puts: dict[str, tuple[Any, Any, bool]] = field(default_factory=dict)
    unread: str = ""
    consumed: bool = False


def _identity(*parts: Any) -> str:
    """A decoded key, namespace, user key or timer as a hashable identity (decoded values may be lists or dicts)."""
    return repr(parts)


class ChangelogBackendReader:
    """The entries of one `ChangelogStateBackendHandleImpl`, with `KeyGroupsReader`'s interface: `header`,
    `entries()`. `materialized_reader` opens a materialized handle (a key-group or RocksDB handle)."""

    def __init__(
        self,
        handle: ChangelogStateBackendHandleImpl,
        files: SavepointFiles,
        resolve: Resolver | None,
        materialized_reader: Callable[[Any], _Reader],
    ) -> None:
        self.handle = handle
        self.files = files
        self.resolve = resolve
        self.key_groups = range(handle.start_key_group, handle.start_key_group + handle.number_of_key_groups)
        self.materialized = [materialized_reader(h) for h in handle.materialized]
        states: dict[str, StateMetaInfoSnapshot] = {}
        key_serializer: SerializerSnapshot | None = None
        complete = True
        for reader in self.materialized:
            key_serializer = reader.header.key_serializer
            states.update((state.name, state) for state in reader.header.states)
            complete = complete and reader.header.meta_complete
        self._states_by_id: dict[int, StateMetaInfoSnapshot] = {}
        self._changes: list[tuple[int, DataInput]] = []
        for log in handle.non_materialized:
            for key_group, change in state_changes(log, files):
                if operation_of(change) == METADATA:
                    state, state_complete = self._metadata(change)
                    states[state.name] = state
                    complete = complete and state_complete
                elif key_group in self.key_groups:
                    change.seek(0)
                    self._changes.append((key_group, change))
        if key_serializer is None:  # a timer state's TimerSerializer nests the key serializer
            timers = [
                s.serializer("VALUE_SERIALIZER") for s in states.values() if s.backend_state_type == "PRIORITY_QUEUE"
            ]
            nested = [t.nested[0] for t in timers if t is not None and t.snapshot_class == TIMER and len(t.nested) == 2]
            key_serializer = nested[0] if nested else UNKNOWN_KEY
        self.header = KeyedBackendHeader(6, False, key_serializer, tuple(states.values()), complete, len(states))
        self._codecs = {name: StateCodec(state, key_serializer, resolve) for name, state in states.items()}

    def _metadata(self, change: DataInput) -> tuple[StateMetaInfoSnapshot, bool]:
        """A METADATA change: the state's meta info, registered under its id (the change's last 3 bytes: `short
        stateId, byte backendStateType`, so found even when the meta info cannot be read to its end)."""
        at = change.tell()
        if len(change) < 8:
            raise change.error("a METADATA state change shorter than its fixed fields", at)
        version_at = change.tell()
        version = change.read_int("state meta info version")
        if version not in META_INFO_VERSIONS:
            raise change.error(f"state meta info version {version} is not supported (6, 7)", version_at)
        state, complete = read_state_meta_info(change)
        if complete and state.backend_state_type == "KEY_VALUE":
            if change.read_bool("TTL enabled flag"):
                read_java_object(change, f"StateTtlConfig of state {state.name!r}")
            if change.read_bool("default value flag"):
                value = StateCodec(state, UNKNOWN_KEY, self.resolve).value
                if value is None:
                    change.seek(len(change) - 3)
                else:
                    value(change)
        tail_at = len(change) - 3
        if complete and change.tell() != tail_at:
            raise change.error(f"METADATA of state {state.name!r}: {tail_at - change.tell()} bytes left over", at)
        change.seek(tail_at)
        state_id = change.read_short("state id")
        type_at = change.tell()
        backend_type = change.read_unsigned_byte("backend state type")
        if backend_type >= len(BACKEND_STATE_TYPES) or BACKEND_STATE_TYPES[backend_type] != state.backend_state_type:
            raise change.error(f"METADATA of state {state.name!r}: backend state type {backend_type}", type_at)
        self._states_by_id[state_id] = state
        return state, complete

    def entries(self) -> Iterator[KeyedStateEntry]:
        """Every entry as of the checkpoint, key group by key group: the materialized ones as the log left them,
        then, per key group, what only the log holds."""
        scopes, timers, unread = self._apply()
        pending = sorted({key_group for key_group, _ in scopes} | {key_group for key_group, _ in timers} | set(unread))
        for reader in self.materialized:
            for entry in reader.entries():
                while pending and pending[0] < entry.key_group:
                    yield from self._log_only(pending.pop(0), scopes, timers, unread)
                yield from self._changed(entry, scopes, timers)
        while pending:
            yield from self._log_only(pending.pop(0), scopes, timers, unread)

    def _apply(
        self,
    ) -> tuple[
        dict[tuple[int, str], dict[str, _Scope]],
        dict[tuple[int, str], dict[str, tuple[Any, bool]]],
        dict[int, list[KeyedStateEntry]],
    ]:
        """The log's effect: per (key group, state) its scopes and timers (present or removed), and the unread
        entries standing for changes that could not be applied."""
        scopes: dict[tuple[int, str], dict[str, _Scope]] = {}
        timers: dict[tuple[int, str], dict[str, tuple[Any, bool]]] = {}
        unread: dict[int, list[KeyedStateEntry]] = {}
        for key_group, change in self._changes:
            operation = operation_of(change)
            id_at = change.tell()
            state_id = change.read_short("state id")
            if state_id not in self._states_by_id:
                raise change.error(f"state id {state_id} has no METADATA before it in the log", id_at)
            state = self._states_by_id[state_id]
            codec = self._codecs[state.name]
            if codec.is_timer:
                problem = self._apply_timer(codec, operation, change, timers.setdefault((key_group, state.name), {}))
            else:
                problem = self._apply_kv(codec, operation, change, scopes.setdefault((key_group, state.name), {}))
            if problem:
                why = f"a {_name(operation)} change of state {state.name!r} in key group {key_group}: {problem}"
                unread.setdefault(key_group, []).append(
                    KeyedStateEntry(state.name, key_group, None, None, None, None, f"{UNREAD}: {why}")
                )
        return scopes, timers, unread

    def _apply_timer(
        self, codec: StateCodec, operation: int, change: DataInput, timers: dict[str, tuple[Any, bool]]
    ) -> str:
        """ADD_ELEMENT (`int n`, n timers) or REMOVE_ELEMENT (one) of a priority-queue state; "" when applied."""
        read_timer = codec.value
        if operation == REMOVE_FIRST:
            return "which element a poll removed is not in the change (Flink's applier refuses it too)"
        if operation not in (ADD_ELEMENT, REMOVE_ELEMENT):
            raise change.error(f"operation {_name(operation)} does not apply to timer state {codec.name!r}")
        if read_timer is None:
            return f"serializer {_class(codec.value_serializer)} is unknown"
        count = change.read_length("number of timers", 1) if operation == ADD_ELEMENT else 1
        for _ in range(count):
            timer = read_timer(change)
            timers[_identity(timer["timestamp"], timer["key"], timer["namespace"])] = (timer, operation == ADD_ELEMENT)
        change.expect_end(f"{_name(operation)} change of state {codec.name!r}")
        return ""

    def _apply_kv(self, codec: StateCodec, operation: int, change: DataInput, scopes: dict[str, _Scope]) -> str:
        """One change of a key/value state, applied to its scope; "" when applied, else why not."""
        if operation in (REMOVE_FIRST, METADATA):
            raise change.error(f"operation {_name(operation)} does not apply to state {codec.name!r}")
        scoped = self._scope(codec, operation, change)
        if isinstance(scoped, str):
            return scoped
        key, namespace, payload = scoped
        scope = scopes.setdefault(_identity(key, namespace), _Scope(key, namespace))
        if operation == CLEAR:
            scope.cleared, scope.has_value, scope.value, scope.appended, scope.puts = True, False, None, [], {}
            scope.unread = ""
        elif operation == MERGE_NS:
            return self._merge(codec, payload, scope, scopes)
        elif codec.is_map:
            self._apply_map(operation, payload, scope)
        elif codec.is_list:
            if operation in (SET, SET_INTERNAL):
                scope.cleared, scope.appended = True, list(payload)
            elif operation in (ADD, ADD_ELEMENT):
                scope.appended += payload if operation == ADD else [payload]
            else:
                raise change.error(f"operation {_name(operation)} does not apply to list state {codec.name!r}")
        elif operation in (SET, SET_INTERNAL):
            scope.cleared, scope.has_value, scope.value, scope.unread = True, True, payload, ""
        else:
            raise change.error(f"operation {_name(operation)} does not apply to state {codec.name!r}")
        return ""

    def _apply_map(self, operation: int, payload: Any, scope: _Scope) -> None:
        if operation in (SET, SET_INTERNAL):
            scope.cleared, scope.puts = True, {}
        if operation in (SET, SET_INTERNAL, ADD):
            for user_key, user_value in payload:
                scope.puts[_identity(user_key)] = (user_key, user_value, True)
        elif operation in (ADD_ELEMENT, ADD_OR_UPDATE_ELEMENT):
            scope.puts[_identity(payload[0])] = (payload[0], payload[1], True)
        else:  # REMOVE_ELEMENT
            scope.puts[_identity(payload)] = (payload, None, False)

    def _merge(self, codec: StateCodec, payload: Any, target: _Scope, scopes: dict[str, _Scope]) -> str:
        """MERGE_NS: a list state's sources are appended to the target and cleared; other states merge with the
        job's reduce or aggregate function, which is code: the target is then unread."""
        target_namespace, sources = payload
        target = scopes.setdefault(_identity(target.key, target_namespace), _Scope(target.key, target_namespace))
        if not codec.is_list:
            target.unread = "namespaces merged by the job's reduce or aggregate function (code, not in the log)"
            return ""
        for namespace in sources:
            source = scopes.setdefault(_identity(target.key, namespace), _Scope(target.key, namespace))
            if not source.cleared:
                target.unread = "a merged namespace's materialized list is not at hand where the merge is applied"
            target.appended += source.appended
            source.cleared, source.appended = True, []
        return ""

    def _scope(self, codec: StateCodec, operation: int, change: DataInput) -> tuple[Any, Any, Any] | str:
        """The change's key, namespace and payload, decoded; or why they cannot be."""
        read_namespace = codec.namespace
        payload = self._payload_reader(codec, operation)
        if read_namespace is None or payload is None:
            return "its namespace or value serializer is not decoded"
        if codec.key is not None:
            key = codec.key(change)
            namespace = read_namespace(change)
            result = payload(change)
            change.expect_end(f"{_name(operation)} change of state {codec.name!r}")
            return key, namespace, result
        start = change.tell()
        unknown = (
            "the log names no key serializer"
            if codec.key_serializer is UNKNOWN_KEY
            else f"key serializer {_class(codec.key_serializer)} is not decoded"
        )
        found: list[tuple[int, Any, Any]] = []
        for end in range(start, min(len(change), start + MAX_KEY_SEARCH) + 1):
            change.seek(end)
            try:
                namespace = read_namespace(change)
                result = payload(change)
            except InputError:
                continue
            if not change.remaining():
                found.append((end, namespace, result))
                if len(found) > 1:
                    return f"{unknown} and the key's end is ambiguous"
        if not found:
            return f"{unknown} and no end of the key fits"
        end, namespace, result = found[0]
        change.seek(start)
        return Undecoded(_class(codec.key_serializer), change.read_bytes(end - start)), namespace, result

    def _payload_reader(self, codec: StateCodec, operation: int) -> Decoder | None:
        """How the operation's payload is read for this state; a payload whose serializer is not decoded is the
        rest of the change, kept as bytes (it is the change's last part); None when that is not enough."""
        if operation == CLEAR:
            return lambda change: None
        namespace = codec.namespace
        if operation == MERGE_NS:
            if namespace is None:
                return None
            return lambda c: (namespace(c), [namespace(c) for _ in range(c.read_length("number of namespaces", 1))])
        if codec.is_map and operation in (ADD_ELEMENT, ADD_OR_UPDATE_ELEMENT, REMOVE_ELEMENT):
            user_key = codec.user_key
            if user_key is None:
                return None
            if operation == REMOVE_ELEMENT:
                return user_key
            nested = codec.value_serializer.nested if codec.value_serializer is not None else ()
            user_value = codec.user_value or _rest(nested[1] if len(nested) == 2 else None)
            return lambda change: (user_key(change), user_value(change))
        if operation == ADD_ELEMENT and codec.is_list:
            nested = codec.value_serializer.nested if codec.value_serializer is not None else ()
            return codec.element or _rest(nested[0] if nested else None)
        if codec.value is None and (codec.is_list or codec.is_map):
            return None  # a whole list or map is applied element by element
        return codec.value or _rest(codec.value_serializer)

    def _changed(
        self,
        entry: KeyedStateEntry,
        scopes: dict[tuple[int, str], dict[str, _Scope]],
        timers: dict[tuple[int, str], dict[str, tuple[Any, bool]]],
    ) -> Iterator[KeyedStateEntry]:
        """A materialized entry as the log left it (none when the log cleared or removed it)."""
        codec = self._codecs.get(entry.state)
        if codec is None or entry.status.startswith(UNREAD):
            yield entry
            return
        if codec.is_timer:
            logged = timers.get((entry.key_group, entry.state), {})
            identity = _identity(entry.value, entry.key, entry.namespace)
            if identity in logged:
                if logged.pop(identity)[1]:
                    yield entry
                return
            yield entry
            return
        scope = scopes.get((entry.key_group, entry.state), {}).get(_identity(entry.key, entry.namespace))
        if scope is None:
            yield entry
            return
        if scope.unread:
            if not scope.consumed:
                scope.consumed = True
                yield self._unread_scope(entry.state, entry.key_group, scope)
            return
        if codec.is_map:
            identity = _identity(entry.user_key)
            if identity in scope.puts:
                user_key, user_value, present = scope.puts.pop(identity)
                if present:
                    yield _entry(entry.state, entry.key_group, scope, user_key, user_value)
            elif not scope.cleared:
                yield entry
            return
        if scope.consumed:
            return
        scope.consumed = True
        if codec.is_list:
            if scope.cleared:
                if scope.appended:
                    yield _entry(entry.state, entry.key_group, scope, None, list(scope.appended))
            elif isinstance(entry.value, list):
                yield _entry(entry.state, entry.key_group, scope, None, entry.value + scope.appended)
            else:
                yield self._unread_scope(entry.state, entry.key_group, scope, "its materialized list is not decoded")
            return
        if scope.has_value:
            yield _entry(entry.state, entry.key_group, scope, None, scope.value)
        elif not scope.cleared:
            yield entry

    def _log_only(
        self,
        key_group: int,
        scopes: dict[tuple[int, str], dict[str, _Scope]],
        timers: dict[tuple[int, str], dict[str, tuple[Any, bool]]],
        unread: dict[int, list[KeyedStateEntry]],
    ) -> Iterator[KeyedStateEntry]:
        """What only the log holds in a key group: values set, lists appended, map entries put, timers added."""
        for name, codec in self._codecs.items():
            for timer, present in timers.pop((key_group, name), {}).values():
                if present:
                    yield _entry(name, key_group, _Scope(timer["key"], timer["namespace"]), None, timer["timestamp"])
            for scope in scopes.pop((key_group, name), {}).values():
                if scope.consumed:
                    continue
                if scope.unread:
                    yield self._unread_scope(name, key_group, scope)
                elif codec.is_map:
                    for user_key, user_value, present in scope.puts.values():
                        if present:
                            yield _entry(name, key_group, scope, user_key, user_value)
                elif codec.is_list:
                    if scope.appended:
                        yield _entry(name, key_group, scope, None, list(scope.appended))
                elif scope.has_value:
                    yield _entry(name, key_group, scope, None, scope.value)
        yield from unread.pop(key_group, [])

    def _unread_scope(self, state: str, key_group: int, scope: _Scope, why: str = "") -> KeyedStateEntry:
        reason = why or scope.unread
        return KeyedStateEntry(state, key_group, scope.key, scope.namespace, None, None, f"{UNREAD}: {reason}")


def _entry(state: str, key_group: int, scope: _Scope, user_key: Any, value: Any) -> KeyedStateEntry:
    """An entry the log set, its status `raw` when a part of it is kept as bytes."""
    for part in (scope.key, scope.namespace, user_key, value):
        if isinstance(part, Undecoded):
            return KeyedStateEntry(
                state,
                key_group,
                scope.key,
                scope.namespace,
                user_key,
                value,
                raw_status(part.serializer, part.type_class),
            )
    return KeyedStateEntry(state, key_group, scope.key, scope.namespace, user_key, value, READ)


def _rest(snapshot: SerializerSnapshot | None) -> Decoder:
    """The rest of a change as the bytes of a value whose serializer is not decoded (the class it holds named when
    its snapshot names it: Kryo's type class)."""
    serializer, type_class = _class(snapshot), "" if snapshot is None else snapshot.type_class
    return lambda change: Undecoded(serializer, change.read_bytes(change.remaining()), type_class)


def _name(operation: int) -> str:
    return "REMOVE_FIRST_ELEMENT" if operation == REMOVE_FIRST else OPERATIONS[operation]


def _class(snapshot: SerializerSnapshot | None) -> str:
    return "unknown" if snapshot is None else snapshot.snapshot_class
