"""RocksDB's integer encodings (`util/coding.h`): little-endian fixed-width integers and LEB128 varints.

Every RocksDB structure this package reads (block entries, block handles, the footer, VersionEdits, log records)
is made of these, unlike the big-endian Java integers of the rest of a Flink snapshot. They read through the
project's one decoder, `DataInput`, so every length is checked and every error names the file and byte offset.
"""

from __future__ import annotations

from splitaudit.primitives.datainput import DataInput

VARINT32_BYTES = 5
VARINT64_BYTES = 10


def fixed32(data: DataInput, what: str) -> int:
    """`DecodeFixed32`: 4 bytes, little-endian, unsigned."""
    return int.from_bytes(data.read_bytes(4, what), "little")


def fixed64(data: DataInput, what: str) -> int:
    """`DecodeFixed64`: 8 bytes, little-endian, unsigned."""
    return int.from_bytes(data.read_bytes(8, what), "little")


def varint32(data: DataInput, what: str) -> int:
    """`GetVarint32`: at most 5 bytes and a value below 2^32."""
    at = data.tell()
    value = data.read_varint(what, VARINT32_BYTES)
    if value >> 32:
        raise data.error(f"{what}: varint32 {value} does not fit in 32 bits", at)
    return value


def varint64(data: DataInput, what: str) -> int:
    """`GetVarint64`: at most 10 bytes and a value below 2^64."""
    at = data.tell()
    value = data.read_varint(what, VARINT64_BYTES)
    if value >> 64:
        raise data.error(f"{what}: varint64 does not fit in 64 bits", at)
    return value


def varsigned64(data: DataInput, what: str) -> int:
    """`GetVarsignedint64`: a zigzag-encoded signed varint64 (`DecodeSignedInt64`)."""
    value = varint64(data, what)
    return (value >> 1) ^ -(value & 1)


def length_prefixed(data: DataInput, what: str) -> bytes:
    """`GetLengthPrefixedSlice`: a varint32 length, then that many bytes (checked against what is left)."""
    return data.read_bytes(varint32(data, f"{what} length"), what)
