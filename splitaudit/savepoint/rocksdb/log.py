"""RocksDB's log format (`db/log_format.h`, `db/log_reader.cc`): the MANIFEST's records (and the WAL's).

The file is a sequence of 32 KiB blocks. A record is a 7-byte header, `fixed32 masked CRC-32C` (of the type byte
and the payload), `fixed16 length`, `byte type`, then the payload, within one block; a block's last bytes too few
for a header (< 7) are zeros. A logical record is one FULL (1) fragment, or FIRST (2), MIDDLE (3)... and LAST (4).
Recyclable fragments (5-8) have an 11-byte header, a `fixed32` log number before the payload, covered by the CRC.
The file is read a block at a time; a logical record is bounded by `MAX_RECORD_BYTES`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.rocksdb.checksum import masked_crc32c
from splitaudit.savepoint.rocksdb.coding import fixed32

BLOCK_SIZE = 32768
HEADER_BYTES = 7
RECYCLABLE_HEADER_BYTES = 11
ZERO, FULL, FIRST, MIDDLE, LAST = 0, 1, 2, 3, 4
RECYCLABLE_OFFSET = 4  # kRecyclableFullType = 5 ... kRecyclableLastType = 8
MAX_RECORD_BYTES = 64 << 20  # a VersionEdit is bytes to kilobytes; more is damage


class LogSource(Protocol):
    """A file read by range (`StateStream`)."""

    @property
    def size(self) -> int: ...

    def read(self, start: int, length: int, what: str) -> DataInput: ...


def log_records(source: LogSource, what: str) -> Iterator[DataInput]:
    """Each logical record's payload, in order, as a decoder naming the file; its offsets are the file's from the
    payload of the record's first fragment on. A file ending inside a record, a bad checksum or a fragment out of
    sequence is an error."""
    pending: bytearray | None = None
    pending_at = 0
    for block_start in range(0, source.size, BLOCK_SIZE):
        block = source.read(block_start, min(BLOCK_SIZE, source.size - block_start), f"{what} block")
        while block.remaining() >= HEADER_BYTES:
            at = block.tell()
            crc = fixed32(block, f"{what} record checksum")
            length = int.from_bytes(block.read_bytes(2, f"{what} record length"), "little")
            kind = block.read_unsigned_byte(f"{what} record type")
            if kind == ZERO and crc == 0 and length == 0:
                # preallocated or padded space: only zeros may follow
                rest = block.read_bytes(block.remaining())
                if rest.count(0) != len(rest):
                    raise block.error(f"{what}: data after a zero record header", at)
                break
            header = HEADER_BYTES
            if RECYCLABLE_OFFSET < kind <= RECYCLABLE_OFFSET + LAST:
                header = RECYCLABLE_HEADER_BYTES
            elif not FULL <= kind <= LAST:
                raise block.error(f"{what}: unknown record type {kind}", at)
            covered_start = at + 6
            block.seek(at + HEADER_BYTES)
            body_length = length + header - HEADER_BYTES
            if body_length > block.remaining():
                raise block.error(f"{what}: a record of {length} bytes runs past its 32 KiB block", at)
            block.seek(covered_start)
            covered = block.read_bytes(1 + body_length, f"{what} record")
            if masked_crc32c(covered) != crc:
                raise block.error(f"{what}: record checksum mismatch", at)
            payload = covered[1 + header - HEADER_BYTES :]
            fragment = kind - RECYCLABLE_OFFSET if kind > RECYCLABLE_OFFSET else kind
            if fragment in (FULL, FIRST):
                if pending is not None:
                    raise block.error(f"{what}: a new record starts inside an unfinished one", at)
                if fragment == FULL:
                    yield DataInput(payload, block.path, block_start + at + header)
                    continue
                pending, pending_at = bytearray(payload), block_start + at + header
                continue
            if pending is None:
                raise block.error(f"{what}: a record fragment without its first fragment", at)
            pending += payload
            if len(pending) > MAX_RECORD_BYTES:
                raise block.error(f"{what}: a record of more than {MAX_RECORD_BYTES} bytes", at)
            if fragment == LAST:
                yield DataInput(bytes(pending), block.path, pending_at)
                pending = None
        trailer = block.read_bytes(block.remaining())
        if trailer.count(0) != len(trailer):
            raise block.error(
                f"{what}: a block trailer of {len(trailer)} bytes is not zeros", block.tell() - len(trailer)
            )
    if pending is not None:
        raise block.error(f"{what} ends inside the record that starts at byte {pending_at}", block.tell())
