"""The entries of one block of a block-based table (`table/block_based/block.cc`, `block_builder.cc`).

```
entry*         varint32 shared, varint32 non_shared, varint32 value_length,
               byte[non_shared] key delta, byte[value_length] value
               (index blocks with "rocksdb.index.value.is.delta.encoded": no value_length, and the value is a
               BlockHandle at a restart point, else a zigzag varint64 size delta from the previous handle)
fixed32[n]     restart offsets: entries there store their whole key (shared = 0)
[data block hash index: byte[num_buckets] buckets, fixed16 num_buckets]   when the top bit of the next field is set
fixed32        n, with (blocks of at most 64 KiB) the data block index type in its top bit
```

A key is the previous key's first `shared` bytes and the delta. Every field is checked against the block's
bounds and every key against the one before it; entries are decoded one at a time.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.rocksdb.coding import fixed32, length_prefixed, varint32, varsigned64
from splitaudit.savepoint.rocksdb.footer import BLOCK_TRAILER_BYTES, BlockHandle, read_block_handle

MAX_BLOCK_SIZE_WITH_HASH_INDEX = 1 << 16  # kMaxBlockSizeSupportedByHashIndex


def _restarts(block: DataInput, what: str) -> tuple[int, frozenset[int]]:
    """Where the entries end and the restart offsets, from the block's end."""
    size = len(block)
    if size < 4:
        raise block.error(f"{what} of {size} bytes has no restart count", 0)
    block.seek(size - 4)
    packed = fixed32(block, f"{what} restart count")
    count, hashed = packed, False
    if size <= MAX_BLOCK_SIZE_WITH_HASH_INDEX:
        count, hashed = packed & 0x7FFFFFFF, bool(packed >> 31)
    end = size - 4
    if hashed:  # DataBlockHashIndex: buckets, then their number; only point lookups use it
        if end < 2:
            raise block.error(f"{what} has no room for its hash index", 0)
        block.seek(end - 2)
        buckets = int.from_bytes(block.read_bytes(2, "hash index bucket count"), "little")
        end -= 2 + buckets
    if count < 1 or count * 4 > end:
        raise block.error(f"{what} of {size} bytes cannot hold {count} restart points", size - 4)
    start = end - count * 4
    block.seek(start)
    restarts = list(struct.unpack(f"<{count}I", block.read_bytes(count * 4, f"{what} restart offsets")))
    if restarts[0] != 0 or any(not 0 <= r < max(start, 1) for r in restarts) or restarts != sorted(set(restarts)):
        raise block.error(f"{what}: restart offsets {restarts[:8]} are not increasing offsets of its entries", start)
    return start, frozenset(restarts)


def block_entries(block: DataInput, what: str) -> Iterator[tuple[bytes, bytes]]:
    """Every (key, value) of a data, metaindex, properties or range-deletion block, in order.

    The scan's inner loop: the entries are decoded from one copy of the block's bytes, a one-byte varint (every
    length below 128) without a call, each field checked against where the entries end."""
    end, restarts = _restarts(block, what)
    block.seek(0)
    raw = block.read_bytes(end, what)
    pos = 0
    key = b""
    while pos < end:
        at = pos
        shared = raw[pos]
        if shared < 0x80:
            pos += 1
        else:
            shared, pos = _varint32(raw, pos, end, block, f"{what} shared key length")
        if pos < end and raw[pos] < 0x80:
            non_shared = raw[pos]
            pos += 1
        else:
            non_shared, pos = _varint32(raw, pos, end, block, f"{what} key length")
        if pos < end and raw[pos] < 0x80:
            value_length = raw[pos]
            pos += 1
        else:
            value_length, pos = _varint32(raw, pos, end, block, f"{what} value length")
        if shared > len(key) or (shared and at in restarts):
            raise block.error(f"{what}: an entry shares {shared} bytes of a {len(key)}-byte key", at)
        key_end = pos + non_shared
        value_end = key_end + value_length
        if value_end > end:
            raise block.error(f"{what}: an entry of {non_shared + value_length} bytes runs past the entries", at)
        key = key[:shared] + raw[pos:key_end]
        yield key, raw[key_end:value_end]
        pos = value_end


def _varint32(raw: bytes, pos: int, end: int, block: DataInput, what: str) -> tuple[int, int]:
    """`GetVarint32` at `pos` of `raw` (the entries, which end at `end`): the value and the position after it."""
    value = 0
    for shift in range(0, 35, 7):
        if pos >= end:
            raise block.error(f"{what}: a varint runs past the entries", pos)
        byte = raw[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if value >> 32:
                raise block.error(f"{what}: varint32 {value} does not fit in 32 bits", pos)
            return value, pos
    raise block.error(f"{what}: a varint of more than 5 bytes", pos)


def index_entries(
    block: DataInput, what: str, delta_encoded: bool, first_key: bool
) -> Iterator[tuple[bytes, BlockHandle]]:
    """Every (separator key, data block handle) of an index block; `delta_encoded` and `first_key` (index type
    kBinarySearchWithFirstKey: each handle is followed by its block's first key) from the table's properties."""
    if not delta_encoded:
        for key, value in block_entries(block, what):
            handle_data = DataInput(value, block.path, block.base)
            handle = read_block_handle(handle_data, f"{what} block handle")
            if first_key:
                length_prefixed(handle_data, f"{what} first key")
            handle_data.expect_end(f"{what} block handle")
            yield key, handle
        return
    end, restarts = _restarts(block, what)
    block.seek(0)
    key = b""
    previous: BlockHandle | None = None
    while block.tell() < end:
        at = block.tell()
        shared = varint32(block, f"{what} shared key length")
        non_shared = varint32(block, f"{what} key length")
        first = at in restarts
        key = _key(block, key, shared, non_shared, at, first, what)
        if first or previous is None:
            if not first:
                raise block.error(f"{what}: the first entry is not at a restart point", at)
            handle = read_block_handle(block, f"{what} block handle")
        else:
            size = previous.size + varsigned64(block, f"{what} block size delta")
            handle = BlockHandle(previous.offset + previous.size + BLOCK_TRAILER_BYTES, size)
            if size < 0:
                raise block.error(f"{what}: negative block size {size}", at)
        if first_key:
            length_prefixed(block, f"{what} first key")
        if block.tell() > end:
            raise block.error(f"{what}: an entry runs into the restart array", at)
        previous = handle
        yield key, handle


def _key(block: DataInput, previous: bytes, shared: int, non_shared: int, at: int, restart: bool, what: str) -> bytes:
    if shared > len(previous) or (restart and shared):
        raise block.error(f"{what}: an entry shares {shared} bytes of a {len(previous)}-byte key", at)
    return previous[:shared] + block.read_bytes(non_shared, f"{what} key")
