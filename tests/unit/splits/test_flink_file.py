"""Flink's FileSource state: the real savepoint of fixtures/flink_file/ decoded to exact values (its expected.json:
the input the generator wrote and the job's witness), the assignment check on it, and the bad-input errors
(hand-made bytes in `FileSourceSplitSerializer`'s and `PendingSplitsCheckpointSerializer`'s layouts, 1.19.3)."""

from __future__ import annotations

import dataclasses
import json
import struct
from typing import Any

import pytest

from splitaudit.audit.checks.assignment import check_assignment
from splitaudit.audit.checks.findings import ASSIGNED_AND_PENDING, ASSIGNED_TWICE
from splitaudit.audit.checks.savepoint_tables import tables_of
from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint_view import SavepointView, inspect_savepoint
from splitaudit.splits import registry
from splitaudit.splits.flink_file import (
    CheckpointedPosition,
    FileSourceSplit,
    FlinkPath,
    PendingSplitsCheckpoint,
    decode_enumerator,
    decode_split,
)
from splitaudit.splits.model import FINISHED, PENDING, EnumeratorEntry, PartitionRow
from tests.unit.conftest import FIXTURES

CASE = FIXTURES / "flink_file" / "1.19.3-savepoint-continuous"
EXPECTED: dict[str, Any] = json.loads((CASE / "expected.json").read_text())
FILES = {f["name"]: f for f in EXPECTED["job"]["input"]}
MAGIC_LE = b"\xef\xbe\xad\xde"  # 0xDEADBEEF as PendingSplitsCheckpointSerializer's little-endian ByteBuffer puts it


def _view() -> SavepointView:
    return inspect_savepoint(str(CASE / EXPECTED["snapshot_dir"]))


def _local(name: str) -> FlinkPath:
    return FlinkPath("file", None, None, -1, FILES[name]["path"], None, None)


def test_each_reader_holds_the_file_its_witness_read_resuming_at_the_next_line() -> None:
    [source] = [operator.source for operator in _view().operators if operator.source is not None]
    for split, held in zip(source.reader_splits, EXPECTED["held"], strict=True):
        file = FILES[held["file"]]
        assert split.subtask == held["subtask"]
        assert isinstance(split.state, FileSourceSplit)
        assert split.state == FileSourceSplit(
            split.state.split_id,  # numbered by the enumerator in the order it listed the folder
            _local(held["file"]),
            0,
            file["size"],
            file["modified"],
            file["size"],
            (),
            CheckpointedPosition(-1, held["next_line"]),  # a StreamFormat cannot seek: lines to skip
        )
        # The split's one row: the file region (path, start byte) and the lines read so far.
        assert split.state.partition_rows() == (
            PartitionRow("flink_file", split.state.split_id, "file:" + file["path"], 0, held["next_line"]),
        )


def test_the_enumerator_holds_the_unread_files_and_every_path_it_found() -> None:
    [source] = [operator.source for operator in _view().operators if operator.source is not None]
    assert source.enumerator is not None
    state = source.enumerator.state
    assert isinstance(state, PendingSplitsCheckpoint)
    assert state.split_serializer_version == 1
    assert sorted(str(split.path) for split in state.splits) == [
        "file:" + FILES[name]["path"] for name in EXPECTED["pending_files"]
    ]
    assert all(split.position is None and split.next_offset() is None for split in state.splits)
    assert sorted(state.processed_paths) == sorted("file:" + f["path"] for f in FILES.values())
    # The pending splits, then the processed paths no pending split names: the files the readers hold, which
    # the checkpoint names finished (nothing of them is read again by the enumerator), a whole file each.
    held = sorted("file:" + FILES[h["file"]]["path"] for h in EXPECTED["held"])
    entries = state.enumerator_entries()
    assert [entry.status for entry in entries] == [PENDING] * 3 + [FINISHED] * 2
    assert sorted((entry.rows for entry in entries[3:]), key=lambda rows: str(rows[0].topic)) == [
        (PartitionRow("flink_file", None, path, None, None),) for path in held
    ]


def test_the_clean_savepoint_passes_the_assignment_check() -> None:
    check = check_assignment(tables_of(_view()))
    assert check.findings == ()
    [matrix] = check.matrices
    assert sorted(row.topic for row in matrix.partitions) == sorted("file:" + f["path"] for f in FILES.values())


def test_a_file_held_twice_or_held_and_pending_is_flagged() -> None:
    tables = tables_of(_view())
    held, other = tables.splits
    pending = list(tables.enumerator)
    # Subtask 1 holds subtask 0's file as well; a pending split names the file subtask 1 holds.
    twice = other | {"topic": held["topic"], "split_id": "0000000009"}
    pending[0] = pending[0] | {"topic": other["topic"]}
    doctored = dataclasses.replace(tables, splits=(held, twice, other), enumerator=tuple(pending))
    findings = check_assignment(doctored).findings
    assert sorted((f.kind, f.topic, f.partition, f.count) for f in findings) == sorted(
        [(ASSIGNED_TWICE, held["topic"], 0, 2), (ASSIGNED_AND_PENDING, other["topic"], 0, 2)]
    )


def _string_value(text: str) -> bytes:
    return bytes([len(text) + 1]) + text.encode("ascii")  # StringValue: length + 1, ASCII units (short strings)


def _split_bytes(position: tuple[int, int] | None = (-1, 7), hosts: tuple[str, ...] = ()) -> bytes:
    """A FileSourceSplit as FileSourceSplitSerializer writes it: hdfs://nn:8020/d/f.txt, bytes [100, 150).

    Offsets: id 0-3, path 4-31 (its flag at 4), offset/length/time/size 32-63, hostnames 64-67 (with none),
    the position flag at 68 and its two longs 69-84."""
    path = b"\x01" + b"\x01" + _string_value("hdfs") + b"\x00" + b"\x01" + _string_value("nn")
    path += struct.pack(">i", 8020) + b"\x01" + _string_value("/d/f.txt") + b"\x00\x00"
    out = struct.pack(">H", 2) + b"42" + path + struct.pack(">qqqq", 100, 50, 1_700_000_000_000, 400)
    out += struct.pack(">i", len(hosts)) + b"".join(struct.pack(">H", len(h)) + h.encode() for h in hosts)
    return out + (b"\x00" if position is None else b"\x01" + struct.pack(">qq", *position))


def _checkpoint(splits: list[bytes], paths: list[bytes], version: int = 1) -> bytes:
    out = MAGIC_LE + struct.pack("<iii", version, len(splits), len(paths))
    out += b"".join(struct.pack("<i", len(s)) + s for s in splits)
    return out + b"".join(struct.pack("<i", len(p)) + p for p in paths)


def test_a_split_with_an_authority_hosts_and_a_byte_position() -> None:
    split = decode_split(DataInput(_split_bytes((130, 0), ("h1",)), "s"))
    assert split == FileSourceSplit(
        "42",
        FlinkPath("hdfs", None, "nn", 8020, "/d/f.txt", None, None),
        100,
        50,
        1_700_000_000_000,
        400,
        ("h1",),
        CheckpointedPosition(130, 0),
    )
    assert str(split.path) == "hdfs://nn:8020/d/f.txt"
    # Path.toString(): user info kept in the authority, query and fragment left out, a bare Windows drive unslashed.
    assert str(FlinkPath("s3", "u", "b", -1, "/k", "q=1", "f")) == "s3://u@b/k"
    assert str(FlinkPath(None, None, None, -1, "/C:/data/f.txt", None, None)) == "C:/data/f.txt"
    assert split.partition_rows() == (PartitionRow("flink_file", "42", "hdfs://nn:8020/d/f.txt", 100, 130),)
    # A byte offset with records after it is no one number; no position at all is not started.
    assert dataclasses.replace(split, position=CheckpointedPosition(130, 3)).next_offset() is None
    assert dataclasses.replace(split, position=None).next_offset() is None


def test_the_registry_picks_the_file_family_by_its_layout() -> None:
    split = registry.decode_reader_split(1, DataInput(_split_bytes(), "s"))
    assert isinstance(split, FileSourceSplit)
    checkpoint = _checkpoint([_split_bytes(None)], [b"hdfs://nn:8020/d/f.txt"])
    for reader_types in (set(), {"flink_file"}):
        state = registry.decode_enumerator(1, DataInput(checkpoint, "c"), reader_types)
        assert state == PendingSplitsCheckpoint(
            1, (dataclasses.replace(split, position=None),), ("hdfs://nn:8020/d/f.txt",)
        )
        assert state.enumerator_entries() == (
            EnumeratorEntry(None, PENDING, (PartitionRow("flink_file", "42", "hdfs://nn:8020/d/f.txt", 100, None),)),
        )


@pytest.mark.parametrize(
    ("data", "message", "offset"),
    [
        (_split_bytes()[:-3], "truncated: records after offset needs 8 bytes, 5 left", 77),
        (_split_bytes() + b"\x00", "1 unexpected trailing bytes after the FileSourceSplit", 85),
        (_split_bytes()[:4] + b"\x00" + _split_bytes()[5:], "a FileSourceSplit without a path", 4),
        (_split_bytes()[:68] + b"\x02" + _split_bytes()[69:], "has reader position: expected a boolean", 68),
    ],
)
def test_a_bad_split_names_its_offset(data: bytes, message: str, offset: int) -> None:
    with pytest.raises(InputError) as caught:
        decode_split(DataInput(data, "s"))
    assert message in str(caught.value)
    assert caught.value.offset == offset


@pytest.mark.parametrize(
    ("data", "message", "offset"),
    [
        (b"\xde\xad\xbe\xef" + bytes(12), "not a PendingSplitsCheckpoint: magic EFBEADDE, expected DEADBEEF", 0),
        (_checkpoint([], [], version=2), "FileSourceSplit serializer version 2 is unknown", 4),
        (MAGIC_LE + struct.pack("<iii", 1, 1000, 0), "number of pending splits 1000 does not fit", 8),
        (MAGIC_LE + struct.pack("<iii", 1, 0, -1), "number of processed paths -1 does not fit", 12),
        (_checkpoint([], [b"\xff"]), "processed path is not UTF-8", 16),
        (
            _checkpoint([_split_bytes()], []) + b"\x00",
            "1 unexpected trailing bytes after the PendingSplitsCheckpoint",
            105,
        ),
    ],
)
def test_a_bad_checkpoint_names_its_offset(data: bytes, message: str, offset: int) -> None:
    with pytest.raises(InputError) as caught:
        decode_enumerator(DataInput(data, "c"), 1)
    assert message in str(caught.value)
    assert caught.value.offset == offset
