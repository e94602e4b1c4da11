from __future__ import annotations

import struct

import pytest

from splitaudit.errors import InputError
from splitaudit.savepoint.metadata import operator_id_from_uid, read_metadata
from splitaudit.savepoint_view import inspect_savepoint
from tests.unit.conftest import FlinkFixture, fixture, flink_fixtures

FIXTURES = flink_fixtures()


def test_fixtures_cover_every_metadata_version() -> None:
    # V3 (Flink 1.15), V4 (1.16-1.20), V5 (2.0), V6 (2.1+): each layout is read from real files.
    versions = {case.expected["inspect"]["format_version"] for case in FIXTURES}
    assert versions == {3, 4, 5, 6}


def test_operator_id_from_uid_matches_flink() -> None:
    # Ids Flink itself wrote for these uids (the 2.x fixtures store uid and id).
    assert operator_id_from_uid("seq-source") == "7a0e22450c7ff084b745556dd9e4a928"
    assert operator_id_from_uid("print-sink") == "89f21f775f44942d9cc73c012629f763"


@pytest.mark.parametrize("case", FIXTURES, ids=lambda f: f.name)
def test_container_fields(case: FlinkFixture) -> None:
    expected = case.expected["inspect"]
    metadata = read_metadata(case.metadata.read_bytes(), str(case.metadata))
    assert metadata.version == expected["format_version"]
    assert metadata.checkpoint_id == expected["checkpoint_id"]
    if metadata.version == 3:  # Flink <= 1.15: no CheckpointProperties trailer
        assert metadata.properties is None
    else:
        assert metadata.properties is not None
        assert metadata.properties.kind == expected["kind"]
        assert metadata.properties.savepoint_format == expected["savepoint_format"]
    assert metadata.master_states == ()
    by_id = {op.operator_id: op for op in metadata.operators}
    assert sorted(by_id) == [op["id"] for op in expected["operators"]]
    for op in expected["operators"]:
        state = by_id[op["id"]]
        assert (state.uid, state.name, state.parallelism, state.max_parallelism) == (
            op["uid"],
            op["name"],
            op["parallelism"],
            op["max_parallelism"],
        )
        if metadata.version >= 5:  # 2.x stores the uid beside the id: the hash must agree
            assert operator_id_from_uid(state.uid or "") == state.operator_id


@pytest.mark.parametrize("case", [f for f in FIXTURES if "unaligned" in f.name], ids=lambda f: f.name)
def test_unaligned_checkpoints_carry_channel_state(case: FlinkFixture) -> None:
    metadata = read_metadata(case.metadata.read_bytes(), str(case.metadata))
    channels = sum(
        s.input_channel_handles + s.output_channel_handles for o in metadata.operators for s in o.subtask_states
    )
    assert channels > 0  # the handles were stepped over, V1 layout (1.x, 2.0) or typed V2 (2.1+)


def _metadata_bytes(name: str = "2.1.1-savepoint-canonical-inline") -> bytes:
    return fixture(name).metadata.read_bytes()


def test_bad_magic() -> None:
    data = b"\x00" + _metadata_bytes()[1:]
    with pytest.raises(InputError) as error:
        read_metadata(data, "x/_metadata")
    assert (error.value.path, error.value.offset) == ("x/_metadata", 0)
    assert "not a Flink" in error.value.message


@pytest.mark.parametrize("version", [1, 8, -1])
def test_unsupported_version(version: int) -> None:
    data = bytearray(_metadata_bytes())
    data[4:8] = struct.pack(">i", version)
    with pytest.raises(InputError) as error:
        read_metadata(bytes(data), "m")
    assert error.value.offset == 4


def test_absurd_operator_count() -> None:
    data = bytearray(_metadata_bytes())
    assert data[16:20] == b"\x00\x00\x00\x00"  # no master states
    data[20:24] = struct.pack(">i", 0x7FFFFFFF)
    with pytest.raises(InputError) as error:
        read_metadata(bytes(data), "m")
    assert error.value.offset == 20
    assert "number of operator states 2147483647" in error.value.message


@pytest.mark.parametrize("name", ["1.19.3-savepoint-canonical-inline", "2.3.0-checkpoint-unaligned-files"])
def test_every_truncation_is_an_input_error(name: str) -> None:
    data = _metadata_bytes(name)
    trailer = data.rindex(b"\xac\xed\x00\x05")
    for cut in range(len(data)):
        with pytest.raises(InputError) as error:
            read_metadata(data[:cut], "m")
        assert error.value.offset is not None
        assert 0 <= error.value.offset <= cut
        if cut > trailer:  # a truncated trailer is corruption, reported where the trailer starts
            assert error.value.offset == trailer
            assert "CheckpointProperties" in error.value.message


def test_trailing_garbage_after_the_trailer() -> None:
    data = _metadata_bytes()
    with pytest.raises(InputError) as error:
        read_metadata(data + b"\x00", "m")
    assert error.value.offset == len(data)
    assert "1 unexpected trailing bytes after the metadata" in error.value.message


def test_missing_trailer_is_corruption() -> None:
    data = _metadata_bytes()
    trailer = data.rindex(b"\xac\xed\x00\x05")
    with pytest.raises(InputError) as error:
        read_metadata(data[:trailer], "m")
    assert error.value.offset == trailer
    assert "missing CheckpointProperties trailer" in error.value.message


FILE_MERGING = flink_fixtures("flink-file-merging")


@pytest.mark.parametrize("case", FILE_MERGING, ids=lambda f: f.name)
def test_file_merging_segments_outside_the_directory_are_refused(case: FlinkFixture) -> None:
    # Segments live in the checkpoint's taskowned/ folder, outside chk-N, under absolute paths.
    with pytest.raises(InputError) as error:
        inspect_savepoint(str(case.snapshot))
    assert error.value.path == str(case.metadata)
    assert "--allow-external-state" in error.value.message
    data = case.metadata.read_bytes()
    assert error.value.offset is not None
    assert data[error.value.offset] == 15  # the offset is the segment handle's tag byte
