"""The SST, MANIFEST and merge readers on databases RocksDB itself writes (rocksdict, RocksDB's own engine), one
per block compression and checksum type, with overwrites, deletes and range deletions spread over several
flushed tables; what the reader merges must equal what RocksDB returns."""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.errors import InputError
from splitaudit.savepoint.rocksdb.footer import read_footer
from splitaudit.savepoint.rocksdb.manifest import read_manifest
from splitaudit.savepoint.rocksdb.merge import merged
from splitaudit.savepoint.rocksdb.table import BlockBasedTable
from tests.unit.savepoint.rocksdb.local import LocalFile

rocksdict = pytest.importorskip("rocksdict")

COMPRESSIONS = ("none", "snappy", "zlib", "bz2", "lz4", "lz4hc", "zstd")
CHECKSUMS = {"crc32c": 1, "xxhash": 2, "xxhash64": 3, "xxh3": 4}
FAMILIES = ("default", "state-a", "state-b")


def _write(
    path: Path,
    compression: str,
    checksum: str,
    format_version: int = 5,
    index: str = "binary_search",
    hash_index: bool = False,
) -> dict[str, dict[bytes, bytes]]:
    """A database with three column families, four flushed tables each: puts, overwrites, deletes and a range
    deletion; returns what RocksDB reads back from it."""
    table = rocksdict.BlockBasedOptions()
    table.set_format_version(format_version)
    table.set_checksum_type(getattr(rocksdict.ChecksumType, checksum)())
    table.set_index_type(getattr(rocksdict.BlockBasedIndexType, index)())
    table.set_block_size(1024)
    if hash_index:
        table.set_data_block_index_type(rocksdict.DataBlockIndexType.binary_and_hash())
        table.set_data_block_hash_ratio(0.75)
    options = rocksdict.Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_compression_type(getattr(rocksdict.DBCompressionType, compression)())
    options.set_block_based_table_factory(table)
    options.set_disable_auto_compactions(True)
    db = rocksdict.Rdict(str(path), options)
    families = {"default": db}
    for name in FAMILIES[1:]:
        families[name] = db.create_column_family(name, options)
    for round_ in range(4):
        for name, family in families.items():
            for i in range(round_ * 50, round_ * 50 + 120):
                key = b"\x00\x01" + i.to_bytes(4, "big") + name.encode()
                family[key] = (f"{name}/{round_}/{i} " * (1 + i % 17)).encode()
            if round_ == 2:
                for i in range(0, 300, 7):
                    del family[b"\x00\x01" + i.to_bytes(4, "big") + name.encode()]
            if round_ == 3:
                family.delete_range(b"\x00\x01" + (10).to_bytes(4, "big"), b"\x00\x01" + (40).to_bytes(4, "big"))
        db.flush()
        for family in families.values():
            family.flush()
    expected = {name: dict(family.items()) for name, family in families.items()}
    for name, family in families.items():
        if name != "default":
            family.close()
    db.close()
    return expected


def _read(path: Path) -> dict[str, dict[bytes, bytes]]:
    """What the reader merges from the directory: CURRENT, the MANIFEST's live tables, each family merged."""
    manifest_name = (path / "CURRENT").read_text().strip()
    manifest = read_manifest(LocalFile(path / manifest_name), manifest_name)
    result = {}
    for family in manifest.column_families:
        tables = [BlockBasedTable(LocalFile(path / meta.file_name)) for meta in family.files.values()]
        tables.sort(key=lambda t: -max((k.sequence for k, _ in t.entries()), default=0))
        for table in tables:
            assert table.properties.column_family_name == family.name
        result[family.name] = dict(merged(tables, tables[0].properties.merge_operator if tables else None, "test"))
    return result


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("checksum", CHECKSUMS)
def test_every_compression_and_checksum(tmp_path: Path, compression: str, checksum: str) -> None:
    expected = _write(tmp_path / "db", compression, checksum)
    assert sorted(expected) == sorted(FAMILIES)
    # 270 keys; 22 deleted for good (39 deleted, 17 of them written again); 26 more in the range [10, 40)
    assert all(len(rows) == 222 for rows in expected.values())
    assert _read(tmp_path / "db") == expected
    tables = sorted((tmp_path / "db").glob("*.sst"))
    assert len(tables) == 12  # four flushes of three families
    footer = BlockBasedTable(LocalFile(tables[0])).footer
    assert (footer.checksum_type, footer.format_version) == (CHECKSUMS[checksum], 5)


@pytest.mark.parametrize("format_version", [2, 3, 4, 5])
@pytest.mark.parametrize("index", ["binary_search", "two_level_index_search"])
def test_format_versions_and_index_types(tmp_path: Path, format_version: int, index: str) -> None:
    expected = _write(tmp_path / "db", "lz4", "crc32c", format_version, index)
    assert _read(tmp_path / "db") == expected
    table = BlockBasedTable(LocalFile(sorted((tmp_path / "db").glob("*.sst"))[0]))
    assert table.footer.format_version == format_version
    assert table.properties.index_type == (2 if index == "two_level_index_search" else 0)
    assert table.properties.index_delta_encoded == (format_version >= 4)


def test_data_block_hash_index(tmp_path: Path) -> None:
    expected = _write(tmp_path / "db", "snappy", "xxh3", hash_index=True)
    assert _read(tmp_path / "db") == expected


def test_format_version_6_is_refused_by_name(tmp_path: Path) -> None:
    _write(tmp_path / "db", "none", "crc32c", format_version=6)
    table = sorted((tmp_path / "db").glob("*.sst"))[0]
    source = LocalFile(table)
    with pytest.raises(InputError, match="format_version 6 is not supported"):
        read_footer(source.read(source.size - 53, 53, "footer"), source.size)
