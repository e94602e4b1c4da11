"""The operator-state backend stream behind a tag-4/17 handle (`DefaultOperatorStateBackendSnapshotStrategy`).

Layout (splitaudit/savepoint/FORMAT.md, "Operator-state stream"): `OperatorBackendSerializationProxy`
(version 5 in 1.17, 6 from 1.18: a `bool usingStateCompression` follows the version), the
`StateMetaInfoSnapshot` section (meta-info version 6/7, `savepoint/metainfo.py`), then the
list elements that `PartitionableListState.write` put at the absolute offsets `_metadata` records. With
compression on, everything after the meta section is xerial Snappy *framed* (`SnappyFramedOutputStream`,
64 KiB blocks) and each offset is the start of a chunk (1.18 opens a new framed stream per state, 1.19+ one
for all; both are read the same way).
"""

from __future__ import annotations

from dataclasses import dataclass

import cramjam

from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.metainfo import StateMetaInfoSnapshot, read_state_meta_info

PROXY_VERSIONS = (5, 6)
SNAPPY_STREAM_IDENTIFIER = b"sNaPpY"
SNAPPY_MAX_BLOCK = 65536  # the framing format's limit on the uncompressed size of one chunk


@dataclass(frozen=True)
class OperatorBackendHeader:
    """`OperatorBackendSerializationProxy`: version, compression flag and the meta-info it could read.

    `meta_complete` is False when a serializer snapshot with a body this reader does not know stopped the
    walk through the meta-info section; the elements are still readable, their offsets come from `_metadata`.
    """

    version: int
    compressed: bool
    states: tuple[StateMetaInfoSnapshot, ...]
    meta_complete: bool


class OperatorStateStream:
    """One subtask's operator-state stream: its header, and each list element's bytes by offset."""

    def __init__(self, stream: DataInput, element_offsets: tuple[int, ...]) -> None:
        self.stream = stream
        # Elements end where the next element of any state starts, or at the end of the stream.
        self._ends = sorted(set(element_offsets) | {len(stream)})
        self.header = _read_header(stream)

    def element_region(self, offset: int) -> DataInput:
        """The bytes from `offset` to the next element (decompressed when the stream is compressed)."""
        if not 0 <= offset < len(self.stream):
            raise self.stream.error(f"state element offset {offset} lies outside the {len(self.stream)}-byte stream")
        end = next(e for e in self._ends if e > offset)
        self.stream.seek(offset)
        region = self.stream.sub(end - offset, "state element")
        if not self.header.compressed:
            return region
        return DataInput(snappy_framed(region), f"{self.stream.path} (Snappy, element at {self.stream.base + offset})")

    def byte_array_element(self, offset: int) -> DataInput:
        """A `BytePrimitiveArraySerializer` element (`int len, byte[len]`), as `SourceReaderState` stores."""
        region = self.element_region(offset)
        return region.sub(region.read_length("byte array element length"), "byte array element")


def _read_header(stream: DataInput) -> OperatorBackendHeader:
    at = stream.tell()
    version = stream.read_int("operator state proxy version")
    if version not in PROXY_VERSIONS:
        raise stream.error(
            f"operator state stream version {version} is not supported (5 = Flink 1.17, 6 = 1.18 to 2.3)", at
        )
    compressed = stream.read_bool("compression flag") if version >= 6 else False
    states: list[StateMetaInfoSnapshot] = []
    complete = True
    for what in ("operator", "broadcast"):
        count_at = stream.tell()
        count = stream.read_short(f"number of {what} states")
        if count < 0:
            raise stream.error(f"negative number of {what} states {count}", count_at)
        for _ in range(count):
            state, complete = read_state_meta_info(stream)
            states.append(state)
            if not complete:
                return OperatorBackendHeader(version, compressed, tuple(states), False)
    return OperatorBackendHeader(version, compressed, tuple(states), True)


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
            out += _snappy_raw(data, region, at) if kind == 0x00 else data
        elif kind <= 0x7F:
            raise region.error(f"unskippable Snappy chunk type {kind:#04x}", at)
        # 0x80-0xFE: skippable (padding and reserved) chunks.
    return bytes(out)


def _snappy_raw(data: bytes, region: DataInput, at: int) -> bytes:
    """One raw Snappy block; its declared size (a varint preamble) is checked before decompressing."""
    size, shift, i = 0, 0, 0
    while True:
        if i >= len(data) or i > 4:
            raise region.error("bad Snappy block preamble", at)
        byte = data[i]
        size |= (byte & 0x7F) << shift
        shift += 7
        i += 1
        if not byte & 0x80:
            break
    if size > SNAPPY_MAX_BLOCK:
        raise region.error(f"Snappy block declares {size} bytes, more than the {SNAPPY_MAX_BLOCK} allowed", at)
    try:
        return bytes(cramjam.snappy.decompress_raw(data))
    except cramjam.DecompressionError as ex:
        raise region.error(f"corrupt Snappy block ({ex})", at) from None
