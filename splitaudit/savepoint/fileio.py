"""The one seam between the reader and storage: `_metadata` and the state files it names.

Local paths and URIs (`s3://`, `hdfs://`, `gs://`, `file:`) go through `pyarrow.fs`. Every path that comes out
of a file is confined: relative handles (tag 6) resolve inside the directory that holds `_metadata` (Flink's
`exclusiveDir`: splitaudit/savepoint/FORMAT.md, "Where state files are") and may never climb out of it, not
even through a symlink; absolute handles (tags 2 and 15) are read only when they point inside that directory,
or when the user passed `allow_external_state`. Nothing here writes, and nothing is ever executed or class-loaded.
"""

from __future__ import annotations

import os
import posixpath
from urllib.parse import urlparse

import pyarrow.fs as pafs

from splitaudit.errors import InputError

METADATA_FILE = "_metadata"


class SavepointFiles:
    """Read access to one savepoint/checkpoint directory (PATH may be the directory or its `_metadata`)."""

    def __init__(self, location: str, allow_external_state: bool = False) -> None:
        self.allow_external_state = allow_external_state
        self._cache: dict[str, bytes] = {}
        self.fs, path = self._filesystem(location)
        try:
            info = self.fs.get_file_info(path)
        except (OSError, ValueError) as ex:
            raise InputError(location, None, f"cannot open: {ex}") from None
        if info.type == pafs.FileType.NotFound:
            raise InputError(location, None, "no such file or directory")
        if info.type == pafs.FileType.Directory:
            self.directory = path.rstrip("/") or "/"
        else:
            self.directory = posixpath.dirname(path)
            if posixpath.basename(path) != METADATA_FILE:
                raise InputError(location, None, f"expected a savepoint directory or its {METADATA_FILE} file")
        self.metadata_path = posixpath.join(self.directory, METADATA_FILE)
        self._local = isinstance(self.fs, pafs.LocalFileSystem)
        if self._local:
            self._real_directory = os.path.realpath(self.directory)

    @staticmethod
    def _filesystem(location: str) -> tuple[pafs.FileSystem, str]:
        if "://" not in location and not location.startswith("file:"):
            return pafs.LocalFileSystem(), os.path.abspath(location)
        try:
            fs, path = pafs.FileSystem.from_uri(_normalize_file_uri(location))
        except (OSError, ValueError) as ex:
            raise InputError(location, None, f"unsupported location: {ex}") from None
        return fs, path

    def read_metadata(self) -> bytes:
        return self._read(self.metadata_path)

    def read_relative(self, relative_path: str, referenced_from: str, offset: int) -> tuple[str, bytes]:
        """A tag-6 handle: a file name inside the savepoint directory, never outside it."""
        if not relative_path or posixpath.isabs(relative_path) or "\\" in relative_path or "\0" in relative_path:
            raise InputError(referenced_from, offset, f"relative state path {relative_path!r} is not relative")
        resolved = posixpath.normpath(posixpath.join(self.directory, relative_path))
        if not self._inside(resolved):
            raise InputError(
                referenced_from,
                offset,
                f"relative state path {relative_path!r} points outside the savepoint dir",
            )
        return resolved, self._read(resolved, referenced_from, offset)

    def read_absolute(self, uri: str, referenced_from: str, offset: int) -> tuple[str, bytes]:
        """A tag-2/15 handle: a full path or URI; outside the savepoint dir only with allow_external_state."""
        if "\0" in uri:
            raise InputError(referenced_from, offset, f"state path {uri!r} contains a NUL character")
        fs, path = self._filesystem(uri) if ("://" in uri or uri.startswith("file:")) else (None, uri)
        same_fs = fs is None or type(fs) is type(self.fs)
        inside = same_fs and posixpath.isabs(path) and self._inside(posixpath.normpath(path))
        if not inside and not self.allow_external_state:
            raise InputError(
                referenced_from,
                offset,
                f"state file {uri} lies outside the savepoint directory; pass --allow-external-state to read it",
            )
        if inside or fs is None:
            return posixpath.normpath(path), self._read(posixpath.normpath(path), referenced_from, offset)
        return path, self._read_with(fs, path, uri, referenced_from, offset)

    def _inside(self, path: str) -> bool:
        if not (path == self.directory or path.startswith(self.directory.rstrip("/") + "/")):
            return False
        if self._local:  # a symlink inside the directory must not lead out of it
            real = os.path.realpath(path)
            return real.startswith(self._real_directory.rstrip("/") + "/")
        return True

    def _read(self, path: str, referenced_from: str | None = None, offset: int | None = None) -> bytes:
        return self._read_with(self.fs, path, path, referenced_from, offset)

    def _read_with(
        self, fs: pafs.FileSystem, path: str, shown: str, referenced_from: str | None, offset: int | None
    ) -> bytes:
        key = f"{type(fs).__name__}:{path}"
        if key not in self._cache:
            try:
                with fs.open_input_stream(path) as stream:
                    self._cache[key] = stream.read()
            except (OSError, ValueError) as ex:
                where = "" if referenced_from is None else f" (referenced at byte {offset} of {referenced_from})"
                raise InputError(shown, None, f"cannot read state file{where}: {_one_line(ex)}") from None
        return self._cache[key]


def _normalize_file_uri(uri: str) -> str:
    """Flink writes `file:/abs/path`; pyarrow wants `file:///abs/path`."""
    parsed = urlparse(uri)
    if parsed.scheme == "file" and not uri.startswith("file://"):
        return "file://" + parsed.path
    return uri


def _one_line(ex: BaseException) -> str:
    return str(ex).splitlines()[0] if str(ex) else type(ex).__name__
