"""The `keyed` table's columns for a run of canonical entries, decoded a run at a time (numpy over the window's
bytes, Arrow arrays out) instead of an entry at a time.

`KeyGroupsReader.row_runs` hands a state's entries to the `RunReader` this module makes for it (`run_reader`),
for the layouts `savepoint.keyed_layouts` reads straight from the bytes (`Layouts`): String, `long`, `int`, `short`,
`boolean` and enum keys, values, map keys and fields, `VoidNamespace` and `TimeWindow` namespaces, tuples, TTL's
`TtlValue` and POJOs of those, lists of the fixed-width integers, maps, and timers. A run is every entry of the
state from the window's position to the state's last in the key group (or to the window's end): one Python loop
steps over their lengths (`_walk`); every other step is a numpy operation over the whole run, and each column is
its JSON text as `rows.json_texts` makes it (a string in quotes, a number's digits, a POJO, tuple or window as an
object of its fields in order, `null` where the general path gives None).

It decodes only what it can decode as the entry-at-a-time path does, byte for byte, and hands the rest back: an
entry this module does not decode (a string with a character JSON escapes or one that is not ASCII, a POJO
subclass or null field, an enum ordinal outside the constants, a flag byte other than 0 or 1, parts that do not
end where the entry's lengths say) is read by the entry-at-a-time readers in the run (`keyed_layouts`, then the
general path), and its row replaces that entry's in the columns; the run ends before an entry whose framing or
key-group prefix is wrong, or that the general path fails on, so that entry's error is the general path's own
(tests/unit/audit/test_keyed_columns.py compares both paths on every entry of every canonical snapshot of the
corpora).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from splitaudit.audit.checks.rows import json_texts
from splitaudit.errors import InputError
from splitaudit.savepoint.keyed import SHORT_RUN
from splitaudit.savepoint.keyed_layouts import FALLBACK, LIST_DELIMITER, READ, SIGN_BIT, Layouts, RowReader
from splitaudit.savepoint.typeserializers import (
    INT,
    LIST,
    LONG,
    MAP,
    POJO_NO_SUBCLASS,
    SHORT,
    SerializerSnapshot,
)

if TYPE_CHECKING:
    from splitaudit.primitives.datainput import DataInput
    from splitaudit.savepoint.keyed import EntryRow, StateCodec

_INT = struct.Struct(">i")
# The fewest entries read as a run; fewer are read one at a time (`keyed_layouts`). A run costs about 100-150 us
# whatever its length (some thirty numpy and Arrow calls) and 0.45-0.65 us per entry, one at a time 1.4-2.6 us per
# entry (with the columns): even at about 64 entries (String, list, POJO and map states, measured).
RUN_ENTRIES = 64
FIRST_BIT = 0x80  # the key-group prefix's first bit: the state's last entry in the key group
QUOTE, BACKSLASH = ord('"'), ord("\\")
# A field of a run: (window bytes, positions, the entries' ends) -> (JSON texts, positions after it, refused).
Positions = np.ndarray
Field = Callable[[np.ndarray, Positions, Positions], tuple[pa.Array, Positions, np.ndarray]]


@dataclass(frozen=True)
class ColumnRun:
    """Rows of one state in one key group, column by column: the `keyed` table's state, key group, key,
    namespace, user key, value (JSON text) and status, `len()` rows long."""

    state: str
    key_group: int
    key: pa.Array
    namespace: pa.Array
    user_key: pa.Array
    value: pa.Array
    status: pa.Array

    def __len__(self) -> int:
        return len(self.key)

    def columns(self) -> list[pa.Array]:
        """Its key, namespace, user key, value and status columns."""
        return [self.key, self.namespace, self.user_key, self.value, self.status]


# What `KeyGroupsReader.row_runs` calls for a run: (the window's decoder at the run's first entry, key group,
# key-group prefix bytes, the general path's row of the entry at a position) -> (the run's rows or None, the
# first byte of the state's last entry's key when the run read it, else -1), the decoder positioned after the
# last entry read.
RunReader = Callable[["DataInput", int, int, Callable[[int], "EntryRow"]], tuple[ColumnRun | None, int]]


def run_reader(codec: StateCodec) -> RunReader | None:
    """The run reader of a state (`StateCodec`), or None when one of its serializers is not one this module
    decodes (its entries are then read one at a time)."""
    fast = codec.fast
    if fast is None:  # keyed_layouts decodes no entry of it: neither does this module
        return None
    if codec.is_timer:  # TimerSerializer's timestamp, key and namespace in the composite key, no value
        timer = codec.value_serializer
        assert timer is not None  # keyed_layouts takes a timer with its serializer, of two nested ones
        timer_key, timer_namespace = field(timer.nested[0]), field(timer.nested[1])
        if timer_key is None or timer_namespace is None:
            return None
        return _Run(codec.name, [_timestamp, timer_key, timer_namespace], None, fast).read
    key, namespace = field(codec.key_serializer), field(codec.namespace_serializer)
    if key is None or namespace is None:
        return None
    value_snapshot = codec.value_serializer
    assert value_snapshot is not None  # codec.fast is made only with one
    key_fields = [key, namespace]
    value: Field | None
    if codec.type == "LIST":
        value = _list(value_snapshot.nested[0]) if value_snapshot.snapshot_class == LIST else None
    elif codec.type == "MAP":
        if value_snapshot.snapshot_class != MAP or len(value_snapshot.nested) != 2:
            return None
        user_key, user_value = field(value_snapshot.nested[0]), field(value_snapshot.nested[1])
        if user_key is None or user_value is None:
            return None
        key_fields.append(user_key)
        value = _nullable(user_value)
    else:
        value = field(value_snapshot)
    if value is None:
        return None
    return _Run(codec.name, key_fields, value, fast).read


# The fixed-width integers: their numpy type (big-endian, as `DataOutputStream` writes them). Floating point is
# left to the entry-at-a-time path: Python's JSON text of a float is its `repr`, which Arrow does not reproduce.
_LONG, _INT32 = np.dtype(">i8"), np.dtype(">i4")
_FIXED: dict[str, np.dtype[Any]] = {LONG: _LONG, INT: _INT32, SHORT: np.dtype(">i2")}


def _take(u8: np.ndarray, at: Positions) -> np.ndarray:
    """The bytes at positions `at` (those past the window clipped: every field checks its end)."""
    return u8.take(at, mode="clip").astype(np.int64)


def _string(u8: np.ndarray, at: Positions, limit: Positions) -> tuple[pa.Array, Positions, np.ndarray]:
    """`StringValue.readString` of ASCII strings whose length + 1 takes one or two varint bytes (null as JSON
    null), each as JSON text: the bytes in quotes. A string with a byte JSON escapes (a quote, a backslash, a
    control character) or outside ASCII is refused."""
    low = _take(u8, at)
    two = low >= 0x80
    high = _take(u8, at + 1)
    n = np.where(two, (low & 0x7F) | (high << 7), low)
    start = at + 1 + two
    null = n == 0
    length = np.maximum(n - 1, 0)
    end = start + length
    refused = (two & (high >= 0x80)) | (end > limit)
    length[refused | null] = 0
    return _quoted(u8, start, length, null, refused), end, refused


def _quoted(u8: np.ndarray, start: Positions, length: Positions, null: np.ndarray, refused: np.ndarray) -> pa.Array:
    """The strings at `start` of `length` bytes as JSON text (in quotes; null where `null`); `refused` is set
    where one holds a byte that JSON text would escape."""
    count = len(start)
    size = np.where(null, 0, length + 2)
    offsets = np.zeros(count + 1, np.int64)
    np.cumsum(size, out=offsets[1:])
    total = int(offsets[-1])
    data = u8.take(np.repeat(start - offsets[:-1] - 1, size) + np.arange(total), mode="clip")
    escaped = (data < 0x20) | (data > 0x7E) | (data == QUOTE) | (data == BACKSLASH)
    opening, closing = offsets[:-1][~null], offsets[1:][~null] - 1
    data[opening] = QUOTE
    data[closing] = QUOTE
    escaped[opening] = False
    escaped[closing] = False
    if escaped.any():
        counted = np.zeros(total + 1, np.int64)
        np.cumsum(escaped, out=counted[1:])
        refused |= counted[offsets[1:]] > counted[offsets[:-1]]
    validity = None if not null.any() else pa.py_buffer(np.packbits(~null, bitorder="little"))
    return pa.StringArray.from_buffers(
        count, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data), validity, int(null.sum())
    )


def _void_namespace(u8: np.ndarray, at: Positions, limit: Positions) -> tuple[pa.Array, Positions, np.ndarray]:
    """`VoidNamespaceSerializer`: one byte, 0; JSON null."""
    return pa.nulls(len(at), pa.string()), at + 1, (_take(u8, at) != 0) | (at + 1 > limit)


def _boolean(u8: np.ndarray, at: Positions, limit: Positions) -> tuple[pa.Array, Positions, np.ndarray]:
    """`BooleanSerializer`: one byte, 0 or 1; `false` or `true`."""
    flag = _take(u8, at)
    return pa.array(flag == 1).cast(pa.string()), at + 1, (flag > 1) | (at + 1 > limit)


def _integers(u8: np.ndarray, at: Positions, kind: np.dtype[Any]) -> np.ndarray:
    """The big-endian integers of numpy type `kind` at positions `at`, as int64."""
    spread = np.arange(kind.itemsize)
    return u8.take((at[:, None] + spread).ravel(), mode="clip").view(kind).astype(np.int64)


def _fixed(kind: np.dtype[Any]) -> Field:
    """A big-endian integer of numpy type `kind`, as its decimal digits."""
    width = kind.itemsize

    def read(u8: np.ndarray, at: Positions, limit: Positions) -> tuple[pa.Array, Positions, np.ndarray]:
        end = at + width
        return pa.array(_integers(u8, at, kind)).cast(pa.string()), end, end > limit

    return read


def _timestamp(u8: np.ndarray, at: Positions, limit: Positions) -> tuple[pa.Array, Positions, np.ndarray]:
    """A timer's timestamp: a `long` with its sign bit flipped (`TimerSerializer`), as its decimal digits."""
    end = at + 8
    values = _integers(u8, at, _LONG) ^ np.int64(SIGN_BIT)
    return pa.array(values).cast(pa.string()), end, end > limit


def _enum(names: tuple[str, ...]) -> Field:
    """`EnumSerializer`: `int ordinal` into the constants the snapshot lists, as the constant's name in quotes;
    an ordinal outside them is refused."""
    texts = pa.array([json.dumps(name) for name in names], pa.string())

    def read(u8: np.ndarray, at: Positions, limit: Positions) -> tuple[pa.Array, Positions, np.ndarray]:
        ordinal = _integers(u8, at, _INT32)
        end = at + 4
        refused = (ordinal < 0) | (ordinal >= len(names)) | (end > limit)
        return texts.take(pa.array(np.where(refused, 0, ordinal))), end, refused

    return read


def _object(keys: list[str], texts: list[pa.Array]) -> pa.Array:
    """JSON objects of fields' texts (`keys`: their names as JSON text, in order; a null text `null`)."""
    parts: list[pa.Array | str] = []
    for index, (key, text) in enumerate(zip(keys, texts, strict=True)):
        parts += [("," if index else "{") + key + ":", pc.fill_null(text, "null")]
    return pc.binary_join_element_wise(*parts, "}", "")


def _struct(names: tuple[str, ...], fields: list[Field]) -> Field:
    """Fields one after the other, none nullable (`TupleSerializer`, `TimeWindow.Serializer`, TTL's
    `TtlSerializer`), as the JSON object of their names."""
    keys = [json.dumps(name) for name in names]

    def read(u8: np.ndarray, at: Positions, limit: Positions) -> tuple[pa.Array, Positions, np.ndarray]:
        refused = np.zeros(len(at), bool)
        texts = []
        for read_field in fields:
            text, at, field_refused = read_field(u8, at, limit)
            refused |= field_refused
            texts.append(text)
        return _object(keys, texts), at, refused | (at > limit)

    return read


def _pojo(snapshot: SerializerSnapshot) -> Field | None:
    """`PojoSerializer` of instances of the POJO's own class (flags `NO_SUBCLASS`), each field present (`bool
    isNull` false, then its value), as the JSON object of its fields in order. A subclass or a null field is
    refused."""
    names = snapshot.names
    fields = [field(child) for child in snapshot.nested[: len(names)]]
    if len(fields) < len(names) or len(set(names)) < len(names) or any(f is None for f in fields):
        return None
    keys = [json.dumps(name) for name in names]  # as json_texts makes a string (ASCII, escaped)

    def read(u8: np.ndarray, at: Positions, limit: Positions) -> tuple[pa.Array, Positions, np.ndarray]:
        refused = _take(u8, at) != POJO_NO_SUBCLASS
        at = at + 1
        texts = []
        for read_field in fields:
            refused |= _take(u8, at) != 0
            text, at, field_refused = read_field(u8, at + 1, limit)  # type: ignore[misc]  # None refused above
            refused |= field_refused
            texts.append(text)
        return _object(keys, texts), at, refused | (at > limit)

    return read


def _nullable(read_value: Field) -> Field:
    """A map entry's value: `bool isNull`, then the value unless null (JSON null)."""

    def read(u8: np.ndarray, at: Positions, limit: Positions) -> tuple[pa.Array, Positions, np.ndarray]:
        flag = _take(u8, at)
        null = flag == 1
        text, end, refused = read_value(u8, at + 1, limit)
        refused = np.where(null, False, refused | (flag > 1))
        end = np.where(null, at + 1, end)
        if null.any():
            text = pc.if_else(pa.array(null), pa.nulls(len(at), pa.string()), text)
        return text, end, refused

    return read


def _list(element: SerializerSnapshot) -> Field | None:
    """A list state's value of fixed-width integers separated by `,` (`ListDelimitedSerializer`), as a JSON
    array; lists of other elements are left to the entry-at-a-time path."""
    kind = _FIXED.get(element.snapshot_class)
    if kind is None:
        return None
    width = kind.itemsize
    read_element = _fixed(kind)

    def read(u8: np.ndarray, at: Positions, limit: Positions) -> tuple[pa.Array, Positions, np.ndarray]:
        count, extra = np.divmod(limit - at + 1, width + 1)
        refused = (extra != 0) | (count <= 0)
        count[refused] = 0
        offsets = np.zeros(len(at) + 1, np.int64)
        np.cumsum(count, out=offsets[1:])
        index = np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], count)
        where = np.repeat(at, count) + index * (width + 1)
        last = np.repeat(offsets[1:] - 1, count) == np.arange(len(where))
        delimited = _take(u8, where[~last] + width) == LIST_DELIMITER
        if not delimited.all():
            refused[np.repeat(np.arange(len(at)), count)[~last][~delimited]] = True
        elements, _, _ = read_element(u8, where, where + width)
        joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), elements), ",")
        return pc.binary_join_element_wise("[", joined, "]", ""), np.where(refused, at, limit), refused

    return read


def _fixed_width(kind: str) -> Field | None:
    """The run decoder of a fixed-width integer serializer (by its snapshot's class), or None."""
    return _fixed(_FIXED[kind]) if kind in _FIXED else None


# The run decoder of one value of a serializer, or None when this module does not decode it.
field = Layouts[Field](_string, _void_namespace, _boolean, _fixed_width, _pojo, _enum, _struct).reader


class _Run:
    """A state's run reader (`RunReader`): the entries' lengths stepped over in Python, everything else a numpy
    operation over the run, entries it refuses read one at a time."""

    def __init__(self, state: str, key_fields: list[Field], value: Field | None, fast: RowReader) -> None:
        self.state = state
        self.key_fields = key_fields
        self.value = value
        self.fast = fast

    def read(
        self, data: DataInput, key_group: int, prefix_bytes: int, general: Callable[[int], EntryRow]
    ) -> tuple[ColumnRun | None, int]:
        buf = data.buffer()
        starts, first = _walk(buf, data.tell(), prefix_bytes)
        if len(starts) < RUN_ENTRIES:
            return None, SHORT_RUN
        u8 = np.frombuffer(buf, np.uint8)
        at = np.array(starts, np.int64)
        k = at + 4
        key_end = k + _integers(u8, at, _INT32)
        v = key_end + 4
        value_end = v + _integers(u8, key_end, _INT32)
        prefix = _take(u8, k) & ~FIRST_BIT
        if prefix_bytes == 2:
            prefix = prefix << 8 | _take(u8, k + 1)
        wrong = np.flatnonzero(prefix != key_group)
        if len(wrong):  # the general path says what is wrong with that entry's prefix
            cut = int(wrong[0])
            at, k, key_end, v, value_end = (column[:cut] for column in (at, k, key_end, v, value_end))
            first = -1
            if not cut:
                return None, -1
        texts: list[pa.Array] = []
        pos = k + prefix_bytes
        refused = np.zeros(len(at), bool)
        for read_field in self.key_fields:
            text, pos, field_refused = read_field(u8, pos, key_end)
            texts.append(text)
            refused |= field_refused
        refused |= pos != key_end
        no_user_key = pa.nulls(len(at), pa.string())
        if self.value is None:  # a timer: no value; its timestamp is the row's value
            refused |= v != value_end
            timestamp, key, namespace = texts
            columns = [key, namespace, no_user_key, timestamp]
        else:
            value, pos, value_refused = self.value(u8, v, value_end)
            refused |= value_refused | (pos != value_end)
            columns = [*texts, no_user_key, value] if len(texts) == 2 else [*texts, value]
        status: pa.Array = pa.repeat(pa.scalar(READ), len(at))
        end = int(value_end[-1])
        if refused.any():
            rows, stop = self._one_at_a_time(
                buf, key_group, prefix_bytes, np.flatnonzero(refused), general, at, [k, key_end, v, value_end]
            )
            if stop is not None:
                columns = [column.slice(0, stop) for column in columns]
                status = status.slice(0, stop)
                refused = refused[:stop]
                first = -1
                end = int(at[stop])
            if rows:
                mask = pa.array(refused)
                replaced = list(zip(*rows, strict=True))
                columns = [
                    pc.replace_with_mask(column, mask, pa.array(json_texts(list(parts)), pa.string()))
                    for column, parts in zip(columns, replaced[2:6], strict=True)
                ]
                status = pc.replace_with_mask(status, mask, pa.array(replaced[6], pa.string()))
        data.seek(end)
        if not len(status):
            return None, -1
        key, namespace, user_key, value = columns
        return ColumnRun(self.state, key_group, key, namespace, user_key, value, status), first

    def _one_at_a_time(
        self,
        buf: memoryview,
        key_group: int,
        prefix_bytes: int,
        refused: np.ndarray,
        general: Callable[[int], EntryRow],
        at: Positions,
        bounds: list[Positions],
    ) -> tuple[list[EntryRow], int | None]:
        """The rows of the entries the run refused, each read by the entry-at-a-time reader, else the general
        path; and the index of the first the general path fails on (the run ends before it), or None."""
        k, key_end, v, value_end = bounds
        rows: list[EntryRow] = []
        for index in refused.tolist():
            try:
                row = self.fast(
                    buf,
                    key_group,
                    int(k[index]) + prefix_bytes,
                    int(key_end[index]),
                    int(v[index]),
                    int(value_end[index]),
                )
            except FALLBACK:
                try:
                    row = general(int(at[index]))
                except InputError:  # the general path raises it again, after the run
                    return rows, index
            rows.append(row)
        return rows, None


def _walk(buf: memoryview, pos: int, prefix_bytes: int) -> tuple[list[int], int]:
    """The start of each entry from `pos` on whose key and value lie whole in `buf` (`int len, key, int len,
    value`, the key at least its key-group prefix), up to and including the first whose key's first bit is set
    (the state's last in the key group): their positions, and that last entry's first key byte (or -1 when the
    window or an entry's lengths ended the run first)."""
    size = len(buf)
    unpack_int = _INT.unpack_from
    starts: list[int] = []
    append = starts.append
    while pos + 4 <= size:
        k = pos + 4
        key_end = k + unpack_int(buf, pos)[0]
        if not k + prefix_bytes <= key_end <= size - 4:
            break
        value_end = key_end + 4 + unpack_int(buf, key_end)[0]
        if not key_end + 4 <= value_end <= size:
            break
        append(pos)
        pos = value_end
        first: int = buf[k]
        if first & FIRST_BIT:
            return starts, first
    return starts, -1
