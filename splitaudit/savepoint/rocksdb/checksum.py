"""Block checksums of RocksDB's block-based tables (`table/format.cc`, `ComputeBuiltinChecksumWithLastByte`).

Every block is followed by a 5-byte trailer: its compression type and a 32-bit checksum, little-endian, of the
block's bytes and that type byte, of the kind the footer names (`ChecksumType`):

| type | name | checksum |
|---|---|---|
| 0 | kNoChecksum | none |
| 1 | kCRC32c | CRC-32C, masked (`crc32c::Mask`: rotated right 15 bits, plus 0xa282ead8) |
| 2 | kxxHash | XXH32, seed 0 |
| 3 | kxxHash64 | the low 32 bits of XXH64, seed 0 |
| 4 | kXXH3 | the low 32 bits of XXH3-64 of the block alone, xor the type byte times 0x6b9083d9 |

FRocksDB 6.20 (Flink 1.x) writes kCRC32c by default; RocksDB 8.x defaults to kXXH3. The MANIFEST's log records
use the masked CRC-32C too (`db/log_format.h`).
"""

from __future__ import annotations

import crc32c
import xxhash

CHECKSUM_TYPES = ("kNoChecksum", "kCRC32c", "kxxHash", "kxxHash64", "kXXH3")
_MASK_DELTA = 0xA282EAD8
_XXH3_LAST_BYTE_PRIME = 0x6B9083D9


def masked_crc32c(*parts: bytes | memoryview) -> int:
    """`crc32c::Mask(crc32c::Value(...))` of the concatenated parts."""
    crc = 0
    for part in parts:
        crc = crc32c.crc32c(part, crc)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def block_checksum(kind: int, block: bytes | memoryview, last_byte: int) -> int:
    """The checksum of `block` followed by the byte `last_byte` (its compression type), as `kind` computes it;
    `kind` must be 1-4."""
    tail = bytes((last_byte,))
    if kind == 1:
        return masked_crc32c(block, tail)
    if kind == 2:
        hasher32 = xxhash.xxh32(block)
        hasher32.update(tail)
        return hasher32.intdigest()
    if kind == 3:
        hasher64 = xxhash.xxh64(block)
        hasher64.update(tail)
        return hasher64.intdigest() & 0xFFFFFFFF
    value = xxhash.xxh3_64_intdigest(block) & 0xFFFFFFFF
    return value ^ ((last_byte * _XXH3_LAST_BYTE_PRIME) & 0xFFFFFFFF)
