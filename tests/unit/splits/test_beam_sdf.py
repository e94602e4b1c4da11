"""Beam's SDF residuals in the Python pipeline's savepoints (fixtures/beam_sdf/), and the coders under them.

The restrictions come from each fixture's expected.json (the sink witnessed them); the key groups are checked
against Flink's own assignment of each residual's key (`KeyGroupRangeAssignment`: murmur hash of the key's
`ByteBuffer.hashCode()`, modulo max parallelism), so neither is taken from the reader under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint_view import inspect_savepoint, read_keyed_state
from splitaudit.splits import beam_coders, beam_sdf
from splitaudit.splits.beam_row import read_row_unordered
from tests.unit.conftest import FIXTURES

SDF = FIXTURES / "beam_sdf"
LONG_MAX = (1 << 63) - 1
MAX_PARALLELISM = 128  # Beam's portable runner leaves Flink's default for parallelism 2


def _snapshot(case: str) -> Path:
    [snapshot] = (SDF / case).glob("savepoint-*")
    return snapshot


def _residuals(case: str) -> list[beam_sdf.KafkaSdfResidual]:
    view = inspect_savepoint(str(_snapshot(case)))
    [source] = [operator.source for operator in view.operators if operator.source is not None]
    residuals = [split.state for split in source.reader_splits]
    assert all(isinstance(residual, beam_sdf.KafkaSdfResidual) for residual in residuals)
    return residuals  # type: ignore[return-value]


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _murmur_hash(code: int) -> int:
    """Flink's `MathUtils.murmurHash(int)`."""

    def rotate_left(value: int, bits: int) -> int:
        value &= 0xFFFFFFFF
        return _int32((value << bits) | (value >> (32 - bits)))

    code = _int32(code * 0xCC9E2D51)
    code = rotate_left(code, 15)
    code = _int32(code * 0x1B873593)
    code = rotate_left(code, 13)
    code = _int32(code * 5 + 0xE6546B64)
    code ^= 4
    code = _int32(code ^ ((code & 0xFFFFFFFF) >> 16))
    code = _int32(code * 0x85EBCA6B)
    code = _int32(code ^ ((code & 0xFFFFFFFF) >> 13))
    code = _int32(code * 0xC2B2AE35)
    code = _int32(code ^ ((code & 0xFFFFFFFF) >> 16))
    return code if code >= 0 else (-code if code != -(1 << 31) else 0)


def _key_group(key: bytes) -> int:
    """`KeyGroupRangeAssignment.assignToKeyGroup` of a `ByteBuffer` key (Beam's Flink runner keys by the encoded
    element): `ByteBuffer.hashCode()` runs over the bytes from the last, `31 * h + (signed byte)`."""
    h = 1
    for byte in reversed(key):
        h = _int32(31 * h + (byte - 256 if byte > 127 else byte))
    return _murmur_hash(h) % MAX_PARALLELISM


CASES = ["heap_before", "heap_after", "rocksdb_before", "rocksdb_after"]


@pytest.mark.parametrize("case", CASES)
def test_each_partition_resumes_at_the_offset_the_sink_witnessed(case: str) -> None:
    expected: dict[str, Any] = json.loads((SDF / case / "expected.json").read_text())
    residuals = _residuals(case)
    got = [
        (r.descriptor.topic, r.descriptor.partition, r.resumed.restriction.start, r.resumed.restriction.end)
        for r in residuals
        if r.resumed is not None
    ]
    want = [(e["topic"], e["partition"], e["from"], e["to"]) for e in expected["restrictions"]]
    assert got == want
    start = 500 if case.endswith("_before") else 1_000
    assert [entry[2:] for entry in got] == [(start, LONG_MAX)] * 4
    # No start or stop was given to ReadFromKafka: the descriptors carry the topic and partition only.
    assert {
        (r.descriptor.start_read_offset, r.descriptor.stop_read_time, r.descriptor.bootstrap_servers) for r in residuals
    } == {(None, None, None)}


# Where each partition's key falls (topics differ between the heap and the RocksDB runs, so do the keys): the
# (partition, subtask, key group) of each resumed residual.
HOLDERS = {
    "heap": [(0, 1, 121), (1, 1, 75), (2, 0, 22), (3, 0, 24)],
    "rocksdb": [(0, 0, 49), (1, 0, 28), (2, 1, 84), (3, 1, 104)],
}


@pytest.mark.parametrize("case", CASES)
def test_each_residual_sits_in_the_key_group_flink_assigns_its_key(case: str) -> None:
    keys: dict[tuple[str, int], int] = {}
    for row in read_keyed_state(str(_snapshot(case))):
        if beam_sdf.is_sdf_checkpoint_state(row.entry.state):
            assert isinstance(row.entry.key, beam_coders.EncodedBytes)
            assert row.entry.key_group == _key_group(row.entry.key.data)
            # Parallelism 2 over 128 key groups: subtask 0 holds 0..63, subtask 1 64..127.
            assert row.subtask == row.entry.key_group * 2 // MAX_PARALLELISM
            checkpoint = beam_sdf.read_sdf_checkpoint(
                row.entry.state, row.subtask, row.entry.key_group, row.entry.value
            )
            keys[checkpoint.descriptor.topic, checkpoint.descriptor.partition] = row.entry.key_group
    residuals = _residuals(case)
    assert {(r.descriptor.topic, r.descriptor.partition): r.resumed.key_group for r in residuals if r.resumed} == keys
    holders = [(r.descriptor.partition, r.resumed.subtask, r.resumed.key_group) for r in residuals if r.resumed]
    assert holders == HOLDERS[case.split("_")[0]]


def test_values_no_timer_resumes_are_superseded_not_held() -> None:
    # Beam's checkpoint handler never clears an sdf_checkpoint value once its timer fired (beam#27648): before
    # the restore each key has 5 values, all at offset 500, one of them named by the key's pending timer.
    before = _residuals("heap_before")
    assert [(r.resumed.state, len(r.superseded)) for r in before if r.resumed] == [
        ("sdf_checkpoint:5:1", 4),
        ("sdf_checkpoint:5:0", 4),
        ("sdf_checkpoint:5:1", 4),
        ("sdf_checkpoint:5:0", 4),
    ]
    assert {c.restriction.start for r in before for c in r.superseded} == {500}
    # The restored job numbers its bundles from 1 again: its values overwrite some old names, the rest stay
    # behind at 500 while the resumed residual is at 1000.
    after = _residuals("heap_after")
    assert [(r.resumed.state, [c.restriction.start for c in r.superseded]) for r in after if r.resumed] == [
        ("sdf_checkpoint:4:0", [1000, 500, 1000, 500, 500, 500]),
        ("sdf_checkpoint:3:1", [1000, 1000, 500, 500, 500]),
        ("sdf_checkpoint:4:0", [1000, 500, 1000, 500, 500, 500]),
        ("sdf_checkpoint:3:1", [1000, 1000, 500, 500, 500]),
    ]
    # Only the resumed residual is a holder of its partition in the audit's tables.
    assert [row.next_offset for r in after for row in r.partition_rows()] == [1000] * 4


def test_the_coder_of_an_sdf_checkpoint_state_is_read_as_data() -> None:
    specs = set()
    for case in ("heap_before", "heap_after"):  # the RocksDB run's values have the same shape
        for row in read_keyed_state(str(_snapshot(case))):
            if beam_sdf.is_sdf_checkpoint_state(row.entry.state):
                value = row.entry.value
                assert isinstance(value, beam_coders.WindowedValue)
                assert value.timestamp == -9223372036854775  # BoundedWindow.TIMESTAMP_MIN_VALUE
                assert value.windows == ("GlobalWindow",)
                assert value.pane == beam_coders.PaneInfo(True, True, "UNKNOWN", 0, 0)  # PaneInfo.NO_FIRING
                assert value.value.value == 0.0  # the restriction's size
                specs.add(row.entry.state)
    assert len(specs) == 10  # sdf_checkpoint:<bundle 1..5>:<0, 1>


def _row(fields: list[bytes], nulls: int, count: int = 7) -> beam_coders.EncodedBytes:
    bits = nulls.to_bytes((nulls.bit_length() + 7) // 8, "little") if nulls else b""
    return beam_coders.EncodedBytes(bytes([count, len(bits)]) + bits + b"".join(fields), "row.bin", 1000)


def _string(text: str) -> bytes:
    return bytes([len(text)]) + text.encode()


def test_a_descriptor_decodes_the_same_in_any_field_order() -> None:
    # topic at position 0, partition at 1, the five optional fields null (bits 2..6).
    topic_first = beam_sdf.read_kafka_source_descriptor(_row([_string("orders"), b"\x07"], 0b1111100))
    # The fixtures' order: partition at 0, topic at 4.
    partition_first = beam_sdf.read_kafka_source_descriptor(_row([b"\x07", _string("orders")], 0b1101110))
    assert topic_first == partition_first
    assert (topic_first.topic, topic_first.partition) == ("orders", 7)


def test_a_row_two_field_orders_read_differently_is_refused() -> None:
    # Two non-null INT64 fields besides topic and partition: start_read_offset and stop_read_offset could be
    # either, and the savepoint does not say which: refused, never guessed.
    fields = [_string("orders"), b"\x07", b"\x05", b"\x09"]
    with pytest.raises(InputError, match="more than one order") as error:
        beam_sdf.read_kafka_source_descriptor(_row(fields, 0b1110000))
    assert (error.value.path, error.value.offset) == ("row.bin", 1000)


@pytest.mark.parametrize(
    ("row", "message", "offset"),
    [
        (_row([b"\x07"], 0b1111110), "no order of the schema's fields", 1000),  # topic missing
        (_row([b"\x07", _string("orders")], 0b1101110, count=6), "row has 6 fields, the schema 7", 1000),
        (_row([b"\x07", b"\x50orders"], 0b1101110), "no order", 1000),  # string longer than the row
    ],
)
def test_a_bad_descriptor_row_is_an_input_error(row: beam_coders.EncodedBytes, message: str, offset: int) -> None:
    with pytest.raises(InputError, match=message) as error:
        beam_sdf.read_kafka_source_descriptor(row)
    assert error.value.offset == offset


def test_offset_ranges_and_their_errors() -> None:
    # VarLong 500, then Long.MAX_VALUE (9 bytes), as OffsetRange.Coder wrote them in the fixtures.
    good = beam_coders.EncodedBytes(bytes.fromhex("f403ffffffffffffffff7f"), "r.bin", 40)
    assert beam_sdf.read_offset_range(good) == beam_sdf.OffsetRange(500, LONG_MAX)
    with pytest.raises(InputError, match="truncated") as truncated:
        beam_sdf.read_offset_range(beam_coders.EncodedBytes(bytes.fromhex("f403ffff"), "r.bin", 40))
    assert truncated.value.offset == 44
    with pytest.raises(InputError, match="ends before it starts") as backwards:
        beam_sdf.read_offset_range(beam_coders.EncodedBytes(bytes.fromhex("f40301"), "r.bin", 40))
    assert backwards.value.offset == 40
    with pytest.raises(InputError, match="trailing") as trailing:
        beam_sdf.read_offset_range(beam_coders.EncodedBytes(bytes.fromhex("0102ff"), "r.bin", 40))
    assert trailing.value.offset == 42


def test_a_coder_snapshot_that_is_not_snappy_java_is_an_input_error() -> None:
    with pytest.raises(InputError, match="not a snappy-java stream") as error:
        beam_coders.read_coder_type_serializer(b"\xac\xed\x00\x05junk", "state.bin", 96)
    assert (error.value.path, error.value.offset) == ("state.bin", 96)


def test_varints_of_beam() -> None:
    assert beam_coders.read_var_long(DataInput(bytes.fromhex("ffffffffffffffffff01"), "v")) == -1
    assert beam_coders.read_var_int(DataInput(bytes.fromhex("ffffffff0f"), "v")) == -1
    with pytest.raises(InputError, match="longer than 10 bytes"):
        beam_coders.read_var_long(DataInput(b"\xff" * 11, "v"))


def test_read_row_unordered_leaves_the_input_at_its_end() -> None:
    inp = _row([b"\x07", _string("orders")], 0b1101110).input()
    row = read_row_unordered(inp, beam_sdf.KAFKA_SOURCE_DESCRIPTOR_FIELDS, "descriptor")
    assert (row["topic"], row["partition"], inp.remaining()) == ("orders", 7, 0)
