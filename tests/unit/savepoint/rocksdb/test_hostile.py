"""Damaged RocksDB files: each is exit 2's InputError naming the file and the byte offset where it went wrong,
before anything is allocated from the damaged length."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import RelativeFileStateHandle
from splitaudit.savepoint.rocksdb.compression import MAX_BLOCK_BYTES, ZSTD, decompress
from splitaudit.savepoint.rocksdb.log import HEADER_BYTES
from splitaudit.savepoint.rocksdb.manifest import read_manifest
from splitaudit.savepoint.rocksdb.table import BlockBasedTable
from splitaudit.savepoint.streams import StateStream
from splitaudit.savepoint_view import read_keyed_state
from tests.unit.savepoint.rocksdb.local import LocalFile

rocksdict = pytest.importorskip("rocksdict")
KEYED = Path(__file__).resolve().parents[4] / "fixtures" / "keyed"


def _database(path: Path) -> Path:
    options = rocksdict.Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_compression_type(rocksdict.DBCompressionType.none())
    table = rocksdict.BlockBasedOptions()
    table.set_format_version(5)
    table.set_checksum_type(rocksdict.ChecksumType.crc32c())
    options.set_block_based_table_factory(table)
    db = rocksdict.Rdict(str(path), options)
    for i in range(100):
        db[i.to_bytes(4, "big")] = b"value %d" % i
    db.flush()
    db.close()
    return path


def test_a_damaged_block_fails_its_checksum_at_its_trailer(tmp_path: Path) -> None:
    [sst] = sorted(_database(tmp_path / "db").glob("*.sst"))
    table = BlockBasedTable(LocalFile(sst))
    [data_block] = list(table.data_handles())
    data = bytearray(sst.read_bytes())
    data[data_block.offset + 3] ^= 0x40
    sst.write_bytes(bytes(data))
    with pytest.raises(InputError, match="data block: kCRC32c checksum") as raised:
        list(BlockBasedTable(LocalFile(sst)).entries())
    assert raised.value.path == str(sst)
    assert raised.value.offset == data_block.offset + data_block.size + 1


def test_a_file_too_short_for_a_footer(tmp_path: Path) -> None:
    [sst] = sorted(_database(tmp_path / "db").glob("*.sst"))
    sst.write_bytes(sst.read_bytes()[-40:])  # the magic number, but no room for the rest of the footer
    with pytest.raises(InputError, match="a 40-byte file cannot hold a table footer") as raised:
        BlockBasedTable(LocalFile(sst))
    assert raised.value.offset == 0
    sst.write_bytes(b"\0" * 64)
    with pytest.raises(InputError, match="not a block-based table") as raised:
        BlockBasedTable(LocalFile(sst))
    assert raised.value.offset == 56


def test_a_damaged_manifest_record_fails_its_crc(tmp_path: Path) -> None:
    database = _database(tmp_path / "db")
    name = (database / "CURRENT").read_text().strip()
    data = bytearray((database / name).read_bytes())
    data[HEADER_BYTES + 2] ^= 0x01  # inside the first record's payload
    (database / name).write_bytes(bytes(data))
    with pytest.raises(InputError, match="record checksum mismatch") as raised:
        read_manifest(LocalFile(database / name), name)
    assert (raised.value.path, raised.value.offset) == (str(database / name), 0)


def test_an_absurd_decompressed_size_is_refused_before_allocating() -> None:
    claim = MAX_BLOCK_BYTES + 1
    varint = bytearray()
    while claim >= 0x80:
        varint.append(claim & 0x7F | 0x80)
        claim >>= 7
    varint.append(claim)
    block = DataInput(bytes(varint) + b"\x28\xb5\x2f\xfd", "x.sst", 100)
    with pytest.raises(InputError, match="more than the 268435456 read") as raised:
        decompress(ZSTD, block, 5)
    assert raised.value.offset == 100


def test_a_missing_table_is_named(tmp_path: Path) -> None:
    [source] = [p for p in (KEYED / "1.19.3-rocksdb-savepoint-native").iterdir() if p.is_dir()]
    snapshot = tmp_path / source.name
    shutil.copytree(source, snapshot)
    tables = sorted(p for p in snapshot.iterdir() if p.read_bytes()[-8:] == bytes.fromhex("f7cff485b741e288"))
    tables[0].unlink()
    with pytest.raises(InputError, match="cannot read state file") as raised:
        list(read_keyed_state(str(snapshot)))
    assert raised.value.path == str(tables[0])


def test_a_short_table_names_its_handle_in_the_metadata(tmp_path: Path) -> None:
    """The handle's place in `_metadata` is where its tag byte is: before the UTF of the file's relative path
    (`RelativeFileStateHandle`: tag 6, writeUTF(path), writeLong(size))."""
    [source] = [p for p in (KEYED / "1.19.3-rocksdb-savepoint-native").iterdir() if p.is_dir()]
    snapshot = tmp_path / source.name
    shutil.copytree(source, snapshot)
    tables = sorted(p for p in snapshot.iterdir() if p.read_bytes()[-8:] == bytes.fromhex("f7cff485b741e288"))
    size = tables[0].stat().st_size
    tables[0].write_bytes(tables[0].read_bytes()[:10])
    metadata = (snapshot / "_metadata").read_bytes()
    name = tables[0].name.encode()
    path_at = metadata.index(len(name).to_bytes(2, "big") + name)
    assert metadata.count(name) == 1
    assert metadata[path_at - 1] == 6
    with pytest.raises(InputError, match=f"state file is 10 bytes, its state handle says {size}") as raised:
        list(read_keyed_state(str(snapshot)))
    assert raised.value.path == str(tables[0])
    assert f"(referenced at byte {path_at - 1} of {snapshot / '_metadata'})" in str(raised.value)


def test_a_read_past_a_native_file_names_that_file(tmp_path: Path) -> None:
    """A range past a file handle's size names the file and the offset in it, not the `_metadata` listing it."""
    (tmp_path / "_metadata").write_bytes(b"")
    stream = StateStream(RelativeFileStateHandle("000009.sst", 10), SavepointFiles(str(tmp_path)), 123)
    with pytest.raises(InputError, match=r"footer: bytes \[5, 15\) lie outside the 10-byte stream") as raised:
        stream.read(5, 10, "footer")
    assert (raised.value.path, raised.value.offset) == (str(tmp_path / "000009.sst"), 5)
