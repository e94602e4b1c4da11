"""Canonical keyed-state entries of the commonest serializer layouts, decoded straight from a window's bytes.

`FullSnapshotAsyncWriter` (Flink 1.8 to 2.3) writes each entry as `int len, key, int len, value`; the key is
RocksDB's composite key (`SerializedCompositeKeyBuilder`: key-group prefix, key, namespace, a map's user key), the
value the state's serializer's bytes (`ListDelimitedSerializer` for a list, `bool isNull, value` for a map entry).
`KeyGroupsReader` decodes an entry through `DataInput` views and the serializers' `Decoder`s, which costs some
objects and a dozen calls per entry. For a state whose key, namespace and value serializers are all among those
below (Strings, the fixed-width primitives, booleans, enums, `VoidNamespace`, `TimeWindow`, tuples, TTL's
`TtlValue` and POJOs of them; lists and maps of them; timers of such keys and namespaces), `entry_reader` makes one
function reading an entry from positions in the buffer instead: each field a `struct` or a slice, no object per
entry but the row.

It decodes only what it can decode exactly as the general path does, and hands anything else back (`FALLBACK`):
a string longer than two varint bytes or not ASCII, a POJO that is null or a subclass, an enum ordinal outside the
constants, a flag byte other than 0 or 1, a field running past its entry's end, an entry whose parts do not end
where its lengths say, a timer with a value.
The caller then reads that entry the general way, from the same position, so every value and every error is the
general path's (tests/unit/savepoint/test_keyed_layouts.py compares both on every entry).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from splitaudit.savepoint.typeserializers import (
    BOOLEAN,
    DOUBLE,
    ENUM,
    FLOAT,
    INT,
    LIST,
    LONG,
    MAP,
    POJO,
    POJO_NO_SUBCLASS,
    SHORT,
    STRING,
    TIME_WINDOW,
    TIMER,
    TTL,
    TUPLE,
    VOID_NAMESPACE,
    SerializerSnapshot,
)

LIST_DELIMITER = ord(",")  # ListDelimitedSerializer
READ = "read"  # KeyedStateEntry.status of an entry decoded whole


class FallbackError(Exception):
    """An entry this module does not decode: the general path reads it."""


# What a field reader raises on bytes it does not decode: its own refusal, a read past the buffer (an index or
# `struct`), or a slice that is not ASCII (UnicodeDecodeError, a ValueError).
FALLBACK = (FallbackError, IndexError, ValueError, struct.error)

# A field: (buffer, position) -> (value, position after it). A row: (buffer, key group, key start past the prefix,
# key end, value start, value end) -> the entry's `EntryRow`.
FieldReader = Callable[[memoryview, int], tuple[Any, int]]
RowReader = Callable[[memoryview, int, int, int, int, int], tuple[Any, ...]]
R = TypeVar("R")

_INT, _LONG = struct.Struct(">i"), struct.Struct(">q")
SIGN_BIT = -(1 << 63)  # flipped in a timer's timestamp (`TimerSerializer`), so that its bytes sort as numbers
# The fixed-width primitives: struct format (big-endian, as `DataOutputStream` writes them) and width.
_FIXED = {LONG: "q", INT: "i", SHORT: "h", DOUBLE: "d", FLOAT: "f"}


def _string(buf: memoryview, pos: int) -> tuple[str | None, int]:
    """`StringValue.readString` of an ASCII string of under 16,383 characters (the length + 1 in one or two
    varint bytes; each character one byte below 0x80, so the string is the slice itself); null as None."""
    n = buf[pos]
    pos += 1
    if n >= 0x80:
        high = buf[pos]
        if high >= 0x80:
            raise FallbackError
        n = n & 0x7F | high << 7
        pos += 1
    if not n:
        return None, pos
    end = pos + n - 1
    return str(buf[pos:end], "ascii"), end


def _void_namespace(buf: memoryview, pos: int) -> tuple[None, int]:
    """`VoidNamespaceSerializer`: one byte, 0."""
    if buf[pos]:
        raise FallbackError
    return None, pos + 1


def _boolean(buf: memoryview, pos: int) -> tuple[bool, int]:
    """`BooleanSerializer`: one byte, 0 or 1."""
    flag = buf[pos]
    if flag > 1:
        raise FallbackError
    return flag == 1, pos + 1


def _fixed(code: str) -> FieldReader:
    """A fixed-width primitive of `struct` format `code`."""
    unpack = struct.Struct(">" + code).unpack_from
    width = struct.calcsize(">" + code)

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        return unpack(buf, pos)[0], pos + width

    return read


def _enum(names: tuple[str, ...]) -> FieldReader:
    """`EnumSerializer`: `int ordinal` into the constants the snapshot lists; the constant's name."""
    unpack = _INT.unpack_from

    def read(buf: memoryview, pos: int) -> tuple[str, int]:
        ordinal: int = unpack(buf, pos)[0]
        if not 0 <= ordinal < len(names):
            raise FallbackError
        return names[ordinal], pos + 4

    return read


def _struct(names: tuple[str, ...], readers: list[FieldReader]) -> FieldReader:
    """Fields one after the other, none nullable (`TupleSerializer`, `TimeWindow.Serializer`, TTL's
    `TtlSerializer`): the dict of their names."""
    fields = list(zip(names, readers, strict=True))

    def read(buf: memoryview, pos: int) -> tuple[dict[str, Any], int]:
        value: dict[str, Any] = {}
        for name, reader in fields:
            value[name], pos = reader(buf, pos)
        return value, pos

    return read


def _pojo(snapshot: SerializerSnapshot) -> FieldReader | None:
    """`PojoSerializer` of an instance of the POJO's own class (flags `NO_SUBCLASS`): per field `bool isNull`,
    then its value; as the dict of field names `typeserializers._pojo_decoder` makes."""
    names = snapshot.names
    readers = [field_reader(child) for child in snapshot.nested[: len(names)]]
    if len(readers) < len(names) or any(reader is None for reader in readers):
        return None
    fields = list(zip(names, readers, strict=True))

    def read(buf: memoryview, pos: int) -> tuple[dict[str, Any], int]:
        if buf[pos] != POJO_NO_SUBCLASS:
            raise FallbackError
        pos += 1
        value: dict[str, Any] = {}
        for name, reader in fields:
            is_null = buf[pos]
            if is_null:
                if is_null > 1:
                    raise FallbackError
                value[name] = None
                pos += 1
            else:
                value[name], pos = reader(buf, pos + 1)  # type: ignore[misc]  # None readers are refused above
        return value, pos

    return read


@dataclass(frozen=True)
class Layouts(Generic[R]):
    """What one family of decoders makes of each field layout this module knows (a reader of one value here; of
    a run's values in `audit/checks/keyed_columns.py`), and which of them a serializer is (`reader`)."""

    string: R
    void_namespace: R
    boolean: R
    fixed: Callable[[str], R | None]  # by the serializer snapshot's class: None for one not fixed-width
    pojo: Callable[[SerializerSnapshot], R | None]  # None for a POJO with a field of no known layout
    enum: Callable[[tuple[str, ...]], R]  # by the constants' names
    struct: Callable[[tuple[str, ...], list[R]], R]  # by the fields' names and readers

    def reader(self, snapshot: SerializerSnapshot | None) -> R | None:
        """The reader of a value of this serializer, or None when it is none of the layouts."""
        if snapshot is None:
            return None
        kind = snapshot.snapshot_class
        if kind == STRING:
            return self.string
        if kind == VOID_NAMESPACE:
            return self.void_namespace
        if kind == BOOLEAN:
            return self.boolean
        if kind == POJO:
            return self.pojo(snapshot)
        if kind == ENUM and snapshot.names:
            return self.enum(snapshot.names)
        if kind == TIME_WINDOW:
            long = self.fixed(LONG)
            return None if long is None else self.struct(("start", "end"), [long, long])
        if kind in (TUPLE, TTL) and snapshot.nested:
            fields = [self.reader(child) for child in snapshot.nested]
            names = tuple(f"f{i}" for i in range(len(fields))) if kind == TUPLE else ("last_access_timestamp", "value")
            if len(fields) != len(names) or any(field is None for field in fields):
                return None
            return self.struct(names, fields)  # type: ignore[arg-type]  # None fields are refused above
        return self.fixed(kind)


# The reader of one value of a serializer, or None when this module does not decode it.
field_reader = Layouts[FieldReader](
    _string,
    _void_namespace,
    _boolean,
    lambda kind: _fixed(_FIXED[kind]) if kind in _FIXED else None,
    _pojo,
    _enum,
    _struct,
).reader


def _list_value(element: SerializerSnapshot) -> Callable[[memoryview, int, int], list[Any]] | None:
    """A list state's value: its elements separated by `,` (`ListDelimitedSerializer`). Elements of one
    fixed-width primitive are unpacked in one `struct` call per list length (formats made once per length)."""
    code = _FIXED.get(element.snapshot_class)
    if code is not None:
        width = struct.calcsize(">" + code)
        formats: dict[int, Callable[[memoryview, int], tuple[Any, ...]]] = {}

        def read_fixed(buf: memoryview, pos: int, end: int) -> list[Any]:
            count, extra = divmod(end - pos + 1, width + 1)
            if extra or not count:
                raise FallbackError
            unpack = formats.get(count)
            if unpack is None:
                unpack = formats[count] = struct.Struct(">" + code + ("B" + code) * (count - 1)).unpack_from
            values = unpack(buf, pos)
            if values[1::2].count(LIST_DELIMITER) != count - 1:
                raise FallbackError
            return list(values[::2])

        return read_fixed
    reader = field_reader(element)
    if reader is None:
        return None

    def read(buf: memoryview, pos: int, end: int) -> list[Any]:
        elements = []
        while True:
            value, pos = reader(buf, pos)
            elements.append(value)
            if pos >= end:
                if pos > end:
                    raise FallbackError
                return elements
            if buf[pos] != LIST_DELIMITER:
                raise FallbackError
            pos += 1

    return read


def entry_reader(
    name: str,
    state_type: str,
    key: SerializerSnapshot,
    namespace: SerializerSnapshot | None,
    value: SerializerSnapshot | None,
    ambiguous: bool,
) -> RowReader | None:
    """The reader of a canonical entry of state `name` (`KEYED_STATE_TYPE` `state_type`: VALUE, LIST, MAP, ...;
    TIMER for a timer state's), or None when one of its serializers is not one this module decodes, or when key
    and namespace are both variable-sized (`ambiguous`: then the composite key carries their lengths, which the
    general path reads; a timer's never does)."""
    if state_type == "TIMER":
        if value is None or value.snapshot_class != TIMER or len(value.nested) != 2:
            return None
        read_timer_key, read_timer_namespace = field_reader(value.nested[0]), field_reader(value.nested[1])
        if read_timer_key is None or read_timer_namespace is None:
            return None
        return _timer_row(name, read_timer_key, read_timer_namespace)
    read_key, read_namespace = field_reader(key), field_reader(namespace)
    if read_key is None or read_namespace is None or value is None or ambiguous:
        return None
    if state_type == "LIST":
        read_list = _list_value(value.nested[0]) if value.snapshot_class == LIST and value.nested else None
        return None if read_list is None else _list_row(name, read_key, read_namespace, read_list)
    if state_type == "MAP":
        if value.snapshot_class != MAP or len(value.nested) != 2:
            return None
        read_user_key, read_user_value = field_reader(value.nested[0]), field_reader(value.nested[1])
        if read_user_key is None or read_user_value is None:
            return None
        return _map_row(name, (read_key, read_namespace, read_user_key), read_user_value)
    read_value = field_reader(value)
    return None if read_value is None else _value_row(name, read_key, read_namespace, read_value)


def _timer_row(name: str, read_key: FieldReader, read_namespace: FieldReader) -> RowReader:
    """A timer (`TimerSerializer` in the composite key: the timestamp with its sign bit flipped, key, namespace;
    no value): the row `StateCodec.canonical_row` makes of it, the timestamp as its value."""
    unpack = _LONG.unpack_from

    def read(buf: memoryview, key_group: int, k: int, key_end: int, v: int, value_end: int) -> tuple[Any, ...]:
        timestamp = unpack(buf, k)[0] ^ SIGN_BIT
        key, k = read_key(buf, k + 8)
        namespace, k = read_namespace(buf, k)
        if k != key_end or v != value_end:
            raise FallbackError
        return name, key_group, key, namespace, None, timestamp, READ

    return read


def _value_row(name: str, read_key: FieldReader, read_namespace: FieldReader, read_value: FieldReader) -> RowReader:
    def read(buf: memoryview, key_group: int, k: int, key_end: int, v: int, value_end: int) -> tuple[Any, ...]:
        key, k = read_key(buf, k)
        namespace, k = read_namespace(buf, k)
        value, v = read_value(buf, v)
        if k != key_end or v != value_end:
            raise FallbackError
        return name, key_group, key, namespace, None, value, READ

    return read


def _list_row(
    name: str, read_key: FieldReader, read_namespace: FieldReader, read_list: Callable[[memoryview, int, int], Any]
) -> RowReader:
    def read(buf: memoryview, key_group: int, k: int, key_end: int, v: int, value_end: int) -> tuple[Any, ...]:
        key, k = read_key(buf, k)
        namespace, k = read_namespace(buf, k)
        if k != key_end or v >= value_end:  # an empty value is no list Flink writes: the general path says so
            raise FallbackError
        return name, key_group, key, namespace, None, read_list(buf, v, value_end), READ

    return read


def _map_row(name: str, key_parts: tuple[FieldReader, FieldReader, FieldReader], read_value: FieldReader) -> RowReader:
    read_key, read_namespace, read_user_key = key_parts

    def read(buf: memoryview, key_group: int, k: int, key_end: int, v: int, value_end: int) -> tuple[Any, ...]:
        key, k = read_key(buf, k)
        namespace, k = read_namespace(buf, k)
        user_key, k = read_user_key(buf, k)
        is_null = buf[v]
        if is_null:
            if is_null > 1:
                raise FallbackError
            value, v = None, v + 1
        else:
            value, v = read_value(buf, v + 1)
        if k != key_end or v != value_end:
            raise FallbackError
        return name, key_group, key, namespace, user_key, value, READ

    return read
