"""Internal keys (`db/dbformat.h`): a user key, then 8 bytes little-endian, `sequence << 8 | type`.

Internal keys sort by user key (Flink's column families use `leveldb.BytewiseComparator`: bytes, unsigned),
then by sequence number and type, both descending: the newest version of a key comes first. The types a table
holds (`ValueType`):

| type | name | meaning |
|---|---|---|
| 0x0 | kTypeDeletion | the key is deleted |
| 0x1 | kTypeValue | a Put |
| 0x2 | kTypeMerge | a merge operand (Flink's list `add`) |
| 0x7 | kTypeSingleDeletion | deleted (SingleDelete) |
| 0xF | kTypeRangeDeletion | in the range-deletion block only: [user key, value) deleted |

Blob references (0x11), wide-column entities (0x16), timestamped deletions (0x14) and value-preferred sequence
numbers (0x18) are never written by Flink's RocksDB and are refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from splitaudit.primitives.datainput import DataInput

DELETION, VALUE, MERGE, SINGLE_DELETION, RANGE_DELETION = 0x0, 0x1, 0x2, 0x7, 0xF
POINT_TYPES = {DELETION: "Delete", VALUE: "Put", MERGE: "Merge", SINGLE_DELETION: "SingleDelete"}
UNSUPPORTED_TYPES = {
    0x11: "kTypeBlobIndex (BlobDB)",
    0x14: "kTypeDeletionWithTimestamp",
    0x16: "kTypeWideColumnEntity",
    0x18: "kTypeValuePreferredSeqno",
}
COMPARATOR = "leveldb.BytewiseComparator"
MAX_SEQUENCE = (1 << 56) - 1


@dataclass(frozen=True)
class InternalKey:
    """A parsed internal key."""

    user_key: bytes
    sequence: int
    type: int


def parse_internal_key(raw: bytes, where: DataInput, at: int, what: str) -> InternalKey:
    """The user key, sequence and type of `raw`; `where`/`at` place errors in the file."""
    if len(raw) < 8:
        raise where.error(f"{what}: an internal key of {len(raw)} bytes has no sequence number and type", at)
    packed = int.from_bytes(raw[-8:], "little")
    return InternalKey(raw[:-8], packed >> 8, packed & 0xFF)
