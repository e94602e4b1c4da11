"""Snappy as Flink and Beam wrap it: xerial's framed stream and snappy-java's own stream, over raw blocks.

- Framed (`SnappyFramedOutputStream`): Flink's compressed operator and keyed state
  (`execution.checkpointing.snapshot-compression`). Chunks of `type(1), length(3, little-endian), body`; type
  `0xFF` the `sNaPpY` identifier, `0x00` compressed (4-byte CRC32C, raw Snappy), `0x01` uncompressed (4-byte CRC,
  data), `0x02-0x7F` unskippable, `0x80-0xFE` skippable.
- snappy-java stream (`SnappyOutputStream`): Beam's `SerializableUtils.serializeToByteArray`, which writes the
  serializers Beam's Flink runner keeps in state snapshots. Header `82 'SNAPPY' 00, int version, int
  compatibleVersion` (both 1), then blocks of `int compressedLength, raw Snappy` (big-endian ints).

Every block's declared size is checked before it is decompressed.
"""

from __future__ import annotations

import cramjam

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput

SNAPPY_STREAM_IDENTIFIER = b"sNaPpY"
SNAPPY_MAX_BLOCK = 65536  # the framing format's limit on the uncompressed size of one chunk
SNAPPY_JAVA_MAGIC = b"\x82SNAPPY\x00"  # SnappyCodec.MAGIC_HEADER
SNAPPY_JAVA_VERSION = 1


def snappy_framed(region: DataInput) -> bytes:
    """Decode xerial/Google Snappy framing: identifier, compressed (0x00) and uncompressed (0x01) chunks.

    CRCs are not checked: a flipped byte in compressed data surfaces as a decoding error or as a split that
    fails its own length checks.
    """
    out = bytearray()
    while region.remaining():
        at = region.tell()
        kind = region.read_unsigned_byte("Snappy chunk type")
        length = int.from_bytes(region.read_bytes(3, "Snappy chunk length"), "little")
        body = region.sub(length, "Snappy chunk")
        if kind == 0xFF:
            if body.read_bytes(body.remaining(), "Snappy identifier") != SNAPPY_STREAM_IDENTIFIER:
                raise region.error("bad Snappy stream identifier", at)
        elif kind in (0x00, 0x01):
            body.skip(4, "Snappy chunk checksum")
            data = body.read_bytes(body.remaining(), "Snappy chunk data")
            out += snappy_raw(data, region, at) if kind == 0x00 else data
        elif kind <= 0x7F:
            raise region.error(f"unskippable Snappy chunk type {kind:#04x}", at)
        # 0x80-0xFE: skippable (padding and reserved) chunks.
    return bytes(out)


def snappy_raw(data: bytes, region: DataInput, at: int) -> bytes:
    """One raw Snappy block; its declared size (a varint preamble) is checked before decompressing."""
    try:
        size = DataInput(data, region.path).read_varint("Snappy block preamble", 5)
    except InputError:
        raise region.error("bad Snappy block preamble", at) from None
    if size > SNAPPY_MAX_BLOCK:
        raise region.error(f"Snappy block declares {size} bytes, more than the {SNAPPY_MAX_BLOCK} allowed", at)
    try:
        return bytes(cramjam.snappy.decompress_raw(data))
    except cramjam.DecompressionError as ex:
        raise region.error(f"corrupt Snappy block ({ex})", at) from None


def snappy_java_stream(region: DataInput, max_size: int) -> bytes:
    """The rest of `region` as a snappy-java stream, decompressed; more than `max_size` bytes is refused."""
    at = region.tell()
    if region.read_bytes(len(SNAPPY_JAVA_MAGIC), "snappy-java header") != SNAPPY_JAVA_MAGIC:
        raise region.error("not a snappy-java stream (bad magic header)", at)
    for what in ("snappy-java version", "snappy-java compatible version"):
        version_at = region.tell()
        if (version := region.read_int(what)) != SNAPPY_JAVA_VERSION:
            raise region.error(f"{what} {version} (expected 1)", version_at)
    out = bytearray()
    while region.remaining():
        block_at = region.tell()
        block = region.read_length_prefixed("snappy-java block")
        out += snappy_raw(block, region, block_at)
        if len(out) > max_size:
            raise region.error(f"snappy-java stream decompresses to more than {max_size} bytes", block_at)
    return bytes(out)
