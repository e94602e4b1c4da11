"""Flink's `FileSource` (flink-connector-files): reader splits and the enumerator's pending-splits checkpoint.

`FileSourceSplitSerializer` (VERSION 1) and `PendingSplitsCheckpointSerializer` (VERSION 1, its magic 0xDEADBEEF
and every int of its frame little-endian, the splits inside it big-endian `DataOutputSerializer` bytes) of
`org.apache.flink.connector.file.src`, as flink-connector-files 1.19.3 writes them (read from its released
classes; other releases are not checked). Verified on a real savepoint of a continuously monitoring `FileSource`
on Flink 1.19.3 (fixtures/flink_file/). Layouts in splitaudit/splits/FORMAT.md.

A "partition" of a file source, as the audit's tables and the assignment check see it, is a region of one file:
`topic` is the file's path (as Flink's `Path.toString` writes it, the form the enumerator's processed paths take)
and `partition` the split's start byte in that file. Two splits naming the same region read the same lines twice,
whatever their split ids (a file discovered again is given a new id). The split id stays in the row.

A position (`CheckpointedPosition`) is where a reader resumes inside its split: a byte `offset` from which to
read (or `NO_OFFSET`, -1, when the format cannot seek, as a `StreamFormat` such as `TextLineInputFormat` cannot),
then `records_after_offset` records to skip. A split with no position is read from its start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from splitaudit.primitives.datainput import DataInput
from splitaudit.splits.model import FINISHED, PENDING, EnumeratorEntry, PartitionRow, SourceFile

SPLIT_SERIALIZER_VERSION = 1  # FileSourceSplitSerializer.VERSION
ENUMERATOR_VERSIONS = (1,)  # PendingSplitsCheckpointSerializer.VERSION
CHECKPOINT_MAGIC = 0xDEADBEEF  # PendingSplitsCheckpointSerializer.VERSION_1_MAGIC_NUMBER, written little-endian
NO_OFFSET = -1  # CheckpointedPosition.NO_OFFSET
NO_PORT = -1  # java.net.URI.getPort() of a URI without one
# The least a split takes: id length, path flag, six absent URI parts and the port, offset/length/time/size, no
# hostnames, no position.
MIN_SPLIT_BYTES = 2 + 1 + 6 + 4 + 8 * 4 + 4 + 1
_WINDOWS_DRIVE = re.compile(r"/[A-Za-z]:")  # Path.hasWindowsDrive(path, slashed=true)


@dataclass(frozen=True)
class FlinkPath:
    """`org.apache.flink.core.fs.Path` as `Path.serializeToDataOutputView` writes it: its `java.net.URI`'s
    scheme, user info, host, port, path, query and fragment (`StringUtils.writeNullableString` each, the port
    an int)."""

    scheme: str | None
    user_info: str | None
    host: str | None
    port: int
    path: str | None
    query: str | None
    fragment: str | None

    def __str__(self) -> str:
        """`Path.toString()`: `scheme:`, `//authority`, then the path (a Windows drive's leading slash dropped when
        there is neither scheme nor authority); Flink leaves the query and the fragment out."""
        text = f"{self.scheme}:" if self.scheme is not None else ""
        if self.host is not None:
            user = f"{self.user_info}@" if self.user_info is not None else ""
            port = f":{self.port}" if self.port != NO_PORT else ""
            text += f"//{user}{self.host}{port}"
        path = self.path or ""
        if self.scheme is None and self.host is None and _WINDOWS_DRIVE.match(path):
            path = path[1:]
        return text + path

    def local_path(self) -> str | None:
        """The path on the local file system (`file:` or no scheme, no authority), else None."""
        if self.scheme not in (None, "file") or self.host is not None or self.path is None:
            return None
        return str(self)[len("file:") :] if self.scheme == "file" else str(self)


@dataclass(frozen=True)
class CheckpointedPosition:
    """`org.apache.flink.connector.file.src.util.CheckpointedPosition`: `long offset, long recordsAfterOffset`."""

    offset: int  # NO_OFFSET when the format cannot seek
    records_after_offset: int

    def to_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "records_after_offset": self.records_after_offset}


@dataclass(frozen=True)
class FileSourceSplit:
    """`FileSourceSplit`: `UTF id, Path path, long offset, long length, long fileModificationTime, long fileSize,
    int n + n x UTF hostname, boolean hasPosition [long offset, long recordsAfterOffset]`.

    `offset` and `length` are the byte range of the file the split covers; `position` where its reader resumes.
    """

    type: ClassVar[str] = "flink_file"
    split_id: str
    path: FlinkPath
    offset: int
    length: int
    file_modification_time: int  # epoch milliseconds
    file_size: int
    hostnames: tuple[str, ...]
    position: CheckpointedPosition | None

    def to_json(self) -> dict[str, Any]:
        return {
            "split_id": self.split_id,
            "path": str(self.path),
            "offset": self.offset,
            "length": self.length,
            "file_modification_time": self.file_modification_time,
            "file_size": self.file_size,
            "hostnames": list(self.hostnames),
            "position": None if self.position is None else self.position.to_json(),
        }

    def next_offset(self) -> int | None:
        """The position as one number where that is unambiguous: the records to skip from the split's start when
        the format cannot seek (`NO_OFFSET`), the byte offset when no records follow it; else (no position yet,
        or a byte offset plus records) None, and the JSON has the whole position."""
        position = self.position
        if position is None:
            return None
        if position.offset == NO_OFFSET:
            return position.records_after_offset
        return position.offset if position.records_after_offset == 0 else None

    def partition_rows(self) -> tuple[PartitionRow, ...]:
        """One row: the file's path and the split's start byte (see the module docstring); no stopping offset."""
        return (PartitionRow(self.type, self.split_id, str(self.path), self.offset, self.next_offset()),)

    def source_files(self) -> tuple[SourceFile, ...]:
        """The split's file, with the size and modification time the enumerator saw when it made the split."""
        return (SourceFile(str(self.path), self.path.local_path(), self.file_size, self.file_modification_time),)


@dataclass(frozen=True)
class PendingSplitsCheckpoint:
    """`PendingSplitsCheckpoint`: the splits the enumerator has not handed out yet, and the paths it has
    already processed (every file a continuous enumerator has found, so it never enumerates one twice; those
    of held and pending splits included)."""

    type: ClassVar[str] = "flink_file"
    split_serializer_version: int
    splits: tuple[FileSourceSplit, ...]
    processed_paths: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "split_serializer_version": self.split_serializer_version,
            "splits": [split.to_json() for split in self.splits],
            "processed_paths": list(self.processed_paths),
        }

    def enumerator_entries(self) -> tuple[EnumeratorEntry, ...]:
        """The pending splits, then each processed path no pending split names as `FINISHED` (one row, the whole
        file: partition None). A processed path is also the file of every split a reader holds (the checkpoint
        cannot tell), so the audit reads `FINISHED` as "not read again", never as "read to its end"."""
        pending = tuple(EnumeratorEntry(None, PENDING, split.partition_rows()) for split in self.splits)
        waiting = {str(split.path) for split in self.splits}
        finished = tuple(
            EnumeratorEntry(None, FINISHED, (PartitionRow(self.type, None, path, None, None),))
            for path in self.processed_paths
            if path not in waiting
        )
        return pending + finished

    def source_files(self) -> tuple[SourceFile, ...]:
        """The pending splits' files; a processed path alone is read already (or held by a reader's split)."""
        return tuple(file for split in self.splits for file in split.source_files())


def _read_nullable_string(inp: DataInput, what: str) -> str | None:
    """`StringUtils.readNullableString`: a boolean, then a `StringValue` string when true."""
    if not inp.read_bool(f"{what} present"):
        return None
    at = inp.tell()
    text = inp.read_string_value(what)
    if text is None:
        raise inp.error(f"{what} is marked present but null", at)
    return text


def _read_path(inp: DataInput) -> FlinkPath:
    at = inp.tell()
    if not inp.read_bool("split path present"):
        raise inp.error("a FileSourceSplit without a path", at)
    return FlinkPath(
        _read_nullable_string(inp, "path scheme"),
        _read_nullable_string(inp, "path user info"),
        _read_nullable_string(inp, "path host"),
        inp.read_int("path port"),
        _read_nullable_string(inp, "path"),
        _read_nullable_string(inp, "path query"),
        _read_nullable_string(inp, "path fragment"),
    )


def decode_split(inp: DataInput) -> FileSourceSplit:
    split_id = inp.read_utf("split id")
    path = _read_path(inp)
    offset = inp.read_long("split offset")
    length = inp.read_long("split length")
    modification_time = inp.read_long("file modification time")
    file_size = inp.read_long("file size")
    hostnames = tuple(inp.read_utf("hostname") for _ in range(inp.read_length("number of hostnames", 2)))
    position = None
    if inp.read_bool("has reader position"):
        position = CheckpointedPosition(inp.read_long("position offset"), inp.read_long("records after offset"))
    inp.expect_end("the FileSourceSplit")
    return FileSourceSplit(split_id, path, offset, length, modification_time, file_size, hostnames, position)


def _read_le_int(inp: DataInput, what: str) -> int:
    return int.from_bytes(inp.read_bytes(4, what), "little", signed=True)


def _read_le_count(inp: DataInput, what: str, element_size: int) -> int:
    """A little-endian `int` count whose elements (each at least `element_size` bytes) must fit in what is left."""
    at = inp.tell()
    count = _read_le_int(inp, what)
    if count < 0 or count * element_size > inp.remaining():
        raise inp.error(f"{what} {count} does not fit in the {inp.remaining()} bytes left", at)
    return count


def decode_enumerator(inp: DataInput, version: int) -> PendingSplitsCheckpoint:
    if version not in ENUMERATOR_VERSIONS:
        raise inp.error(f"PendingSplitsCheckpoint serializer version {version} is unknown", 0)
    at = inp.tell()
    magic = int.from_bytes(inp.read_bytes(4, "checkpoint magic"), "little")
    if magic != CHECKPOINT_MAGIC:
        raise inp.error(f"not a PendingSplitsCheckpoint: magic {magic:08X}, expected {CHECKPOINT_MAGIC:08X}", at)
    at = inp.tell()
    split_version = _read_le_int(inp, "split serializer version")
    if split_version != SPLIT_SERIALIZER_VERSION:
        raise inp.error(f"FileSourceSplit serializer version {split_version} is unknown", at)
    split_count = _read_le_count(inp, "number of pending splits", 4 + MIN_SPLIT_BYTES)
    path_count = _read_le_count(inp, "number of processed paths", 4)
    splits = []
    for _ in range(split_count):
        length = _read_le_count(inp, "split length", 1)
        splits.append(decode_split(inp.sub(length, "FileSourceSplit")))
    paths = []
    for _ in range(path_count):
        at = inp.tell()
        raw = inp.read_bytes(_read_le_count(inp, "processed path length", 1), "processed path")
        try:
            paths.append(raw.decode("utf-8"))
        except UnicodeDecodeError as ex:
            raise inp.error(f"processed path is not UTF-8 ({ex.reason})", at) from None
    inp.expect_end("the PendingSplitsCheckpoint")
    return PendingSplitsCheckpoint(split_version, tuple(splits), tuple(paths))
