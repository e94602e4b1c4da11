"""The `java.time` serializers and TTL's `TtlSerializer` as the keyed-state reader decodes them: the null encodings,
the fixed lengths a RocksDB composite key relies on, and refusals of bytes Flink 1.19 would not write (the values
themselves are checked on real savepoints in test_all_types_fixture.py)."""

from __future__ import annotations

import struct

import pytest

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint import typeserializers as ts

# LocalDateSerializer / LocalTimeSerializer (flink-core 1.19): the null forms they write.
NULL_DATE = struct.pack(">ih", -(1 << 31), -(1 << 15))
NULL_TIME = struct.pack(">bhi", -128, -(1 << 15), -(1 << 31))
DATE = struct.pack(">ibb", 2024, 2, 29)
TIME = struct.pack(">bbbi", 23, 59, 58, 123456789)


def read(snapshot_class: str, data: bytes, nested: tuple[ts.SerializerSnapshot, ...] = ()) -> object:
    decode = ts.decoder(ts.SerializerSnapshot("", snapshot_class, 1, nested))
    assert decode is not None
    inp = DataInput(data, "test", base=100)
    value = decode(inp)
    assert inp.remaining() == 0
    return value


@pytest.mark.parametrize(
    ("snapshot_class", "data", "value"),
    [
        (ts.LOCAL_DATE, DATE, "2024-02-29"),
        (ts.LOCAL_DATE, NULL_DATE, None),
        (ts.LOCAL_TIME, TIME, "23:59:58.123456789"),
        (ts.LOCAL_TIME, NULL_TIME, None),
        (ts.LOCAL_DATE_TIME, DATE + TIME, "2024-02-29T23:59:58.123456789"),
        (ts.LOCAL_DATE_TIME, NULL_DATE + NULL_TIME, None),
    ],
)
def test_java_time_values_and_nulls(snapshot_class: str, data: bytes, value: object) -> None:
    assert read(snapshot_class, data) == value
    assert ts.fixed_length(ts.SerializerSnapshot("", snapshot_class, 1)) == len(data)


@pytest.mark.parametrize(
    ("snapshot_class", "data", "message"),
    [
        (ts.LOCAL_DATE, struct.pack(">ibb", 2024, 13, 1), "LocalDate month 13 day 1 out of range"),
        (ts.LOCAL_TIME, struct.pack(">bbbi", 24, 0, 0, 0), "LocalTime 24:0:0.0 out of range"),
        (ts.LOCAL_TIME, struct.pack(">bbbi", 1, 0, 0, 10**9), "LocalTime 1:0:0.1000000000 out of range"),
        (ts.LOCAL_DATE_TIME, DATE + NULL_TIME, "exactly one of LocalDate and LocalTime is null"),
    ],
)
def test_java_time_out_of_range_is_refused_at_its_offset(snapshot_class: str, data: bytes, message: str) -> None:
    with pytest.raises(InputError) as error:
        read(snapshot_class, data)
    assert (error.value.offset, error.value.message) == (100, message)


def test_a_cut_local_date_time_is_refused() -> None:
    with pytest.raises(InputError):
        read(ts.LOCAL_DATE_TIME, DATE + TIME[:-1])


def test_ttl_value_is_last_access_then_the_value() -> None:
    """`TtlSerializer` (flink-runtime 1.19 `TtlStateFactory`): `CompositeSerializer` fields in order, `long
    lastAccessTimestamp` (`LongSerializer`) then the user value."""
    nested = (ts.SerializerSnapshot("", ts.LONG, 1), ts.SerializerSnapshot("", ts.INT, 1))
    data = struct.pack(">qi", 1_795_921_419_006, 5)
    assert read(ts.TTL, data, nested) == {"last_access_timestamp": 1_795_921_419_006, "value": 5}
