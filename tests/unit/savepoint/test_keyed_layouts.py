"""Canonical entries read straight from the window's bytes (`keyed_layouts`) give exactly what the general path
(`StateCodec.canonical_row` over `DataInput` views) gives: on every snapshot of fixtures/keyed/, and on crafted
entries at each edge of what the fast readers take (the rest they leave to the general path, which then decodes
or refuses them as before)."""

from __future__ import annotations

import struct
from collections.abc import Generator
from typing import Any

import pytest

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint import keyed
from splitaudit.savepoint.keyed import StateCodec
from splitaudit.savepoint.keyed_layouts import FALLBACK, entry_reader
from splitaudit.savepoint.metainfo import StateMetaInfoSnapshot
from splitaudit.savepoint.typeserializers import (
    ENUM,
    INT,
    LIST,
    LONG,
    MAP,
    POJO,
    STRING,
    STRING_ARRAY,
    TIME_WINDOW,
    TIMER,
    TTL,
    TUPLE,
    VOID_NAMESPACE,
    SerializerSnapshot,
)
from splitaudit.savepoint_view import read_keyed_state
from tests.unit.savepoint.test_keyed_parts import CASES, snapshot_of


def _rows(case: str) -> list[str]:
    snapshot, _ = snapshot_of(case)
    # repr, not ==: 1, 1.0 and True are equal, but a value must come back as the same type too.
    return [repr(row) for row in read_keyed_state(str(snapshot))]


@pytest.mark.parametrize("case", CASES)
def test_every_fixture_reads_the_same_with_and_without_the_fast_readers(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _rows(case)
    monkeypatch.setattr(keyed, "entry_reader", lambda *_: None)
    assert fast == _rows(case)


def test_the_fixtures_have_states_the_fast_readers_take() -> None:
    """The comparison above means something: the fixtures' canonical snapshots have states of these layouts."""
    made: list[bool] = []
    original = entry_reader

    def counting(*args: Any) -> Any:
        reader = original(*args)
        made.append(reader is not None)
        return reader

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(keyed, "entry_reader", counting)
        _rows("1.19.3-heap-savepoint-canonical-inline")
    assert any(made)


def _snapshot(kind: str, *nested: SerializerSnapshot, names: tuple[str, ...] = ()) -> SerializerSnapshot:
    return SerializerSnapshot("", kind, 1, nested=nested, names=names)


def _codec(state_type: str, value: SerializerSnapshot, namespace: SerializerSnapshot | None = None) -> StateCodec:
    serializers = (
        SerializerSnapshot("NAMESPACE_SERIALIZER", (namespace or _snapshot(VOID_NAMESPACE)).snapshot_class, 1),
        SerializerSnapshot("VALUE_SERIALIZER", value.snapshot_class, 1, value.nested, names=value.names),
    )
    backend_type = "PRIORITY_QUEUE" if state_type == "TIMER" else state_type
    meta = StateMetaInfoSnapshot("s", backend_type, (("KEYED_STATE_TYPE", state_type),), serializers)
    return StateCodec(meta, _snapshot(STRING), None)


def _string(text: str | None) -> bytes:
    """`StringValue.writeString`: the length + 1 as a varint (0: null), each UTF-16 unit as a varint."""
    if text is None:
        return b"\0"
    out = bytearray()
    for number in (len(text) + 1, *map(ord, text)):
        while number >= 0x80:
            out.append(number & 0x7F | 0x80)
            number >>= 7
        out.append(number)
    return bytes(out)


def _both_ways(codec: StateCodec, key: bytes, value: bytes) -> tuple[Any, Any]:
    """The general path's row (or its InputError's message), and the fast reader's (None: left to the general
    path), for a composite key past its key-group prefix and a value."""
    try:
        general: Any = repr(codec.canonical_row(7, DataInput(key, "k"), DataInput(value, "v")))
    except InputError as error:
        general = str(error)
    assert codec.fast is not None
    buf = memoryview(b"\xee" + key + b"\xee" + value + b"\xee")  # bytes on either side must not be read
    try:
        fast: Any = repr(codec.fast(buf, 7, 1, 1 + len(key), 2 + len(key), 2 + len(key) + len(value)))
    except FALLBACK:
        fast = None
    return general, fast


VALUE_STRING = _codec("VALUE", _snapshot(STRING))
KEY = _string("key-1") + b"\0"  # the key, then VoidNamespace's byte


@pytest.mark.parametrize(
    ("value", "taken"),
    [
        (_string("hello"), True),
        (_string("x" * 200), True),  # two varint bytes of length
        (_string("x" * 20000), False),  # three
        (_string(None), True),
        (_string("é"), False),  # not ASCII: the general path decodes it
        (_string("hello") + b"!", False),  # trailing bytes: the general path refuses them
        (_string("hello")[:-1], False),  # truncated
        (b"", False),
    ],
)
def test_string_values(value: bytes, taken: bool) -> None:
    general, fast = _both_ways(VALUE_STRING, KEY, value)
    assert (fast is not None) == taken
    if taken:
        assert fast == general


@pytest.mark.parametrize(
    ("key", "refused"),
    [
        (_string("é") + b"\0", False),  # not ASCII: the general path decodes it
        (_string("key-1") + b"\1", True),  # a VoidNamespace byte other than 0
        (_string("key-1"), True),  # no namespace byte
        (_string("key-1") + b"\0\0", True),
    ],
)
def test_keys_left_to_the_general_path(key: bytes, refused: bool) -> None:
    general, fast = _both_ways(VALUE_STRING, key, _string("v"))
    assert fast is None
    assert general.startswith("k at byte ") == refused
    assert refused or "'é'" in general


PROFILE = _snapshot(POJO, _snapshot(STRING), _snapshot(INT), _snapshot(LONG), names=("label", "level", "score"))


@pytest.mark.parametrize(
    ("value", "taken"),
    [
        (b"\2" + b"\0" + _string("p-1") + b"\0" + struct.pack(">i", 3) + b"\0" + struct.pack(">q", -4), True),
        (b"\2" + b"\1" + b"\0" + struct.pack(">i", 3) + b"\1", True),  # null fields
        (b"\1", False),  # a null POJO
        (b"\2" + b"\2", False),  # an isNull flag of 2
        (b"\x08\0", False),  # a tagged subclass
        (b"\2" + b"\0" + _string("p-1") + b"\0" + struct.pack(">i", 3), False),  # truncated
    ],
)
def test_pojo_values(value: bytes, taken: bool) -> None:
    general, fast = _both_ways(_codec("VALUE", PROFILE), KEY, value)
    assert (fast is not None) == taken
    if taken:
        assert fast == general


@pytest.mark.parametrize(
    ("element", "value", "taken"),
    [
        (LONG, struct.pack(">qBqBq", 1, 44, -2, 44, 3), True),
        (LONG, struct.pack(">q", 1 << 62), True),
        (LONG, struct.pack(">qBq", 1, 59, 2), False),  # not ','
        (LONG, struct.pack(">qB", 1, 44), False),  # a ',' and nothing after it
        (LONG, b"", False),
        (INT, struct.pack(">iBi", 7, 44, 8), True),
        (STRING, _string("a") + b"," + _string(None) + b"," + _string("ccc"), True),
        (STRING, _string("a") + b";" + _string("b"), False),
        (STRING, _string("a") + b",", False),
    ],
)
def test_list_values(element: str, value: bytes, taken: bool) -> None:
    general, fast = _both_ways(_codec("LIST", _snapshot(LIST, _snapshot(element))), KEY, value)
    assert (fast is not None) == taken
    if taken:
        assert fast == general


@pytest.mark.parametrize(
    ("value", "taken"),
    [(b"\0" + struct.pack(">q", 42), True), (b"\1", True), (b"\2", False), (b"\0" + struct.pack(">i", 42), False)],
)
def test_map_entries(value: bytes, taken: bool) -> None:
    codec = _codec("MAP", _snapshot(MAP, _snapshot(STRING), _snapshot(LONG)))
    general, fast = _both_ways(codec, KEY + _string("attr-1"), value)
    assert (fast is not None) == taken
    if taken:
        assert fast == general


def test_layouts_the_fast_readers_do_not_take() -> None:
    # Key and namespace both variable-sized: the composite key carries their lengths.
    assert _codec("VALUE", _snapshot(STRING), namespace=_snapshot(STRING)).fast is None
    # A timer of a key or namespace of no known layout.
    assert _codec("TIMER", _snapshot(TIMER, _snapshot(STRING), _snapshot(STRING_ARRAY))).fast is None
    assert _codec("VALUE", _snapshot("com.example.UnknownSerializerSnapshot")).fast is None


TIME_WINDOW_NAMESPACE = _snapshot(TIME_WINDOW)
COLOR = SerializerSnapshot("", ENUM, 1, names=("RED", "GREEN"))


LAYOUT_CASES = [
    # A timer: the timestamp with its sign bit flipped, key, namespace in the composite key; no value.
    (
        _codec("TIMER", _snapshot(TIMER, _snapshot(STRING), _snapshot(VOID_NAMESPACE))),
        struct.pack(">q", 1000 ^ -(1 << 63)) + KEY,
        b"",
        True,
    ),
    (
        _codec("TIMER", _snapshot(TIMER, _snapshot(STRING), TIME_WINDOW_NAMESPACE)),
        struct.pack(">q", -5 ^ -(1 << 63)) + _string("k") + struct.pack(">qq", 0, 10),
        b"",
        True,
    ),
    (
        _codec("TIMER", _snapshot(TIMER, _snapshot(STRING), _snapshot(VOID_NAMESPACE))),
        struct.pack(">q", 7) + KEY,
        b"\0",
        False,
    ),  # a value: the general path refuses it
    # A window's state: a TimeWindow namespace after the key.
    (
        _codec("REDUCING", _snapshot(LONG), namespace=TIME_WINDOW_NAMESPACE),
        _string("k") + struct.pack(">qq", 1000, 2000),
        struct.pack(">q", 3),
        True,
    ),
    (_codec("VALUE", COLOR), KEY, struct.pack(">i", 1), True),
    (_codec("VALUE", COLOR), KEY, struct.pack(">i", 2), False),  # no such constant: the general path refuses it
    (
        _codec("VALUE", _snapshot(TUPLE, _snapshot(STRING), _snapshot(LONG))),
        KEY,
        _string("a") + struct.pack(">q", -1),
        True,
    ),
    (_codec("VALUE", _snapshot(TTL, _snapshot(LONG), _snapshot(INT))), KEY, struct.pack(">qi", 99, 4), True),
    (_codec("VALUE", _snapshot(TTL, _snapshot(LONG), _snapshot(INT))), KEY, struct.pack(">q", 99), False),
]


@pytest.mark.parametrize(("codec", "key", "value", "taken"), LAYOUT_CASES)
def test_timers_windows_enums_tuples_and_ttl(codec: StateCodec, key: bytes, value: bytes, taken: bool) -> None:
    general, fast = _both_ways(codec, key, value)
    assert (fast is not None) == taken
    if taken:
        assert fast == general


def _entry(key_group: int, key: bytes, value: bytes, last: bool, prefix_bytes: int) -> bytes:
    """A canonical entry: `int len, composite key, int len, value`; the key-group prefix's top bit set on a
    state's last entry in the key group."""
    prefix = bytearray(key_group.to_bytes(prefix_bytes, "big"))
    prefix[0] |= 0x80 if last else 0
    composite = bytes(prefix) + key
    return struct.pack(">i", len(composite)) + composite + struct.pack(">i", len(value)) + value


def _drain(run: Generator[Any, None, int]) -> tuple[list[Any], int]:
    """A run's rows, and what it returns."""
    rows = []
    while True:
        try:
            rows.append(next(run))
        except StopIteration as stop:
            return rows, stop.value


@pytest.mark.parametrize(("key_group", "prefix_bytes"), [(5, 1), (300, 2)])
def test_a_run_reads_to_the_state_s_last_entry(key_group: int, prefix_bytes: int) -> None:
    entries = [_entry(key_group, _string(f"key-{i}") + b"\0", _string(f"v{i}"), i == 2, prefix_bytes) for i in range(3)]
    after = b"\x00\x01"  # the next state's id
    data = DataInput(b"".join(entries) + after, "f")
    assert VALUE_STRING.fast is not None
    rows, first = _drain(keyed._fast_run(data, VALUE_STRING.fast, key_group, prefix_bytes))
    assert rows == [("s", key_group, f"key-{i}", None, None, f"v{i}", "read") for i in range(3)]
    assert first == 0x80 | (key_group >> 8 * (prefix_bytes - 1))  # the last entry's first key byte
    assert data.tell() == len(data) - len(after)


@pytest.mark.parametrize(
    "second",
    [
        _entry(6, _string("key-1") + b"\0", _string("v"), False, 1),  # another key group's: the general path refuses
        _entry(5, _string("é") + b"\0", _string("v"), False, 1),  # not ASCII: the general path decodes it
        _entry(5, _string("key-1") + b"\0", _string("v"), False, 1)[:-1],  # not loaded whole
    ],
)
def test_a_run_stops_at_an_entry_it_leaves_to_the_general_path(second: bytes) -> None:
    first = _entry(5, _string("key-0") + b"\0", _string("v"), False, 1)
    data = DataInput(first + second, "f")
    assert VALUE_STRING.fast is not None
    rows, stopped = _drain(keyed._fast_run(data, VALUE_STRING.fast, 5, 1))
    assert rows == [("s", 5, "key-0", None, None, "v", "read")]
    assert stopped == -1
    assert data.tell() == len(first)
