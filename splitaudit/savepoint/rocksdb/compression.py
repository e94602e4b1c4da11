"""Per-block compression of block-based tables (`util/compression.h`), decompressed through cramjam and the
standard library, every declared size checked against `MAX_BLOCK_BYTES` before anything is allocated.

The byte before a block's checksum names its compression (`CompressionType`): 0 none, 1 Snappy, 2 zlib, 3 bzip2,
4 LZ4, 5 LZ4HC, 7 ZSTD (0x40: ZSTD before it was final). From `format_version` 2 on (`compress_format_version`
2), a zlib, bzip2, LZ4 or ZSTD block starts with its decompressed size as a varint32; before, LZ4 blocks start
with an 8-byte header whose first 4 bytes are that size, little-endian, and zlib/bzip2 have no size. Snappy
blocks always carry their own (a varint preamble). zlib is raw deflate (`window_bits` -14) unless the options
asked for a header. XPRESS (Windows only) is refused.
"""

from __future__ import annotations

import bz2
import zlib
from collections.abc import Callable

import cramjam

from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.rocksdb.coding import varint32

NO_COMPRESSION = 0
SNAPPY, ZLIB, BZIP2, LZ4, LZ4HC, XPRESS, ZSTD, ZSTD_NOT_FINAL = 1, 2, 3, 4, 5, 6, 7, 0x40
COMPRESSION_NAMES = {
    NO_COMPRESSION: "kNoCompression",
    SNAPPY: "kSnappyCompression",
    ZLIB: "kZlibCompression",
    BZIP2: "kBZip2Compression",
    LZ4: "kLZ4Compression",
    LZ4HC: "kLZ4HCCompression",
    XPRESS: "kXpressCompression",
    ZSTD: "kZSTD",
    ZSTD_NOT_FINAL: "kZSTDNotFinalCompression",
}
# The largest block decompressed: a block holds entries of about block_size (4 KiB by default) bytes, or one
# entry larger than that; a claim past this is damage, not data.
MAX_BLOCK_BYTES = 256 << 20


def decompress(kind: int, block: DataInput, format_version: int) -> DataInput:
    """The block's contents, decompressed; `block` is the stored block (without its trailer), its offsets the
    file's. The result's offsets are positions in the decompressed block."""
    if kind == NO_COMPRESSION:
        return block
    name = COMPRESSION_NAMES.get(kind)
    if name is None or kind == XPRESS:
        raise block.error(f"block compression type {kind:#x} ({name or 'unknown'}) is not supported", len(block))
    raw = bytes(block.read_bytes(len(block), f"{name} block"))
    block.seek(0)
    if kind == SNAPPY:
        size = _declared(block, f"{name} block preamble")
        block.seek(0)
        out = _into(block, size, name, lambda buffer: cramjam.snappy.decompress_raw_into(raw, buffer))
    else:
        if format_version >= 2:
            size = _declared(block, f"{name} decompressed size")
            body = raw[block.tell() :]
        elif kind in (LZ4, LZ4HC):
            header = block.sub(8, f"{name} block header")
            size = int.from_bytes(header.read_bytes(4), "little")
            _check_size(block, size, name)
            body = raw[8:]
        else:
            size, body = -1, raw
        out = _decode(kind, name, block, body, size)
    return DataInput(out, block.path + f" (block at byte {block.base}, decompressed)")


def _declared(block: DataInput, what: str) -> int:
    """The varint32 size at the block's start (the position moves past it), checked."""
    size = varint32(block, what)
    _check_size(block, size, what)
    return size


def _check_size(block: DataInput, size: int, what: str) -> None:
    if size > MAX_BLOCK_BYTES:
        raise block.error(f"{what}: a block of {size} bytes decompressed, more than the {MAX_BLOCK_BYTES} read", 0)


def _into(block: DataInput, size: int, name: str, fill: Callable[[bytearray], int]) -> bytes:
    """`size` bytes decompressed by `fill` into a buffer of exactly that size (its declared, checked size)."""
    buffer = bytearray(size)
    try:
        written = fill(buffer)
    except (cramjam.DecompressionError, ValueError, OSError) as ex:
        raise block.error(f"corrupt {name} block ({ex})", 0) from None
    if int(written) != size:
        raise block.error(f"{name} block decompressed to {int(written)} bytes, it declares {size}", 0)
    return bytes(buffer)


def _decode(kind: int, name: str, block: DataInput, body: bytes, size: int) -> bytes:
    """LZ4, zlib, bzip2 or ZSTD; `size` the declared decompressed size (-1: none, bounded by MAX_BLOCK_BYTES)."""
    if kind in (LZ4, LZ4HC):
        return _into(block, size, name, lambda buffer: cramjam.lz4.decompress_block_into(body, buffer))
    if kind in (ZSTD, ZSTD_NOT_FINAL):
        if size < 0:
            raise block.error(f"{name} block without its decompressed size (format_version < 2) is not supported", 0)
        return _into(block, size, name, lambda buffer: cramjam.zstd.decompress_into(body, buffer))
    limit = MAX_BLOCK_BYTES if size < 0 else size
    try:
        if kind == ZLIB:
            out, complete = _inflate(body, limit)
        else:
            unpacker = bz2.BZ2Decompressor()
            out = unpacker.decompress(body, limit + 1)
            complete = unpacker.eof
    except (zlib.error, OSError, ValueError, EOFError) as ex:
        raise block.error(f"corrupt {name} block ({ex})", 0) from None
    if len(out) > limit or not complete:
        raise block.error(f"{name} block does not decompress to {'its declared' if size >= 0 else 'a'} size", 0)
    if size >= 0 and len(out) != size:
        raise block.error(f"{name} block decompressed to {len(out)} bytes, it declares {size}", 0)
    return out


def _inflate(body: bytes, limit: int) -> tuple[bytes, bool]:
    """Raw deflate (`window_bits` < 0, RocksDB's default) or, when the options asked for one, with a zlib or gzip
    header; at most `limit` + 1 bytes."""
    try:
        inflater = zlib.decompressobj(-15)
        out = inflater.decompress(body, limit + 1)
    except zlib.error:
        inflater = zlib.decompressobj(47)
        out = inflater.decompress(body, limit + 1)
    return out, inflater.eof
