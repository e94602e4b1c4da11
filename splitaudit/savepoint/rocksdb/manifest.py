"""The MANIFEST: a log (log.py) of `VersionEdit`s (`db/version_edit.cc`, RocksDB 6.20 to 8.10), and the live
files of each column family they add up to (`VersionSet::Recover`). `CURRENT` names the MANIFEST in use.

A VersionEdit is a sequence of `varint32 tag` and its fields:

| tag | field |
|---|---|
| 1 | comparator name (length-prefixed) |
| 2, 3, 4, 9, 10 | log number, next file number, last sequence, previous log number, min log number to keep (varint64) |
| 5 | compact cursor: varint32 level, length-prefixed internal key |
| 6 | deleted file: varint32 level, varint64 file number |
| 7, 100, 102 | new file: level, number, [102: path id], size, smallest, largest key, [100/102: sequences] |
| 103 | new file: as 100, then custom fields `varint32 tag, length-prefixed value` up to tag 1 |
| 200 | the column family the edit is about (varint32; 0 "default" when absent) |
| 201 | column family added, with its name (length-prefixed) |
| 202 | column family dropped |
| 203 | max column family (varint32) |
| 300 | in an atomic group (varint32 entries left) |
| 400, 401 | blob files (BlobDB; Flink does not use it): refused |
| >= 8192 (bit 13 set) | forward-compatible fields (DB id, WAL additions, ...): length-prefixed, skipped |

A custom field of tag 103 whose tag has bit 6 set and is not known (65 is the path id) must not be ignored, as
RocksDB itself refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.rocksdb.coding import length_prefixed, varint32, varint64
from splitaudit.savepoint.rocksdb.log import LogSource, log_records

COMPARATOR, LOG_NUMBER, NEXT_FILE_NUMBER, LAST_SEQUENCE, COMPACT_CURSOR = 1, 2, 3, 4, 5
DELETED_FILE, NEW_FILE, PREV_LOG_NUMBER, MIN_LOG_NUMBER_TO_KEEP = 6, 7, 9, 10
NEW_FILE2, NEW_FILE3, NEW_FILE4 = 100, 102, 103
COLUMN_FAMILY, COLUMN_FAMILY_ADD, COLUMN_FAMILY_DROP, MAX_COLUMN_FAMILY = 200, 201, 202, 203
IN_ATOMIC_GROUP = 300
BLOB_FILE_ADDITION, BLOB_FILE_GARBAGE = 400, 401
TAG_SAFE_IGNORE_MASK = 1 << 13
CUSTOM_TERMINATE, CUSTOM_PATH_ID = 1, 65
CUSTOM_NON_SAFE_IGNORE_MASK = 1 << 6
KNOWN_CUSTOM_TAGS = frozenset(range(2, 17)) | {CUSTOM_PATH_ID}
MAX_LEVELS = 64
DEFAULT_COLUMN_FAMILY = "default"


@dataclass(frozen=True)
class FileMetaData:
    """A table file of a column family: its number (`NNNNNN.sst`), level, size and key and sequence ranges."""

    number: int
    level: int
    size: int
    smallest: bytes
    largest: bytes
    smallest_sequence: int
    largest_sequence: int

    @property
    def file_name(self) -> str:
        """`MakeTableFileName`: the number, six digits at least, and `.sst`."""
        return f"{self.number:06d}.sst"


@dataclass(frozen=True)
class VersionEdit:
    """One decoded VersionEdit (only what the live files and the column families need)."""

    column_family: int
    added_column_family: str | None
    dropped_column_family: bool
    comparator: str | None
    log_number: int | None
    last_sequence: int | None
    new_files: tuple[FileMetaData, ...]
    deleted_files: tuple[tuple[int, int], ...]


@dataclass
class ColumnFamily:
    """A column family as the MANIFEST leaves it: its id, name, comparator and live files by number."""

    id: int
    name: str
    comparator: str | None = None
    files: dict[int, FileMetaData] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    """The state the MANIFEST adds up to: the live column families, the last sequence number, the log number."""

    column_families: tuple[ColumnFamily, ...]
    last_sequence: int
    log_number: int
    edits: int


def read_version_edit(data: DataInput) -> VersionEdit:
    """`VersionEdit::DecodeFrom`."""
    family = 0
    added: str | None = None
    dropped = False
    comparator: str | None = None
    log_number: int | None = None
    last_sequence: int | None = None
    new_files: list[FileMetaData] = []
    deleted: list[tuple[int, int]] = []
    while data.remaining():
        at = data.tell()
        tag = varint32(data, "VersionEdit tag")
        if tag == COMPARATOR:
            comparator = length_prefixed(data, "comparator name").decode("utf-8", "replace")
        elif tag == LOG_NUMBER:
            log_number = varint64(data, "log number")
        elif tag in (NEXT_FILE_NUMBER, PREV_LOG_NUMBER, MIN_LOG_NUMBER_TO_KEEP):
            varint64(data, "file number")
        elif tag == LAST_SEQUENCE:
            last_sequence = varint64(data, "last sequence")
        elif tag == COMPACT_CURSOR:
            _level(data)
            length_prefixed(data, "compact cursor key")
        elif tag == DELETED_FILE:
            deleted.append((_level(data), varint64(data, "deleted file number")))
        elif tag in (NEW_FILE, NEW_FILE2, NEW_FILE3, NEW_FILE4):
            new_files.append(_new_file(data, tag))
        elif tag == COLUMN_FAMILY:
            family = varint32(data, "column family id")
        elif tag == COLUMN_FAMILY_ADD:
            added = length_prefixed(data, "column family name").decode("utf-8", "replace")
        elif tag == COLUMN_FAMILY_DROP:
            dropped = True
        elif tag in (MAX_COLUMN_FAMILY, IN_ATOMIC_GROUP):
            varint32(data, "VersionEdit field")
        elif tag in (BLOB_FILE_ADDITION, BLOB_FILE_GARBAGE):
            raise data.error("the MANIFEST names blob files (BlobDB): Flink does not write them, not read", at)
        elif tag & TAG_SAFE_IGNORE_MASK:
            length_prefixed(data, f"VersionEdit field {tag}")
        else:
            raise data.error(f"unknown VersionEdit tag {tag}", at)
    return VersionEdit(family, added, dropped, comparator, log_number, last_sequence, tuple(new_files), tuple(deleted))


def _level(data: DataInput) -> int:
    at = data.tell()
    level = varint32(data, "level")
    if level >= MAX_LEVELS:
        raise data.error(f"level {level}", at)
    return level


def _new_file(data: DataInput, tag: int) -> FileMetaData:
    level = _level(data)
    number = varint64(data, "file number")
    if tag == NEW_FILE3:
        varint32(data, "path id")
    size = varint64(data, "file size")
    smallest = length_prefixed(data, "smallest key")
    largest = length_prefixed(data, "largest key")
    smallest_sequence, largest_sequence = 0, 0
    if tag != NEW_FILE:
        smallest_sequence = varint64(data, "smallest sequence")
        largest_sequence = varint64(data, "largest sequence")
    if tag == NEW_FILE4:
        while True:
            at = data.tell()
            custom = varint32(data, "new file field tag")
            if custom == CUSTOM_TERMINATE:
                break
            length_prefixed(data, f"new file field {custom}")
            if custom & CUSTOM_NON_SAFE_IGNORE_MASK and custom not in KNOWN_CUSTOM_TAGS:
                raise data.error(f"new file field {custom} must be understood and is not", at)
    return FileMetaData(number, level, size, smallest, largest, smallest_sequence, largest_sequence)


def read_manifest(source: LogSource, name: str) -> Manifest:
    """Every VersionEdit of the MANIFEST applied in order, as `VersionSet::Recover` does: files added and deleted
    per column family, column families added and dropped."""
    families: dict[int, ColumnFamily] = {0: ColumnFamily(0, DEFAULT_COLUMN_FAMILY)}
    last_sequence = 0
    log_number = 0
    count = 0
    for data in log_records(source, name):
        path, offset = data.path, data.base
        edit = read_version_edit(data)
        count += 1
        family = families.get(edit.column_family)

        if edit.added_column_family is not None:
            if family is not None:
                raise InputError(path, offset, f"column family {edit.column_family} added twice")
            families[edit.column_family] = ColumnFamily(edit.column_family, edit.added_column_family, edit.comparator)
            continue
        if family is None:
            raise InputError(path, offset, f"an edit of column family {edit.column_family}, never added")
        if edit.dropped_column_family:
            if edit.column_family == 0:
                raise InputError(path, offset, "the default column family is dropped")
            del families[edit.column_family]
            continue
        if edit.comparator is not None:
            family.comparator = edit.comparator
        for level, number in edit.deleted_files:
            existing = family.files.get(number)
            if existing is None or existing.level != level:
                raise InputError(path, offset, f"file {number} is not in level {level} of {family.name!r}")
            del family.files[number]
        for new in edit.new_files:
            family.files[new.number] = new
        if edit.last_sequence is not None:
            last_sequence = edit.last_sequence
        if edit.log_number is not None:
            log_number = edit.log_number
    return Manifest(tuple(families[key] for key in sorted(families)), last_sequence, log_number, count)
