"""Byte-level jar (zip) rewriting: replace or add a few entries, copy every other one exactly as it is.

Python's `zipfile` re-compresses whatever it writes, so a jar it rewrites differs in every entry even when
no content changed. A `ZipWriter` instead copies each kept entry's local record (header, compressed data,
data descriptor) and central-directory record byte for byte from a `ZipArchive`, fixing up only offsets, and
writes new records for new content alone: `rewrite_entries` replaces a few entries of one jar this way, and
a job jar is assembled from many (`splitaudit_lab.stack.job_jar`). Layout per PKWARE APPNOTE 6.3 §4.3; ZIP64 end
records are read and written (job jars pass 65,535 entries easily), ZIP64 per-entry sizes and offsets (files
over 4 GiB) are not.
"""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from splitaudit.errors import InputError

_EOCD = struct.Struct("<IHHHHIIH")  # end of central directory, APPNOTE 4.3.16
_EOCD_SIGNATURE = 0x06054B50
_ZIP64_LOCATOR = struct.Struct("<IIQI")  # 4.3.15
_ZIP64_LOCATOR_SIGNATURE = 0x07064B50
_ZIP64_EOCD = struct.Struct("<IQHHIIQQQQ")  # 4.3.14
_ZIP64_EOCD_SIGNATURE = 0x06064B50
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")  # central directory file header, 4.3.12
_CENTRAL_SIGNATURE = 0x02014B50
_LOCAL = struct.Struct("<IHHHHHIIIHH")  # local file header, 4.3.7
_LOCAL_SIGNATURE = 0x04034B50
_DATA_DESCRIPTOR_FLAG = 0x0008
_STORED = 0
_DEFLATED = 8
_MAX_COMMENT = 0xFFFF
_U16_MAX = 0xFFFF
_U32_MAX = 0xFFFFFFFF


@dataclass(frozen=True)
class CentralEntry:
    """One central-directory record: the raw bytes plus the fields rewriting needs."""

    name: str
    raw: bytes
    flags: int
    method: int
    local_offset: int


@dataclass(frozen=True)
class ZipLayout:
    """Where a zip's parts are: its entries in central-directory order and the directory's position."""

    entries: tuple[CentralEntry, ...]
    central_offset: int
    comment: bytes


def _parse_layout(where: str, data: bytes) -> ZipLayout:
    """Parse the end records and the central directory of a whole zip file's bytes."""
    search_from = max(0, len(data) - _EOCD.size - _MAX_COMMENT)
    eocd_at = data.rfind(struct.pack("<I", _EOCD_SIGNATURE), search_from)
    if eocd_at < 0 or eocd_at + _EOCD.size > len(data):
        raise InputError(where, None, "not a zip/jar file (no end of central directory record)")
    _, disk, cd_disk, _, count, cd_size, cd_offset, comment_length = _EOCD.unpack_from(data, eocd_at)
    comment = data[eocd_at + _EOCD.size : eocd_at + _EOCD.size + comment_length]
    if disk != 0 or cd_disk != 0:
        raise InputError(where, eocd_at, "multi-disk zip archives are not supported")
    if count == _U16_MAX or cd_size == _U32_MAX or cd_offset == _U32_MAX:
        locator_at = eocd_at - _ZIP64_LOCATOR.size
        if locator_at < 0:
            raise InputError(where, eocd_at, "ZIP64 end record announced but no ZIP64 locator before it")
        signature, _, zip64_at, _ = _ZIP64_LOCATOR.unpack_from(data, locator_at)
        if signature != _ZIP64_LOCATOR_SIGNATURE or zip64_at + _ZIP64_EOCD.size > len(data):
            raise InputError(where, locator_at, "bad ZIP64 end of central directory locator")
        fields = _ZIP64_EOCD.unpack_from(data, zip64_at)
        if fields[0] != _ZIP64_EOCD_SIGNATURE:
            raise InputError(where, zip64_at, "bad ZIP64 end of central directory record")
        count, cd_size, cd_offset = fields[7], fields[8], fields[9]
    if cd_offset + cd_size > len(data):
        raise InputError(where, eocd_at, f"central directory ({cd_size} bytes at {cd_offset}) past end of file")
    entries = []
    at = cd_offset
    for _ in range(count):
        if at + _CENTRAL.size > cd_offset + cd_size:
            raise InputError(where, at, "central directory ends inside a record")
        fields = _CENTRAL.unpack_from(data, at)
        if fields[0] != _CENTRAL_SIGNATURE:
            raise InputError(where, at, "bad central directory record signature")
        flags, method, compressed, uncompressed = fields[3], fields[4], fields[8], fields[9]
        name_length, extra_length, comment_len, local_offset = fields[10], fields[11], fields[12], fields[16]
        end = at + _CENTRAL.size + name_length + extra_length + comment_len
        if end > cd_offset + cd_size:
            raise InputError(where, at, "central directory record runs past the directory")
        if _U32_MAX in (compressed, uncompressed, local_offset):
            raise InputError(where, at, "ZIP64 entries (over 4 GiB) are not supported")
        raw_name = data[at + _CENTRAL.size : at + _CENTRAL.size + name_length]
        name = raw_name.decode("utf-8" if flags & 0x0800 else "cp437")
        entries.append(CentralEntry(name, data[at:end], flags, method, local_offset))
        at = end
    return ZipLayout(tuple(entries), cd_offset, comment)


@dataclass(frozen=True)
class ZipArchive:
    """A whole zip file's bytes and its layout: what a `ZipWriter` copies entries from."""

    where: str
    data: bytes
    layout: ZipLayout
    # Each local record spans from its header to the next record's header (or the central directory).
    record_ends: Mapping[int, int]

    @classmethod
    def read(cls, path: Path) -> ZipArchive:
        """Read `path` and parse its end records and central directory."""
        data = path.read_bytes()
        layout = _parse_layout(str(path), data)
        starts = sorted({entry.local_offset for entry in layout.entries})
        ends = dict(zip(starts, [*starts[1:], layout.central_offset], strict=True))
        return cls(str(path), data, layout, ends)

    def local_record(self, entry: CentralEntry) -> bytes:
        """An entry's local record as it is in the file: header, compressed data, data descriptor."""
        return self.data[entry.local_offset : self.record_ends[entry.local_offset]]

    def content(self, entry: CentralEntry) -> bytes:
        """An entry's uncompressed content, checked against the CRC-32 its central-directory record holds."""
        header = _LOCAL.unpack_from(self.data, entry.local_offset)
        if header[0] != _LOCAL_SIGNATURE:
            raise InputError(self.where, entry.local_offset, f"bad local header signature for {entry.name}")
        crc, compressed = _CENTRAL.unpack_from(entry.raw, 0)[7:9]
        start = entry.local_offset + _LOCAL.size + header[9] + header[10]
        payload = self.data[start : start + compressed]
        if entry.method == _DEFLATED:
            content = zlib.decompressobj(-15).decompress(payload)
        elif entry.method == _STORED:
            content = payload
        else:
            raise InputError(self.where, entry.local_offset, f"{entry.name}: compression method {entry.method}")
        if zlib.crc32(content) != crc:
            raise InputError(self.where, entry.local_offset, f"{entry.name}: content does not match its CRC-32")
        return content


class ZipWriter:
    """A zip written to a stream entry by entry: each local record at once, the central directory (kept in
    memory, about 100 bytes an entry) and the end records at `finish`."""

    def __init__(self, target: BinaryIO) -> None:
        self._target = target
        self._central = bytearray()
        self.entries = 0  # how many entries are written
        self.offset = 0  # where the next local record starts

    def write(self, local: bytes, record: bytes) -> None:
        """Append one entry: its local record, written at `offset`, and its central-directory record."""
        self._target.write(local)
        self._central += record
        self.entries += 1
        self.offset += len(local)

    def copy(self, archive: ZipArchive, entry: CentralEntry) -> None:
        """Append an entry of `archive` exactly as it is there; only its central record's offset is new."""
        self.write(archive.local_record(entry), entry.raw[:42] + struct.pack("<I", self.offset) + entry.raw[46:])

    def add(self, name: str, content: bytes) -> None:
        """Append a new entry: deflated, dated 1980-01-01 00:00 (the zip epoch) so a rewrite is reproducible."""
        self.write(*_added_records(name, content, self.offset))

    def finish(self, comment: bytes = b"") -> None:
        """Write the central directory and the end records after the last entry."""
        self._target.write(self._central)
        _write_end_records(self._target, self.entries, len(self._central), self.offset, comment)


def rewrite_entries(
    source: Path, target: BinaryIO, replacements: Mapping[str, bytes], additions: Mapping[str, bytes] | None = None
) -> None:
    """Write `source` to `target` with the content of the named entries replaced and new entries appended.

    Kept entries are copied byte for byte, in the same order. A replaced entry keeps its name, position,
    compression method, timestamps and extra fields; only its data, CRC and sizes are new (and it has no
    data descriptor). Every name in `replacements` must exist in `source`, no name in `additions` may; added
    entries follow the kept ones (`ZipWriter.add`).
    """
    additions = additions or {}
    archive = ZipArchive.read(source)
    present = {entry.name for entry in archive.layout.entries}
    missing = set(replacements) - present
    if missing:
        raise InputError(str(source), None, f"entries to replace are missing: {sorted(missing)}")
    clashing = set(additions) & present
    if clashing:
        raise InputError(str(source), None, f"entries to add are present already: {sorted(clashing)}")
    writer = ZipWriter(target)
    for entry in archive.layout.entries:
        if entry.name in replacements:
            writer.write(
                *_replaced_records(archive.where, archive.data, entry, replacements[entry.name], writer.offset)
            )
        else:
            writer.copy(archive, entry)
    for name, content in additions.items():
        writer.add(name, content)
    writer.finish(archive.layout.comment)


@contextlib.contextmanager
def written_atomically(out: Path) -> Iterator[BinaryIO]:
    """A file to write `out` through: written next to it under a temporary name, renamed into place when the
    block ends without an error, removed when it does not, so `out` is never left half written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(descriptor, "wb") as target:
            yield target
        # mkstemp creates the file private (0600); a jar is a plain file, readable as the umask allows.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _replaced_records(where: str, data: bytes, entry: CentralEntry, content: bytes, offset: int) -> tuple[bytes, bytes]:
    """The new local record and central-directory record of an entry whose content is `content`."""
    header = _LOCAL.unpack_from(data, entry.local_offset)
    if header[0] != _LOCAL_SIGNATURE:
        raise InputError(where, entry.local_offset, f"bad local header signature for {entry.name}")
    name_length, extra_length = header[9], header[10]
    name_and_extra = data[
        entry.local_offset + _LOCAL.size : entry.local_offset + _LOCAL.size + name_length + extra_length
    ]
    if entry.method == _DEFLATED:
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        payload = compressor.compress(content) + compressor.flush()
    elif entry.method == _STORED:
        payload = content
    else:
        raise InputError(where, entry.local_offset, f"{entry.name}: compression method {entry.method} unsupported")
    crc = zlib.crc32(content)
    flags = entry.flags & ~_DATA_DESCRIPTOR_FLAG
    local = (
        _LOCAL.pack(
            _LOCAL_SIGNATURE,
            header[1],  # version needed
            flags,
            entry.method,
            header[4],  # modification time
            header[5],  # modification date
            crc,
            len(payload),
            len(content),
            name_length,
            extra_length,
        )
        + name_and_extra
        + payload
    )
    fields = list(_CENTRAL.unpack_from(entry.raw, 0))
    fields[3], fields[7], fields[8], fields[9], fields[16] = flags, crc, len(payload), len(content), offset
    record = _CENTRAL.pack(*fields) + entry.raw[_CENTRAL.size :]
    return local, record


_ZIP_EPOCH_DATE = (0 << 9) | (1 << 5) | 1  # MS-DOS date of 1980-01-01
_UTF8_NAME_FLAG = 0x0800
_VERSION_DEFLATE = 20


def _added_records(name: str, content: bytes, offset: int) -> tuple[bytes, bytes]:
    """The local record and central-directory record of a new deflated entry at `offset`."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    payload = compressor.compress(content) + compressor.flush()
    crc = zlib.crc32(content)
    raw_name = name.encode("utf-8")
    local = _LOCAL.pack(
        _LOCAL_SIGNATURE,
        _VERSION_DEFLATE,
        _UTF8_NAME_FLAG,
        _DEFLATED,
        0,
        _ZIP_EPOCH_DATE,
        crc,
        len(payload),
        len(content),
        len(raw_name),
        0,
    )
    record = _CENTRAL.pack(
        _CENTRAL_SIGNATURE,
        _VERSION_DEFLATE,
        _VERSION_DEFLATE,
        _UTF8_NAME_FLAG,
        _DEFLATED,
        0,
        _ZIP_EPOCH_DATE,
        crc,
        len(payload),
        len(content),
        len(raw_name),
        0,
        0,
        0,
        0,
        0,
        offset,
    )
    return local + raw_name + payload, record + raw_name


def _write_end_records(target: BinaryIO, count: int, cd_size: int, cd_offset: int, comment: bytes) -> None:
    """The end of central directory record, preceded by the ZIP64 pair when a field overflows."""
    if count >= _U16_MAX or cd_size >= _U32_MAX or cd_offset >= _U32_MAX:
        zip64_at = cd_offset + cd_size
        target.write(
            _ZIP64_EOCD.pack(
                _ZIP64_EOCD_SIGNATURE, _ZIP64_EOCD.size - 12, 45, 45, 0, 0, count, count, cd_size, cd_offset
            )
        )
        target.write(_ZIP64_LOCATOR.pack(_ZIP64_LOCATOR_SIGNATURE, 0, zip64_at, 1))
        count16, size32, offset32 = _U16_MAX, min(cd_size, _U32_MAX), min(cd_offset, _U32_MAX)
    else:
        count16, size32, offset32 = count, cd_size, cd_offset
    target.write(_EOCD.pack(_EOCD_SIGNATURE, 0, 0, count16, count16, size32, offset32, len(comment)) + comment)
