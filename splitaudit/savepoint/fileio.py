"""The one seam between the reader and storage: `_metadata` and the state files it names.

Local paths and `file:` URIs are read with `os` and `open()`; other URIs (`s3://`, `hdfs://`, `gs://`) go
through `pyarrow.fs`, imported only then (it costs about a second of start-up that a local `inspect` does not
need). Every path that comes out
of a file is confined: relative handles (tag 6) resolve inside the directory that holds `_metadata` (Flink's
`exclusiveDir`: splitaudit/savepoint/FORMAT.md, "Where state files are") and may never climb out of it, not
even through a symlink; absolute handles (tags 2 and 15) are read only when they point inside that directory
(for a retained checkpoint `chk-N`, also inside its sibling `shared/` and `taskowned/` folders, where incremental
RocksDB checkpoints keep the files they share), or when the user passed `allow_external_state`. Nothing here
writes, and nothing is ever executed or class-loaded.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO
from urllib.parse import urlparse

from splitaudit.errors import InputError, summary

if TYPE_CHECKING:
    import pyarrow.fs as pafs


METADATA_FILE = "_metadata"
# The largest _metadata or state file read, unless the user raises it (`--max-file-size`): real savepoints hold
# megabytes; a file claiming more is far more likely damaged or hostile than real.
DEFAULT_MAX_FILE_SIZE = 1 << 30
CHUNK = 8 << 20  # files are read in pieces this large, never in one read of an unchecked size
CHECKPOINT_SHARED_FOLDERS = ("shared", "taskowned")
_CHECKPOINT_DIR = re.compile(r"chk-[0-9]+")


@dataclass(frozen=True)
class SavepointOptions:
    """How to read savepoints: which operators (uids of 1.x files) and whether state outside the dir is read."""

    uids: tuple[str, ...] = ()
    allow_external_state: bool = False
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # the largest _metadata or state file read (`--max-file-size`)


class SavepointFiles:
    """Read access to one savepoint/checkpoint directory (PATH may be the directory or its `_metadata`).

    Only regular files are read (a FIFO, socket or device is refused before it is opened, so nothing blocks),
    each no larger than `max_file_size` and, for a state file, exactly as large as its handle says. A path
    that comes out of a file is judged by its text first: a URI or path outside the savepoint directory is
    refused before anything resolves it (no DNS lookup, no connection, no JVM), unless `allow_external_state`.
    """

    def __init__(
        self, location: str, allow_external_state: bool = False, max_file_size: int = DEFAULT_MAX_FILE_SIZE
    ) -> None:
        self.allow_external_state = allow_external_state
        self.max_file_size = max_file_size
        self._cache: dict[str, bytes] = {}
        self.scheme = _scheme(location)
        # None: the local disk (os and open()); otherwise the pyarrow filesystem of the URI.
        self.fs, path = filesystem_of(location)
        if _is_directory(self.fs, path, location):
            self.directory = path.rstrip("/") or "/"
        else:
            self.directory = posixpath.dirname(path)
            if posixpath.basename(path) != METADATA_FILE:
                raise InputError(location, None, f"expected a savepoint directory or its {METADATA_FILE} file")
        self.metadata_path = posixpath.join(self.directory, METADATA_FILE)
        self._local = self.fs is None
        if self._local:
            self._real_directory = os.path.realpath(self.directory)
        # A retained checkpoint `chk-N` shares files with its job's other checkpoints in the sibling `shared/`
        # (incremental RocksDB SST files) and `taskowned/` folders of `CheckpointStorageLocation`s: readable too.
        parent = posixpath.dirname(self.directory)
        self._checkpoint_folders = (
            tuple(posixpath.join(parent, name) for name in CHECKPOINT_SHARED_FOLDERS)
            if _CHECKPOINT_DIR.fullmatch(posixpath.basename(self.directory))
            else ()
        )

    def read_metadata(self) -> bytes:
        return self._read(self.fs, self.metadata_path, self.metadata_path, None, None, None)

    def read_relative(
        self, relative_path: str, size: int, referenced_from: str, offset: int, span: tuple[int, int] | None = None
    ) -> tuple[str, bytes]:
        """A tag-6 handle: a file name inside the savepoint directory, never outside it, `size` bytes long.

        With `span` (start, length) only those bytes are read, and nothing is cached: keyed state is read one
        key group at a time."""
        if not relative_path or posixpath.isabs(relative_path) or "\\" in relative_path or "\0" in relative_path:
            raise InputError(referenced_from, offset, f"relative state path {relative_path!r} is not relative")
        resolved = posixpath.normpath(posixpath.join(self.directory, relative_path))
        if not self._inside(resolved):
            raise InputError(
                referenced_from,
                offset,
                f"relative state path {relative_path!r} points outside the savepoint dir",
            )
        if span is not None:
            return resolved, self._read(self.fs, resolved, resolved, (0, size), referenced_from, offset, part=span)
        return resolved, self._read(self.fs, resolved, resolved, (0, size), referenced_from, offset)

    def read_absolute(
        self,
        uri: str,
        span: tuple[int, int] | None,
        referenced_from: str,
        offset: int,
        whole: bool = True,
        part: tuple[int, int] | None = None,
    ) -> tuple[str, bytes]:
        """A tag-2/15 handle: a full path or URI; outside the savepoint dir only with allow_external_state.

        `span` is (start, length) of the bytes wanted, None for the whole file whatever its size (a changelog
        file, whose handle records the size of its uncompressed stream); `whole` says the handle names the whole
        file (its size must then be exactly the length). Confinement is decided on the text of `uri`: nothing
        resolves a path the user did not allow. With `part` (start, length within the file) only those bytes are
        read, uncached.
        """
        if "\0" in uri:
            raise InputError(referenced_from, offset, f"state path {uri!r} contains a NUL character")
        path = self._own_path(uri)
        if path is not None and (
            self._inside(path) or any(self._inside(path, folder) for folder in self._checkpoint_folders)
        ):
            return path, self._read(self.fs, path, path, span, referenced_from, offset, whole, part)
        if not self.allow_external_state:
            raise InputError(
                referenced_from,
                offset,
                f"state file {uri!r} lies outside the savepoint directory; pass --allow-external-state to read it",
            )
        fs, resolved = filesystem_of(uri) if _scheme(uri) else (self.fs, posixpath.normpath(uri))
        return resolved, self._read(fs, resolved, uri, span, referenced_from, offset, whole, part)

    def _own_path(self, uri: str) -> str | None:
        """`uri` as a path of this savepoint's own filesystem, without resolving anything; None if it is not one."""
        scheme = _scheme(uri)
        if not scheme:
            return posixpath.normpath(uri) if posixpath.isabs(uri) else None
        parsed = urlparse(uri)
        if scheme == "file" and self._local:
            return posixpath.normpath(parsed.path) if parsed.netloc in ("", "localhost") else None
        if scheme != self.scheme or self._local:
            return None
        return posixpath.normpath(f"{parsed.netloc}{parsed.path}")

    def _inside(self, path: str, directory: str | None = None) -> bool:
        """Whether `path` lies in the savepoint directory (or in `directory`), also once symlinks are resolved."""
        directory = self.directory if directory is None else directory
        if not (path == directory or path.startswith(directory.rstrip("/") + "/")):
            return False
        if self._local:  # a symlink inside the directory must not lead out of it
            real = os.path.realpath(path)
            root = self._real_directory if directory == self.directory else os.path.realpath(directory)
            return real.startswith(root.rstrip("/") + "/")
        return True

    def _read(
        self,
        fs: pafs.FileSystem | None,
        path: str,
        shown: str,
        span: tuple[int, int] | None,
        referenced_from: str | None,
        offset: int | None,
        whole: bool = True,
        part: tuple[int, int] | None = None,
    ) -> bytes:
        """The bytes of a regular file (`span` = (start, length) of them, or all), bounded and checked; with
        `part` only those bytes of the file (which must lie within `span`), read without caching the file."""
        key = f"{type(fs).__name__}:{path}"  # NoneType: the local disk
        if part is not None and key not in self._cache:
            return self._read_part(fs, path, shown, span, referenced_from, offset, whole, part)
        if key not in self._cache:
            where = "" if referenced_from is None else f" (referenced at byte {offset} of {referenced_from})"
            kind = "state file" if referenced_from is not None else "file"
            size = self._bounded_size(fs, path, shown, kind, where)
            if span is not None and whole and span[1] != size:
                raise InputError(shown, None, f"{kind} is {size} bytes, its state handle says {span[1]}{where}")
            if span is not None and span[0] + span[1] > size:
                raise InputError(
                    shown, None, f"{kind} of {size} bytes has no bytes [{span[0]}, {span[0] + span[1]}){where}"
                )
            try:
                with open(path, "rb") if fs is None else fs.open_input_file(path) as stream:
                    self._cache[key] = _read_bounded(stream, size)
            except (OSError, ValueError) as ex:
                raise InputError(shown, None, f"cannot read {kind}{where}: {summary(ex)}") from None
        data = self._cache[key]
        return data if span is None or whole else data[span[0] : span[0] + span[1]]

    def _read_part(
        self,
        fs: pafs.FileSystem | None,
        path: str,
        shown: str,
        span: tuple[int, int] | None,
        referenced_from: str | None,
        offset: int | None,
        whole: bool,
        part: tuple[int, int],
    ) -> bytes:
        where = "" if referenced_from is None else f" (referenced at byte {offset} of {referenced_from})"
        size = self._bounded_size(fs, path, shown, "state file", where)
        if span is not None and whole and span[1] != size:
            raise InputError(shown, None, f"state file is {size} bytes, its state handle says {span[1]}{where}")
        low, high = (0, size) if span is None else (span[0], span[0] + span[1])
        if part[0] < low or part[1] < 0 or part[0] + part[1] > min(high, size):
            raise InputError(shown, part[0], f"no bytes [{part[0]}, {part[0] + part[1]}) in the state{where}")
        try:
            with open(path, "rb") if fs is None else fs.open_input_file(path) as stream:
                stream.seek(part[0])
                return _read_bounded(stream, part[1])
        except (OSError, ValueError) as ex:
            raise InputError(shown, None, f"cannot read state file{where}: {summary(ex)}") from None

    def _bounded_size(self, fs: pafs.FileSystem | None, path: str, shown: str, kind: str, where: str) -> int:
        """The size of `path` if it is a regular file no larger than `max_file_size`: the same bound whether the
        file is read whole or by byte range (keyed state, a key group at a time)."""
        size = self._regular_file_size(fs, path, shown, kind, where)
        if size > self.max_file_size:
            raise InputError(
                shown, None, f"{kind} of {size} bytes is larger than --max-file-size {self.max_file_size}{where}"
            )
        return size

    def _regular_file_size(self, fs: pafs.FileSystem | None, path: str, shown: str, kind: str, where: str) -> int:
        """The size of `path` if it is a regular file; anything else (missing, a directory, a FIFO, a socket,
        a device, also behind a symlink) is refused without opening it."""
        if fs is None:
            try:
                status = os.stat(path)
            except OSError as ex:
                raise InputError(shown, None, f"cannot read {kind}{where}: {ex.strerror}") from None
            if not stat.S_ISREG(status.st_mode):
                raise InputError(shown, None, f"{kind} is {_file_type(status.st_mode)}, not a regular file{where}")
            return status.st_size
        try:
            info = fs.get_file_info(path)
        except (OSError, ValueError) as ex:
            raise InputError(shown, None, f"cannot read {kind}{where}: {summary(ex)}") from None
        if info.type.name == "NotFound":
            raise InputError(shown, None, f"no such {kind}{where}")
        if info.type.name != "File":
            raise InputError(shown, None, f"{kind} is not a regular file{where}")
        return int(info.size)


def filesystem_of(location: str) -> tuple[pafs.FileSystem | None, str]:
    """The filesystem of `location` (None: the local disk) and the path on it."""
    if not _scheme(location):
        return None, os.path.abspath(location)
    local = local_file_uri_path(location)
    if local is not None:
        return None, local
    import pyarrow.fs as pafs  # a second of start-up: only for remote URIs

    try:
        parsed = urlparse(location)
        if parsed.scheme == "s3" and not parsed.query:
            return s3_filesystem(os.environ), posixpath.normpath(f"{parsed.netloc}/{parsed.path.lstrip('/')}")
        fs, path = pafs.FileSystem.from_uri(location)
    except (OSError, ValueError) as ex:
        raise InputError(location, None, f"unsupported location: {summary(ex)}") from None
    return fs, path


def metadata_written_at(location: str) -> float:
    """When a savepoint's `_metadata` was written (its modification time, seconds since the epoch): Flink writes
    it last, once every state file of the savepoint is in place, so it is the savepoint's time."""
    fs, path = filesystem_of(location)
    if _is_directory(fs, path, location):
        path = posixpath.join(path, METADATA_FILE)
    try:
        if fs is None:
            return os.stat(path).st_mtime
        info = fs.get_file_info(path)
    except (OSError, ValueError) as ex:
        raise InputError(path, None, f"cannot read the file's time: {summary(ex)}") from None
    if info.mtime is None:
        raise InputError(path, None, "the store gives no modification time")
    return float(info.mtime.timestamp())


@dataclass(frozen=True)
class ListedFile:
    """One regular file under a listed directory: its path relative to it ('/'-separated), size and time."""

    relative: str
    size: int
    modified: float  # seconds since the epoch


def list_tree(location: str) -> tuple[ListedFile, ...]:
    """Every regular file under the directory `location` (hidden ones too), sorted by path; symlinks are not
    followed, so the listing stays inside the directory. A missing or non-directory location is bad input."""
    fs, root = filesystem_of(location)
    if not _is_directory(fs, root, location):
        raise InputError(location, None, "expected a directory")
    listed: list[ListedFile] = []
    if fs is None:
        for folder, _, names in os.walk(root, followlinks=False):
            for name in names:
                full = os.path.join(folder, name)
                status = os.lstat(full)
                if stat.S_ISREG(status.st_mode):
                    relative = os.path.relpath(full, root).replace(os.sep, "/")
                    listed.append(ListedFile(relative, status.st_size, status.st_mtime))
    else:
        import pyarrow.fs as pafs

        try:
            infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
        except (OSError, ValueError) as ex:
            raise InputError(location, None, f"cannot list: {summary(ex)}") from None
        for info in infos:
            if info.type == pafs.FileType.File:
                modified = 0.0 if info.mtime is None else float(info.mtime.timestamp())
                relative = posixpath.relpath(info.path, root.rstrip("/") or "/")
                listed.append(ListedFile(relative, int(info.size or 0), modified))
    return tuple(sorted(listed, key=lambda f: f.relative))


def s3_filesystem(environment: Mapping[str, str]) -> pafs.S3FileSystem:
    """The S3 client for `s3://` locations, configured as AWS's own tools are, from the standard variables.

    `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` (an S3-compatible store: MinIO, S3Proxy, Ceph; `http://` or
    `https://`, requests path-style) and `AWS_REGION` or `AWS_DEFAULT_REGION` (else us-east-1 with an
    endpoint); credentials come from AWS's default chain (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    `AWS_SESSION_TOKEN`, `AWS_PROFILE` and ~/.aws, instance roles). A location with a query string
    (`s3://b/sp?endpoint_override=host:port&scheme=http`) is configured by pyarrow from its options instead.
    """
    import pyarrow.fs as pafs  # a second of start-up: only for s3:// locations

    endpoint = environment.get("AWS_ENDPOINT_URL_S3") or environment.get("AWS_ENDPOINT_URL")
    region = environment.get("AWS_REGION") or environment.get("AWS_DEFAULT_REGION")
    if not endpoint:
        return pafs.S3FileSystem(region=region) if region else pafs.S3FileSystem()
    parsed = urlparse(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"AWS_ENDPOINT_URL {endpoint!r} is not an http:// or https:// URL")
    return pafs.S3FileSystem(endpoint_override=parsed.netloc, scheme=parsed.scheme, region=region or "us-east-1")


def _is_directory(fs: pafs.FileSystem | None, path: str, location: str) -> bool:
    """Whether the savepoint location names a directory (else a file); missing or unreadable is bad input."""
    if fs is None:
        try:
            return stat.S_ISDIR(os.stat(path).st_mode)
        except FileNotFoundError:
            raise InputError(location, None, "no such file or directory") from None
        except (OSError, ValueError) as ex:
            raise InputError(location, None, f"cannot open: {summary(ex)}") from None
    try:
        info = fs.get_file_info(path)
    except (OSError, ValueError) as ex:
        raise InputError(location, None, f"cannot open: {summary(ex)}") from None
    if info.type.name == "NotFound":
        raise InputError(location, None, "no such file or directory")
    return bool(info.type.name == "Directory")


def _read_bounded(stream: BinaryIO | pafs.NativeFile, size: int) -> bytes:
    """Exactly `size` bytes, in chunks; a file that changed size while read is an error, not a surprise."""
    parts = []
    left = size
    while left:
        chunk = stream.read(min(CHUNK, left))
        if not chunk:
            raise ValueError(f"the file ended {left} bytes early")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def _scheme(location: str) -> str:
    """The URI scheme of `location` (`s3`, `hdfs`, `file`, …), or "" for a plain path (a drive letter is none)."""
    scheme = urlparse(location).scheme
    return scheme.lower() if len(scheme) > 1 else ""


def local_file_uri_path(uri: str) -> str | None:
    """The local path of a `file:` URI (Flink writes `file:/abs/path`; also `file:///abs/path` and
    `file://localhost/abs/path`), or None for any other URI."""
    parsed = urlparse(uri)
    if parsed.scheme.lower() != "file" or parsed.netloc not in ("", "localhost"):
        return None
    if not posixpath.isabs(parsed.path):
        raise InputError(uri, None, "unsupported location: a file: URI needs an absolute path")
    return posixpath.normpath(parsed.path)


def absolute_location(location: str) -> str:
    """`location` as any process on this machine reads it, whatever its working directory: a relative local path
    made absolute against this process's; a URI as given. (A Spark executor runs in its worker's work dir.)"""
    return location if _scheme(location) else os.path.abspath(location)
