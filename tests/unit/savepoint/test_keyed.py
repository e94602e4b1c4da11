"""The keyed-state reader on the real fixtures of fixtures/keyed/ (Flink 1.16.3 and 1.19.3): the header it reads,
the layout it picks, and bad bytes refused as InputError with the file and the byte offset (the full contents:
tests/unit/test_fixtures.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from splitaudit.errors import InputError
from splitaudit.savepoint import keyed
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import ByteStreamStateHandle, KeyGroupsStateHandle, RelativeFileStateHandle
from splitaudit.savepoint.keyed import KeyGroupsReader
from splitaudit.savepoint.metadata import operator_id_from_uid, read_metadata
from splitaudit.savepoint.typeserializers import LONG, MAP, STRING
from splitaudit.savepoint_view import keyed_reader, read_keyed_state
from tests.unit.conftest import FIXTURES

KEYED = FIXTURES / "keyed"
# The Flink releases KeyedStateFixtureJob ran on (fixtures/generate_keyed.py): the same layouts in both.
VERSIONS = ("1.16.3", "1.19.3")


def _snapshot(version: str, case: str) -> Path:
    [snapshot] = [p for p in (KEYED / f"{version}-{case}").iterdir() if p.is_dir()]
    return snapshot


def _tally_readers(snapshot: Path) -> list[KeyGroupsReader]:
    files = SavepointFiles(str(snapshot))
    metadata = read_metadata(files.read_metadata(), files.metadata_path)
    [tally] = [op for op in metadata.operators if op.operator_id == operator_id_from_uid("tally")]
    readers = []
    for subtask in tally.subtask_states:
        assert subtask.managed_keyed_state is not None
        reader = keyed_reader(subtask.managed_keyed_state, files, tally.max_parallelism)
        assert isinstance(reader, KeyGroupsReader)
        readers.append(reader)
    return readers


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("case", "tag", "layout", "compressed"),
    [
        ("heap-savepoint-canonical-inline", 7, "canonical", False),
        ("heap-savepoint-canonical-files-snappy", 7, "canonical", True),
        ("rocksdb-savepoint-canonical-files", 7, "canonical", False),
        ("heap-checkpoint-files", 12, "heap", False),
        ("heap-checkpoint-inline-snappy", 12, "heap", True),
    ],
)
def test_header_and_layout(version: str, case: str, tag: int, layout: str, compressed: bool) -> None:
    for subtask, reader in enumerate(_tally_readers(_snapshot(version, case))):
        assert reader.handle.tag == tag
        assert (reader.handle.start_key_group, len(reader.handle.offsets)) == (64 * subtask, 64)
        assert reader.layout == layout
        header = reader.header
        assert (header.version, header.compressed, header.meta_complete) == (6, compressed, True)
        assert header.key_serializer.snapshot_class == STRING
        states = {state.name: state for state in header.states}
        assert sorted(states) == [
            "_timer_state/event_user-timers",
            "_timer_state/processing_user-timers",
            "count",
            "residues",
            "values",
        ]
        assert states["count"].option("KEYED_STATE_TYPE") == "VALUE"
        value = states["count"].serializer("VALUE_SERIALIZER")
        assert value is not None
        assert value.snapshot_class == LONG
        residues = states["residues"].serializer("VALUE_SERIALIZER")
        assert residues is not None
        assert residues.snapshot_class == MAP
        assert [n.snapshot_class for n in residues.nested] == [STRING, LONG]


@pytest.mark.parametrize("version", VERSIONS)
def test_key_groups_hold_their_own_keys_only(version: str) -> None:
    # 24 keys over 128 key groups: subtask 0 holds key groups 0-63, subtask 1 64-127.
    for subtask, reader in enumerate(_tally_readers(_snapshot(version, "rocksdb-savepoint-canonical-files"))):
        groups = [key_group for key_group, _ in reader.key_groups()]
        assert groups
        assert all(64 * subtask <= group < 64 * (subtask + 1) for group in groups)


READABLE = (
    "heap-savepoint-canonical-inline",
    "heap-savepoint-canonical-files-snappy",
    "rocksdb-savepoint-canonical-files",
    "heap-checkpoint-files",
    "heap-checkpoint-inline-snappy",
)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", READABLE)
@pytest.mark.parametrize("window", [1, 5, 37, 4096])
def test_windows_of_any_size_read_the_same_entries(
    version: str, case: str, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Entries straddle the windows' ends, and with 1 to 37 bytes every key and value is larger than one; a
    # compressed key group's chunk headers and bodies straddle them too, and a heap entry (no lengths) is
    # decoded again in a grown window.
    whole = list(read_keyed_state(str(_snapshot(version, case))))
    monkeypatch.setattr(keyed, "WINDOW_BYTES", window)
    assert list(read_keyed_state(str(_snapshot(version, case)))) == whole
    assert len(whole) == 384  # tally: 4 x 24 keys; window-sum: 6 windows x 24 keys, contents and timers


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("window", [1, 1 << 20])
def test_a_corrupt_key_group_is_refused_with_file_and_offset(
    version: str, tmp_path: Path, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyed, "WINDOW_BYTES", window)
    snapshot = tmp_path / "sp"
    shutil.copytree(_snapshot(version, "rocksdb-savepoint-canonical-files"), snapshot)
    [reader, _] = _tally_readers(snapshot)
    handle = reader.handle
    assert isinstance(handle, KeyGroupsStateHandle)
    first = min(offset for offset in handle.offsets if offset)
    state_file = snapshot / handle.delegate.relative_path  # type: ignore[union-attr]
    data = bytearray(state_file.read_bytes())
    data[first + 2 : first + 6] = (1 << 30).to_bytes(4, "big")  # the first key's length
    state_file.write_bytes(bytes(data))
    with pytest.raises(InputError) as raised:
        list(read_keyed_state(str(snapshot)))
    assert raised.value.path == str(state_file)
    assert raised.value.offset == first + 2
    assert "composite key" in raised.value.message


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "case", ["rocksdb-savepoint-native", "rocksdb-checkpoint-full-files", "rocksdb-checkpoint-incremental"]
)
def test_a_rocksdb_native_snapshot_reads_as_its_canonical_savepoint(version: str, case: str) -> None:
    # Full RocksDB checkpoints are native too on both releases (tag 11); each holds the same states, keys and
    # namespaces as the canonical savepoint of the same job (tests/unit/test_fixtures.py checks every value).
    def keys(snapshot: Path) -> set[tuple[str, str, str]]:
        return {(r.entry.state, repr(r.entry.key), repr(r.entry.namespace)) for r in read_keyed_state(str(snapshot))}

    native = keys(_snapshot(version, case))
    assert native == keys(_snapshot(version, "rocksdb-savepoint-canonical-files"))
    assert len(native) == 24 * 3 + 24 + 144 + 144  # count/values/residues' keys, their timers, the windows'


def _first_snappy_stream(snapshot: Path) -> tuple[Path, int]:
    """The file that holds subtask 0's `tally` key groups, and where in it the first one's Snappy stream starts
    (a heap key group's after its `int` number)."""
    [reader, _] = _tally_readers(snapshot)
    start = min(offset for offset in reader.handle.offsets if offset) + (4 if reader.layout == "heap" else 0)
    delegate = reader.handle.delegate
    if isinstance(delegate, ByteStreamStateHandle):  # inline: the stream is a part of _metadata
        return snapshot / "_metadata", delegate.data_offset + start
    assert isinstance(delegate, RelativeFileStateHandle)
    return snapshot / delegate.relative_path, start


IDENTIFIER = 10  # the stream identifier chunk: ff 06 00 00 "sNaPpY"; the first data chunk follows it


@pytest.mark.parametrize("window", [1, 1 << 20])
@pytest.mark.parametrize(
    ("case", "corrupt", "at", "message"),
    [
        # The first data chunk of the canonical key group is compressed (type 0x00), the heap one's not (0x01).
        ("heap-savepoint-canonical-files-snappy", {IDENTIFIER + 4: 0xFF}, IDENTIFIER, "checksum mismatch"),
        ("heap-checkpoint-inline-snappy", {IDENTIFIER + 4: 0xFF}, IDENTIFIER, "checksum mismatch"),
        ("heap-savepoint-canonical-files-snappy", {IDENTIFIER + 30: 0x55}, IDENTIFIER, "Snappy chunk: "),
        ("heap-checkpoint-inline-snappy", {IDENTIFIER + 9: 0x55}, IDENTIFIER, "checksum mismatch"),
        ("heap-savepoint-canonical-files-snappy", {0: 0xFE ^ 0xFF}, 0, "must start with its identifier"),
        ("heap-checkpoint-inline-snappy", {9: ord("Y") ^ ord("Z")}, 0, "bad Snappy stream identifier"),
        ("heap-savepoint-canonical-files-snappy", {IDENTIFIER: 0x05}, IDENTIFIER, "unskippable Snappy chunk type"),
        ("heap-checkpoint-inline-snappy", {IDENTIFIER + 1: 0x0A ^ 0x04}, IDENTIFIER, "no room for its checksum"),
        ("heap-savepoint-canonical-files-snappy", {IDENTIFIER + 3: 0x7F}, IDENTIFIER + 4, "truncated: Snappy chunk"),
        # The compressed block's preamble (ce 02 = 334) made 0x1ce02-ish: more than a chunk may hold.
        ("heap-savepoint-canonical-files-snappy", {IDENTIFIER + 9: 0x02 ^ 0x82, IDENTIFIER + 10: 0xFF}, IDENTIFIER,
         "more than the 65536 allowed"),
    ],
)  # fmt: skip
def test_a_corrupt_snappy_chunk_is_refused_at_its_offset(
    case: str,
    corrupt: dict[int, int],
    at: int,
    message: str,
    window: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each corruption is XORed into the first key group's Snappy stream (positions relative to its start); the
    # error names the file and the offset of the chunk's header (of its body when the body runs past the end).
    monkeypatch.setattr(keyed, "WINDOW_BYTES", window)
    snapshot = tmp_path / "snapshot"
    shutil.copytree(_snapshot("1.19.3", case), snapshot)
    path, start = _first_snappy_stream(snapshot)
    data = bytearray(path.read_bytes())
    for position, mask in corrupt.items():
        data[start + position] ^= mask
    path.write_bytes(bytes(data))
    with pytest.raises(InputError) as raised:
        list(read_keyed_state(str(snapshot)))
    assert (raised.value.path, raised.value.offset) == (str(path), start + at)
    assert message in raised.value.message
    assert raised.value.exit_code == 2
