"""A block-based table (SST file) of RocksDB, read a block at a time (`table/block_based/block_based_table_reader.cc`).

The footer (footer.py) locates the metaindex block, whose entries name the meta blocks: `rocksdb.properties`
(the table's column family, comparator, merge operator, format and index options), `rocksdb.range_del` (range
deletions) and filters (not needed for a scan, not read). The index block's entries locate the data blocks, in
key order: binary-search indexes (index types 0 kBinarySearch, 1 kHashSearch, whose hash is a separate meta
block, and 3 kBinarySearchWithFirstKey) directly, partitioned ones (2 kTwoLevelIndexSearch) through a top-level
index of index partitions. Each block read is its stored bytes and 5-byte trailer: the checksum the footer names
is verified, then the block is decompressed (compression.py). Only one block is in memory at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.rocksdb.block import block_entries, index_entries
from splitaudit.savepoint.rocksdb.checksum import CHECKSUM_TYPES, block_checksum
from splitaudit.savepoint.rocksdb.coding import fixed32, varint64
from splitaudit.savepoint.rocksdb.compression import decompress
from splitaudit.savepoint.rocksdb.dbformat import (
    POINT_TYPES,
    RANGE_DELETION,
    UNSUPPORTED_TYPES,
    InternalKey,
    parse_internal_key,
)
from splitaudit.savepoint.rocksdb.footer import (
    BLOCK_TRAILER_BYTES,
    FOOTER_BYTES,
    BlockHandle,
    read_block_handle,
    read_footer,
)

PROPERTIES_BLOCK = b"rocksdb.properties"
RANGE_DEL_BLOCK = b"rocksdb.range_del"
COMPRESSION_DICT_BLOCK = b"rocksdb.compression_dict"
INDEX_TYPES = ("kBinarySearch", "kHashSearch", "kTwoLevelIndexSearch", "kBinarySearchWithFirstKey")
TWO_LEVEL_INDEX = 2
FIRST_KEY_INDEX = 3
NUMERIC_PROPERTIES = (
    "rocksdb.column.family.id",
    "rocksdb.num.entries",
    "rocksdb.num.range-deletions",
    "rocksdb.format.version",
    "rocksdb.index.value.is.delta.encoded",
    "rocksdb.index.key.is.user.key",
)
UNKNOWN_COLUMN_FAMILY = 0x7FFFFFFF  # TablePropertiesCollectorFactory::Context::kUnknownColumnFamily
READ_AHEAD_BYTES = 256 << 10  # a table is read this much at a time (more only for one larger block)


class TableSource(Protocol):
    """Where a table's bytes come from: a state file's stream (`StateStream`), read by range."""

    @property
    def size(self) -> int: ...

    def read(self, start: int, length: int, what: str) -> DataInput: ...


class ReadAhead:
    """A table source read `READ_AHEAD_BYTES` at a time, blocks served from the window they lie in: data blocks
    are read in file order, so a scan makes one read per window instead of one per 4 KiB block (on S3 or HDFS,
    one request each). Memory: one window per open table."""

    def __init__(self, source: TableSource) -> None:
        self.source = source
        self._start = 0
        self._window: DataInput | None = None

    @property
    def size(self) -> int:
        return self.source.size

    def read(self, start: int, length: int, what: str) -> DataInput:
        window = self._window
        if window is None or start < self._start or start + length > self._start + len(window):
            span = max(length, min(READ_AHEAD_BYTES, self.source.size - start))
            window = self._window = self.source.read(start, span, what)
            self._start = start
        window.seek(start - self._start)
        return window.sub(length, what)


@dataclass(frozen=True)
class TableProperties:
    """What `rocksdb.properties` says about the table (`TableProperties`)."""

    column_family_id: int | None
    column_family_name: str | None
    comparator: str | None
    merge_operator: str | None
    num_entries: int
    num_range_deletions: int
    index_type: int
    index_delta_encoded: bool


@dataclass(frozen=True)
class RangeDeletion:
    """A range tombstone: user keys in [start, end) older than `sequence` are deleted."""

    start: bytes
    end: bytes
    sequence: int


class BlockBasedTable:
    """One SST file: its footer, properties and range deletions on opening; its entries as they are read."""

    def __init__(self, source: TableSource) -> None:
        self.source = source = ReadAhead(source)
        size = source.size
        tail_bytes = min(FOOTER_BYTES, size)
        tail = source.read(size - tail_bytes, tail_bytes, "table footer")
        self.path = tail.path
        self.footer = read_footer(tail, size)
        metaindex = self.read_block(self.footer.metaindex, "metaindex block")
        self.meta_blocks = {
            name: read_block_handle(DataInput(value, self.path, metaindex.base), "meta block handle")
            for name, value in block_entries(metaindex, "metaindex block")
        }
        if COMPRESSION_DICT_BLOCK in self.meta_blocks:
            raise self._error(0, "the table has a compression dictionary (compression_opts.max_dict_bytes): not read")
        self.properties = self._properties()

    def _error(self, at: int | None, message: str) -> InputError:
        return InputError(self.path, at, message)

    def read_block(self, handle: BlockHandle, what: str) -> DataInput:
        """The contents of the block at `handle`: its checksum verified, decompressed."""
        if handle.offset + handle.size + BLOCK_TRAILER_BYTES > self.source.size:
            raise self._error(
                None, f"{what} [{handle.offset}, +{handle.size}) lies past the end of the {self.source.size}-byte file"
            )
        stored = self.source.read(handle.offset, handle.size + BLOCK_TRAILER_BYTES, what)
        block = stored.sub(handle.size, what)
        kind = stored.read_unsigned_byte(f"{what} compression type")
        expected = fixed32(stored, f"{what} checksum")
        checksum_type = self.footer.checksum_type
        if checksum_type:
            actual = block_checksum(checksum_type, block.read_bytes(len(block)), kind)
            block.seek(0)
            if actual != expected:
                raise stored.error(
                    f"{what}: {CHECKSUM_TYPES[checksum_type]} checksum {actual:#010x}, the block says {expected:#010x}",
                    handle.size + 1,
                )
        return decompress(kind, block, self.footer.format_version)

    def _properties(self) -> TableProperties:
        handle = self.meta_blocks.get(PROPERTIES_BLOCK)
        if handle is None:
            raise self._error(None, "the table has no rocksdb.properties block")
        block = self.read_block(handle, "properties block")
        raw = dict(block_entries(block, "properties block"))

        def number(name: str) -> int | None:
            value = raw.get(name.encode())
            if value is None:
                return None
            data = DataInput(value, self.path, block.base)
            result = varint64(data, f"property {name}")
            data.expect_end(f"property {name}")
            return result

        def text(name: str) -> str | None:
            value = raw.get(name.encode())
            return None if value is None else value.decode("utf-8", "replace")

        index_type = 0
        raw_index_type = raw.get(b"rocksdb.block.based.table.index.type")
        if raw_index_type is not None:
            if len(raw_index_type) != 4:
                raise self._error(None, "property rocksdb.block.based.table.index.type is not a fixed32")
            index_type = int.from_bytes(raw_index_type, "little")
        if not 0 <= index_type < len(INDEX_TYPES):
            raise self._error(None, f"unknown index type {index_type}")
        family = number("rocksdb.column.family.id")
        return TableProperties(
            None if family == UNKNOWN_COLUMN_FAMILY else family,
            text("rocksdb.column.family.name"),
            text("rocksdb.comparator"),
            text("rocksdb.merge.operator"),
            number("rocksdb.num.entries") or 0,
            number("rocksdb.num.range-deletions") or 0,
            index_type,
            bool(number("rocksdb.index.value.is.delta.encoded")),
        )

    def data_handles(self) -> Iterator[BlockHandle]:
        """The data blocks' handles, in key order, through one or (partitioned) two index levels."""
        props = self.properties
        first_key = props.index_type == FIRST_KEY_INDEX
        index = self.read_block(self.footer.index, "index block")
        if props.index_type != TWO_LEVEL_INDEX:
            for _, handle in index_entries(index, "index block", props.index_delta_encoded, first_key):
                yield handle
            return
        # The top-level index of a partitioned index is encoded as its partitions are (PartitionIndexReader).
        for _, partition_handle in index_entries(index, "top-level index block", props.index_delta_encoded, False):
            partition = self.read_block(partition_handle, "index partition")
            for _, handle in index_entries(partition, "index partition", props.index_delta_encoded, False):
                yield handle

    def entries(self) -> Iterator[tuple[InternalKey, bytes]]:
        """Every point entry (Put, Delete, SingleDelete, Merge) in internal-key order, a data block at a time;
        keys out of order are refused (the merge relies on the order)."""
        for user_key, tag, value in self.versions():
            yield InternalKey(user_key, tag >> 8, tag & 0xFF), value

    def versions(self) -> Iterator[tuple[bytes, int, bytes]]:
        """`entries()` as the merge reads them: (user key, `sequence << 8 | type`, value), no object per entry."""
        previous_key: bytes | None = None
        previous_tag = 0
        point_types = POINT_TYPES
        for handle in self.data_handles():
            block = self.read_block(handle, "data block")
            for raw_key, value in block_entries(block, "data block"):
                if len(raw_key) < 8:
                    raise block.error(
                        f"data block key: an internal key of {len(raw_key)} bytes has no sequence number and type"
                    )
                user_key = raw_key[:-8]
                tag = int.from_bytes(raw_key[-8:], "little")
                if tag & 0xFF not in point_types:
                    kind = tag & 0xFF
                    name = UNSUPPORTED_TYPES.get(kind, f"unknown value type {kind:#x}")
                    raise block.error(f"data block entry of type {name}: not written by Flink, not read")
                if previous_key is not None and (
                    user_key < previous_key or (user_key == previous_key and tag >= previous_tag)
                ):
                    raise block.error("data block keys out of internal-key order")
                previous_key, previous_tag = user_key, tag
                yield user_key, tag, value

    def range_deletions(self) -> tuple[RangeDeletion, ...]:
        """The range tombstones of the `rocksdb.range_del` block (all in memory: Flink writes a few per rescale)."""
        handle = self.meta_blocks.get(RANGE_DEL_BLOCK)
        if handle is None:
            return ()
        block = self.read_block(handle, "range deletion block")
        tombstones = []
        for raw_key, end in block_entries(block, "range deletion block"):
            key = parse_internal_key(raw_key, block, block.tell(), "range deletion key")
            if key.type != RANGE_DELETION:
                raise block.error(f"range deletion block entry of type {key.type:#x}")
            tombstones.append(RangeDeletion(key.user_key, end, key.sequence))
        return tuple(tombstones)
