"""The footer of a block-based table (`table/format.h`, `Footer` and `BlockHandle`), RocksDB 6.20 to 8.10.

The last bytes of every SST file say where its metaindex and index blocks are, which checksum its blocks carry
and which `format_version` wrote it:

```
legacy (format_version 0), 48 bytes:
  BlockHandle metaindex, BlockHandle index     varint64 offset, varint64 size each; zero-padded to 40 bytes
  fixed64     0xdb4775248b80fb57               kLegacyBlockBasedTableMagicNumber
format_version 1-5, 53 bytes:
  byte        checksum type                    table/format.h ChecksumType (checksum.py)
  BlockHandle metaindex, BlockHandle index     zero-padded to 40 bytes
  fixed32     format_version
  fixed64     0x88e241b785f4cff7               kBlockBasedTableMagicNumber
```

`format_version` 6 (RocksDB 8.6+, never the default of FRocksDB 8.10) moves the index handle into the metaindex
and mixes each block's offset into its checksum: it is refused with that reason. Plain tables and cuckoo tables
(other magic numbers) are not what Flink writes and are refused as such.
"""

from __future__ import annotations

from dataclasses import dataclass

from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.rocksdb.checksum import CHECKSUM_TYPES
from splitaudit.savepoint.rocksdb.coding import fixed32, fixed64, varint64

LEGACY_MAGIC = 0xDB4775248B80FB57
MAGIC = 0x88E241B785F4CFF7
LEGACY_FOOTER_BYTES = 48
FOOTER_BYTES = 53
BLOCK_HANDLE_MAX_BYTES = 20  # two varint64s
BLOCK_TRAILER_BYTES = 5  # compression type + checksum after every block
MAX_FORMAT_VERSION = 5
OTHER_TABLES = {
    0x4C24F5A7CBAD8C4F: "a plain table (PlainTableFactory)",
    0x8822FF6B6E1C2233: "a legacy plain table",
    0x926789D0C5F17873: "a cuckoo table",
}


@dataclass(frozen=True)
class BlockHandle:
    """`BlockHandle`: where a block starts in the file and its size, without its 5-byte trailer."""

    offset: int
    size: int


@dataclass(frozen=True)
class Footer:
    """The decoded footer: the checksum type of every block, the format version, the two top-level blocks."""

    checksum_type: int
    format_version: int
    metaindex: BlockHandle
    index: BlockHandle


def read_block_handle(data: DataInput, what: str) -> BlockHandle:
    """`BlockHandle::DecodeFrom`: varint64 offset, varint64 size."""
    return BlockHandle(varint64(data, f"{what} offset"), varint64(data, f"{what} size"))


def read_footer(tail: DataInput, file_size: int) -> Footer:
    """The footer from the last `FOOTER_BYTES` (or all, for a file shorter) bytes of a `file_size`-byte file;
    both block handles must lie inside the file, before the footer."""
    tail.seek(len(tail) - 8)
    magic = fixed64(tail, "table magic number")
    if magic == LEGACY_MAGIC:
        if len(tail) < LEGACY_FOOTER_BYTES:
            raise tail.error(f"a {len(tail)}-byte file cannot hold a table footer", 0)
        start = len(tail) - LEGACY_FOOTER_BYTES
        tail.seek(start)
        checksum_type, version, footer_bytes = 1, 0, LEGACY_FOOTER_BYTES
    elif magic == MAGIC:
        if len(tail) < FOOTER_BYTES:
            raise tail.error(f"a {len(tail)}-byte file cannot hold a table footer", 0)
        start = len(tail) - FOOTER_BYTES
        tail.seek(len(tail) - 12)
        version = fixed32(tail, "format version")
        if version == 0 or version > MAX_FORMAT_VERSION:
            extra = " (6: RocksDB 8.6+'s footer with context checksums, not read here)" if version == 6 else ""
            raise tail.error(f"block-based table format_version {version} is not supported (1-5){extra}", start)
        tail.seek(start)
        checksum_type = tail.read_unsigned_byte("checksum type")
        if not 0 <= checksum_type < len(CHECKSUM_TYPES):
            raise tail.error(f"unknown block checksum type {checksum_type}", start)
        footer_bytes = FOOTER_BYTES
    else:
        kind = OTHER_TABLES.get(magic, "not a block-based table")
        raise tail.error(f"table magic number {magic:#018x}: {kind}", len(tail) - 8)
    metaindex = read_block_handle(tail, "metaindex handle")
    index = read_block_handle(tail, "index handle")
    footer = Footer(checksum_type, version, metaindex, index)
    limit = file_size - footer_bytes
    for name, handle in (("metaindex", metaindex), ("index", index)):
        if handle.offset + handle.size + BLOCK_TRAILER_BYTES > limit:
            raise tail.error(
                f"{name} block [{handle.offset}, +{handle.size}) lies past the footer of the {file_size}-byte file",
                start,
            )
    return footer
