"""Flink's serializers as the keyed-state reader decodes them."""

from __future__ import annotations

import pytest

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint import typeserializers as ts
from splitaudit.savepoint.typeserializers import (
    GLOBAL_WINDOW,
    SerializerSnapshot,
    decoder,
    fixed_length,
    read_string_value,
)


def _string_value(text: str | None) -> bytes:
    """`StringValue.writeString`: length + 1 as a varint (0 for null), then each UTF-16 unit as a varint."""

    def varint(n: int) -> bytes:
        out = bytearray()
        while n >= 0x80:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        out.append(n)
        return bytes(out)

    if text is None:
        return varint(0)
    units = text.encode("utf-16-be")
    chars = [int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2)]
    return varint(len(chars) + 1) + b"".join(varint(c) for c in chars)


@pytest.mark.parametrize(
    "text", [None, "", "key-42", "x" * 126, "x" * 127, "x" * 300, "é", "key-é-1", "\u20ac" * 3, "a\U0001f600b"]
)
def test_string_value_ascii_and_general_paths(text: str | None) -> None:
    inp = DataInput(_string_value(text) + b"\x00", "f")
    assert read_string_value(inp) == text
    assert inp.remaining() == 1


def test_string_value_longer_than_its_bytes_is_refused() -> None:
    with pytest.raises(InputError) as error:
        read_string_value(DataInput(b"\x05ab", "f", base=10))
    assert (error.value.offset, error.value.message) == (10, "string of 4 characters, only 2 bytes left")


def test_string_value_beyond_utf16_is_refused() -> None:
    with pytest.raises(InputError) as error:
        read_string_value(DataInput(b"\x02\x80\x80\x04", "f", base=10))  # one unit of 0x10000
    assert (error.value.offset, error.value.message) == (10, "string character beyond UTF-16")


def test_fixed_length_of_composites_follows_flink_get_length() -> None:
    # TupleSerializerBase.getLength(): the sum when every field is positive; NullableSerializer: flag + padding
    long, string, void = (ts.SerializerSnapshot("", c, 1) for c in (ts.LONG, ts.STRING, ts.VOID_NAMESPACE))
    assert ts.fixed_length(ts.SerializerSnapshot("", ts.TUPLE, 2, (long, long))) == 16
    assert ts.fixed_length(ts.SerializerSnapshot("", ts.TUPLE, 2, (long, string))) is None
    assert ts.fixed_length(ts.SerializerSnapshot("", ts.TUPLE, 2, (long, void))) is None  # a 0-length field
    assert ts.fixed_length(ts.SerializerSnapshot("", ts.NULLABLE, 1, (long,), parameter=8)) == 9
    assert ts.fixed_length(ts.SerializerSnapshot("", ts.NULLABLE, 1, (long,), parameter=0)) is None


def test_global_window_is_one_byte_of_length_zero() -> None:
    """`GlobalWindow.Serializer` (flink-streaming-java): `writeByte(0)`, `getLength()` 0, so a RocksDB composite key
    carries no length after a key when the namespace is the global window."""
    snapshot = SerializerSnapshot("NAMESPACE_SERIALIZER", GLOBAL_WINDOW, 1)
    read = decoder(snapshot)
    assert read is not None
    data = DataInput(b"\x00", "test")
    assert read(data) == "GlobalWindow"
    assert data.remaining() == 0
    assert fixed_length(snapshot) == 0
