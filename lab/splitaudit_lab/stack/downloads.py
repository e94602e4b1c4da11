"""The stack lock's files, downloaded once into the stack home's downloads/ folder and checked against the lock.

PyPI's files come from their locked URL; Maven's from Maven Central, or from the repository
`$SPLITAUDIT_MAVEN_REPOSITORY` names (a mirror, same layout). A file is streamed into `<name>.part`, never past
the size the lock gives, its SHA-256 checked, then renamed into place; a file already there with the lock's hash
is used as it is, so a second setup downloads nothing and works offline.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import requests

from splitaudit.errors import ExternalError
from splitaudit_lab.stack.lock import LockedFile
from splitaudit_lab.stack.results import mib

MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"
MAVEN_REPOSITORY_VARIABLE = "SPLITAUDIT_MAVEN_REPOSITORY"
_CHUNK = 1 << 20
_TIMEOUT = (30.0, 120.0)  # seconds to connect, and between two reads of the body


def maven_repository() -> str:
    """The Maven repository locked Maven files come from: `$SPLITAUDIT_MAVEN_REPOSITORY`, else Maven Central."""
    return (os.environ.get(MAVEN_REPOSITORY_VARIABLE) or MAVEN_CENTRAL).rstrip("/")


def source_url(file: LockedFile) -> str:
    """Where a locked file is downloaded from."""
    return file.url if file.url is not None else f"{maven_repository()}/{file.path}"


def local_path(file: LockedFile, folder: Path) -> Path:
    """Where a locked file is kept in the downloads folder `folder`."""
    return folder / file.download_path


def fetch(file: LockedFile, folder: Path, session: requests.Session) -> int:
    """Make `file` present in `folder` with the lock's hash, downloading it through `session` (one for all the files
    of a setup: its connections are reused) unless it already is; the number of bytes downloaded (0 when the file
    was there)."""
    target = local_path(file, folder)
    if target.is_file() and target.stat().st_size == file.size and _sha256(target) == file.sha256:
        return 0
    url = source_url(file)
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(f"{target.name}.part")
    try:
        received = _stream(session, url, part, file)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    part.replace(target)
    return received


def _stream(session: requests.Session, url: str, part: Path, file: LockedFile) -> int:
    """Download `url` into `part`, refusing a body longer than the lock's size or with another SHA-256."""
    digest = hashlib.sha256()
    received = 0
    try:
        with session.get(url, stream=True, timeout=_TIMEOUT) as response:
            if response.status_code != 200:
                raise ExternalError(f"download of {url} failed: HTTP {response.status_code} {response.reason}")
            with part.open("wb") as out:
                for chunk in response.iter_content(_CHUNK):
                    received += len(chunk)
                    if received > file.size:
                        raise ExternalError(
                            f"download of {url} refused: it is longer than the {file.size} bytes the stack lock says"
                        )
                    digest.update(chunk)
                    out.write(chunk)
    except requests.RequestException as ex:
        raise ExternalError(f"download of {url} failed: {ex}") from None
    if received != file.size:
        raise ExternalError(f"download of {url} failed: {received} bytes of the {file.size} the stack lock says")
    if digest.hexdigest() != file.sha256:
        raise ExternalError(
            f"download of {url} refused: its SHA-256 is {digest.hexdigest()}, the stack lock says {file.sha256}"
        )
    return received


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        while chunk := data.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class PlannedDownload:
    """What one component still has to download: how many files, how many bytes."""

    component: str
    files: int
    size: int


def plan(components: Iterable[tuple[str, Sequence[LockedFile]]], folder: Path) -> tuple[PlannedDownload, ...]:
    """What each component has to download: its files not yet in `folder` at their locked size (the hash is checked
    when fetched), a file two components share counted for the first; components with nothing to download are left
    out."""
    counted: set[str] = set()
    planned = []
    for name, files in components:
        missing = [
            file
            for file in files
            if file.download_path not in counted
            and not (local_path(file, folder).is_file() and local_path(file, folder).stat().st_size == file.size)
        ]
        counted.update(file.download_path for file in files)
        if missing:
            planned.append(PlannedDownload(name, len(missing), sum(file.size for file in missing)))
    return tuple(planned)


def describe(planned: Sequence[PlannedDownload], folder: Path) -> list[str]:
    """The lines setup shows before it downloads: each component's files and MiB, then the total."""
    if not planned:
        return []
    files, size = sum(p.files for p in planned), sum(p.size for p in planned)
    return [
        f"downloading into {folder}:",
        *(f"{p.component}: {_files(p.files)}, {mib(p.size)}" for p in planned),
        f"in all: {_files(files)}, {mib(size)}",
    ]


def _files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"
