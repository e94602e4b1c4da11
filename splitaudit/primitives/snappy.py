"""Snappy as Flink and Beam wrap it: xerial's framed stream and snappy-java's own stream, over raw blocks.

- Framed (`SnappyFramedOutputStream`): Flink's compressed operator and keyed state
  (`execution.checkpointing.snapshot-compression`). Chunks of `type(1), length(3, little-endian), body`; type
  `0xFF` the `sNaPpY` identifier, `0x00` compressed (4-byte masked CRC-32C of the data, raw Snappy), `0x01`
  uncompressed (4-byte CRC, data), `0x02-0x7F` unskippable, `0x80-0xFE` skippable. Read a chunk at a time:
  `read_chunk_header`, then `chunk_data_size` (before decompressing) and `chunk_data`.
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
# Chunk types of the framing format (SnappyFramed.COMPRESSED_DATA_FLAG, UNCOMPRESSED_DATA_FLAG, STREAM_IDENTIFIER_FLAG).
COMPRESSED_CHUNK = 0x00
UNCOMPRESSED_CHUNK = 0x01
IDENTIFIER_CHUNK = 0xFF
DATA_CHUNKS = (COMPRESSED_CHUNK, UNCOMPRESSED_CHUNK)
CHUNK_HEADER_BYTES = 4  # type and length
CHECKSUM_BYTES = 4  # a data chunk's masked CRC-32C, little-endian
_IDENTIFIER_FRAME = bytes((IDENTIFIER_CHUNK, len(SNAPPY_STREAM_IDENTIFIER), 0, 0)) + SNAPPY_STREAM_IDENTIFIER


def read_chunk_header(data: DataInput) -> tuple[int, int]:
    """The type and body length of the chunk at the current position (its 4-byte header), checked as xerial's
    `SnappyFramedInputStream.getFrameMetaData` checks them: the identifier is 6 bytes; a data chunk holds its
    checksum and at least one byte, an uncompressed one at most 65,536 (the framing format's limit); types
    0x02-0x7F are reserved and cannot be skipped."""
    at = data.tell()
    kind = data.read_unsigned_byte("Snappy chunk type")
    length = int.from_bytes(data.read_bytes(3, "Snappy chunk length"), "little")
    if kind == IDENTIFIER_CHUNK:
        if length != len(SNAPPY_STREAM_IDENTIFIER):
            raise data.error(f"Snappy stream identifier chunk of {length} bytes (expected 6)", at)
    elif kind in DATA_CHUNKS:
        if length <= CHECKSUM_BYTES:
            raise data.error(f"Snappy data chunk of {length} bytes: no room for its checksum and data", at)
        if kind == UNCOMPRESSED_CHUNK and length > CHECKSUM_BYTES + SNAPPY_MAX_BLOCK:
            raise data.error(
                f"uncompressed Snappy chunk of {length - CHECKSUM_BYTES} bytes, more than the {SNAPPY_MAX_BLOCK} "
                "allowed",
                at,
            )
    elif kind <= 0x7F:
        raise data.error(f"unskippable Snappy chunk type {kind:#04x}", at)
    # 0x80-0xFE: skippable (padding and reserved) chunks, of any length.
    return kind, length


def chunk_data_size(kind: int, body: DataInput) -> int:
    """How many bytes the chunk whose body (what follows its header) is `body` holds decompressed, known before
    anything is decompressed: an uncompressed chunk's data; a compressed block's declared size (its varint
    preamble), at most 65,536; none for the identifier (whose text is checked) and for skippable chunks. Reads
    `body` from its start; errors name the chunk's header."""
    body.seek(0)
    if kind == IDENTIFIER_CHUNK:
        if body.read_bytes(len(body), "Snappy identifier") != SNAPPY_STREAM_IDENTIFIER:
            raise body.error("bad Snappy stream identifier", -CHUNK_HEADER_BYTES)
        return 0
    if kind == UNCOMPRESSED_CHUNK:
        return len(body) - CHECKSUM_BYTES
    if kind != COMPRESSED_CHUNK:
        return 0
    body.skip(CHECKSUM_BYTES, "Snappy chunk checksum")
    return snappy_block_size(body.read_bytes(min(5, body.remaining())), body, -CHUNK_HEADER_BYTES)


def chunk_data(kind: int, body: DataInput) -> memoryview:
    """The data of a data chunk whose body is `body`, decompressed, its checksum checked: cramjam decodes the
    chunk as a framed stream of its own (the identifier, then this chunk), which checks the masked CRC-32C of
    the data against the chunk's, and a block's size against its preamble. Reads `body` from its start; errors
    name the chunk's header. (Flink's own reader does not check the checksums: `SnappyStreamCompressionDecorator`
    opens `SnappyFramedInputStream(stream, false)`; its writer always writes them.)"""
    body.seek(0)
    raw = body.read_bytes(len(body), "Snappy chunk")
    framed = _IDENTIFIER_FRAME + bytes((kind,)) + len(raw).to_bytes(3, "little") + raw
    try:
        return memoryview(cramjam.snappy.decompress(framed))  # the decompressed bytes, not a copy
    except cramjam.DecompressionError as ex:
        problem = "checksum mismatch" if "checksum" in str(ex) else f"corrupt Snappy block ({ex})"
        raise body.error(f"Snappy chunk: {problem}", -CHUNK_HEADER_BYTES) from None


def snappy_framed(region: DataInput) -> bytes:
    """The rest of `region` as xerial/Google Snappy framed chunks, decompressed whole (an operator-state element:
    a few bytes): identifiers, data chunks (each one's lengths and checksum checked) and skippable chunks."""
    out = bytearray()
    while region.remaining():
        kind, length = read_chunk_header(region)
        body = region.sub(length, "Snappy chunk")
        chunk_data_size(kind, body)
        if kind in DATA_CHUNKS:
            out += chunk_data(kind, body)
    return bytes(out)


def snappy_block_size(preamble: bytes, region: DataInput, at: int) -> int:
    """The size a raw Snappy block declares (its varint preamble, the first up to 5 bytes of the block), checked
    against the framing format's limit before anything is decompressed."""
    try:
        size = DataInput(preamble, region.path).read_varint("Snappy block preamble", 5)
    except InputError:
        raise region.error("bad Snappy block preamble", at) from None
    if size > SNAPPY_MAX_BLOCK:
        raise region.error(f"Snappy block declares {size} bytes, more than the {SNAPPY_MAX_BLOCK} allowed", at)
    return size


def snappy_raw(data: bytes, region: DataInput, at: int) -> bytes:
    """One raw Snappy block; its declared size (a varint preamble) is checked before decompressing."""
    snappy_block_size(data[:5], region, at)
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
