from __future__ import annotations

import pytest

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.handles import RelativeFileStateHandle
from splitaudit.savepoint.metadata import operator_id_from_uid, read_metadata
from splitaudit.savepoint.opstate import OperatorStateStream
from tests.unit.conftest import fixture

SNAPPY = "2.3.0-savepoint-native-files-snappy"
PLAIN = "2.3.0-checkpoint-unaligned-files"


def _state_file(name: str, uid: str, subtask: int) -> tuple[bytes, str, tuple[int, ...]]:
    """The operator-state file of one subtask, and the element offsets `_metadata` gives for it."""
    case = fixture(name)
    metadata = read_metadata(case.metadata.read_bytes(), str(case.metadata))
    operator = next(op for op in metadata.operators if op.operator_id == operator_id_from_uid(uid))
    handle = operator.subtask_states[subtask].managed_operator_state
    assert handle is not None
    assert isinstance(handle.delegate, RelativeFileStateHandle)
    path = case.snapshot / handle.delegate.relative_path
    data = path.read_bytes()
    assert handle.delegate.state_size == len(data)
    return data, str(path), tuple(o for state in handle.states for o in state.offsets)


def _stream(name: str, uid: str, subtask: int = 0) -> tuple[OperatorStateStream, tuple[int, ...]]:
    data, path, offsets = _state_file(name, uid, subtask)
    return OperatorStateStream(DataInput(data, path), offsets), offsets


def test_snappy_stream_header_and_meta_info() -> None:
    stream, offsets = _stream(SNAPPY, "seq-source")
    header = stream.header
    assert (header.version, header.compressed, header.meta_complete) == (6, True, True)
    [state] = header.states
    assert state.name == "SourceReaderState"
    assert state.backend_state_type == "OPERATOR"
    assert state.options == (("OPERATOR_STATE_DISTRIBUTION_MODE", "SPLIT_DISTRIBUTE"),)
    [serializer] = state.serializers
    assert serializer.snapshot_class.endswith("BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot")
    assert serializer.snapshot_version == 3
    # The element sits right after the 10-byte Snappy stream identifier that follows the meta section.
    element = stream.byte_array_element(offsets[0])
    assert element.read_int() == 1  # NumberSequenceSource split serializer version
    assert element.read_int() == element.remaining()


def test_uncompressed_stream_of_a_long_list_state() -> None:
    stream, offsets = _stream(PLAIN, "counter", 1)
    assert (stream.header.version, stream.header.compressed) == (6, False)
    [state] = stream.header.states
    assert state.name == "seen"
    assert state.serializers[0].snapshot_class.endswith("LongSerializer$LongSerializerSnapshot")
    witness = {w["subtask"]: w["count"] for w in fixture(PLAIN).expected["job"]["witness"]}
    assert stream.element_region(offsets[0]).read_long() == witness[1]  # the counter's own state


def test_offset_outside_the_stream() -> None:
    stream, _ = _stream(SNAPPY, "seq-source")
    with pytest.raises(InputError) as error:
        stream.element_region(10_000)
    assert "outside" in error.value.message


def test_unknown_proxy_version() -> None:
    data = b"\x00\x00\x00\x07\x00"
    with pytest.raises(InputError) as error:
        OperatorStateStream(DataInput(data, "state"), ())
    assert (error.value.path, error.value.offset) == ("state", 0)


def test_corrupt_snappy_chunk() -> None:
    data, _, offsets = _state_file(SNAPPY, "seq-source", 0)
    assert data[offsets[0] - 10 : offsets[0]] == b"\xff\x06\x00\x00sNaPpY"  # 1.19+: one identifier, then chunks
    broken = bytearray(data)
    broken[offsets[0]] = 0x02  # a reserved, unskippable chunk type
    stream = OperatorStateStream(DataInput(bytes(broken), "state"), offsets)
    with pytest.raises(InputError) as error:
        stream.byte_array_element(offsets[0])
    assert (error.value.offset, error.value.message) == (offsets[0], "unskippable Snappy chunk type 0x02")


@pytest.mark.parametrize(
    ("name", "version", "compressed"),
    [
        ("1.15.4-savepoint-native-files-snappy", 5, False),  # proxy v5: no compression flag, never compressed
        ("1.17.2-savepoint-native-files-snappy", 5, False),
        ("1.18.1-savepoint-native-files-snappy", 6, True),  # 1.18: a framed Snappy stream per state
        ("1.19.3-savepoint-native-files-snappy", 6, True),  # 1.19+: one framed stream for all states
    ],
)
def test_proxy_versions_and_compression(name: str, version: int, compressed: bool) -> None:
    stream, offsets = _stream(name, "seq-source")
    assert (stream.header.version, stream.header.compressed) == (version, compressed)
    element = stream.byte_array_element(offsets[0])
    assert element.read_int() == 1
    assert element.read_int() == element.remaining()
