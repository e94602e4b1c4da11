"""The stack lock (`stack.lock.json`, package data): every file `splitaudit setup` downloads, with its size and
SHA-256, component by component.

`tools/stack_lock.py` writes it from the dependency-list poms under beam_pipelines/java/stack/ (resolved by Maven)
and from PyPI's index; setup reads it in a checkout and from the wheel alike, so both install exactly these bytes.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from splitaudit.errors import ExternalError
from splitaudit.home import FLINK_VERSION

LOCK_FILE = Path(str(importlib.resources.files("splitaudit_lab.stack"))) / "stack.lock.json"

_SHA256 = re.compile(r"[0-9a-f]{64}")


def flink_component(version: str) -> str:
    """The lock's and setup's name of a Flink distribution: `flink` for FLINK_VERSION, else `flink-<version>`."""
    return "flink" if version == FLINK_VERSION else f"flink-{version}"


@dataclass(frozen=True)
class LockedFile:
    """One file to download: from a URL (PyPI's files), or from a path inside a Maven repository, with its Maven
    coordinates (`group:artifact:version[:classifier]`), so a mirror can serve it."""

    size: int
    sha256: str
    url: str | None = None
    maven: str | None = None
    path: str | None = None

    @property
    def name(self) -> str:
        """The file's name, as Maven's copy-dependencies and pip name it too."""
        return PurePosixPath(self.path if self.path is not None else str(self.url)).name

    @property
    def download_path(self) -> str:
        """Where the file is kept inside the downloads folder: a Maven file under `maven/` by its repository path
        (two groups may publish the same file name), a URL's by its name."""
        return f"maven/{self.path}" if self.path is not None else self.name

    def to_json(self) -> dict[str, Any]:
        source = {"url": self.url} if self.url is not None else {"maven": self.maven, "path": self.path}
        return {**source, "size": self.size, "sha256": self.sha256}

    @classmethod
    def from_json(cls, document: Any, where: str) -> LockedFile:
        """One entry of the lock, checked: a size, a SHA-256, and either a https URL or Maven coordinates with a
        relative path (never one that leaves the downloads folder)."""
        if not isinstance(document, dict):
            raise _invalid(where, "an entry is not an object")
        size, sha256 = document.get("size"), document.get("sha256")
        url, maven, path = document.get("url"), document.get("maven"), document.get("path")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise _invalid(where, f"size {size!r} is not a byte count")
        if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
            raise _invalid(where, f"sha256 {sha256!r} is not 64 lowercase hex digits")
        if isinstance(url, str) and maven is None and path is None:
            if not url.startswith("https://"):
                raise _invalid(where, f"url {url!r} is not https")
            return cls(size, sha256, url=url)
        if url is None and isinstance(maven, str) and isinstance(path, str):
            parts = PurePosixPath(path).parts
            if not parts or path.startswith("/") or ".." in parts or len(maven.split(":")) not in (3, 4):
                raise _invalid(where, f"maven {maven!r} at path {path!r} is not a file of a Maven repository")
            return cls(size, sha256, maven=maven, path=path)
        raise _invalid(where, "an entry names neither a url nor Maven coordinates and a path (exactly one of them)")


@dataclass(frozen=True)
class StackLock:
    """The lock's components, each an ordered list of files, in install order."""

    components: Mapping[str, tuple[LockedFile, ...]]

    def files(self, component: str) -> tuple[LockedFile, ...]:
        if component not in self.components:
            raise ExternalError(f"{LOCK_FILE} has no component {component!r}; this installation is incomplete")
        return self.components[component]

    def key(self, component: str) -> str:
        """A hash of what a component is made of: editing its files in the lock makes setup install it again."""
        entries = [entry.to_json() for entry in self.files(component)]
        return hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {
            "about": "Every file `splitaudit setup` downloads. Written by tools/stack_lock.py (`make stack-lock`) "
            "from beam_pipelines/java/stack/*/pom.xml and PyPI; not edited by hand.",
            "components": {name: [entry.to_json() for entry in files] for name, files in self.components.items()},
        }

    @classmethod
    def from_json(cls, document: Any, where: str) -> StackLock:
        components = document.get("components") if isinstance(document, dict) else None
        if not isinstance(components, dict):
            raise _invalid(where, "no `components` object")
        parsed: dict[str, tuple[LockedFile, ...]] = {}
        for name, entries in components.items():
            if not isinstance(entries, list):
                raise _invalid(where, f"component {name!r} is not a list of files")
            parsed[name] = tuple(LockedFile.from_json(entry, f"{where}: {name}") for entry in entries)
            names = [entry.name for entry in parsed[name]]
            if len(set(names)) != len(names):
                raise _invalid(where, f"component {name!r} names one file twice")
        return cls(parsed)


def read_lock(path: Path = LOCK_FILE) -> StackLock:
    """The stack lock at `path` (by default the one installed with the package)."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as ex:
        raise ExternalError(f"cannot read the stack lock {path}: {ex}") from None
    return StackLock.from_json(document, str(path))


def differences(old: StackLock, new: StackLock) -> list[str]:
    """What changed from `old` to `new`, one line per component added or removed and per file added, removed,
    changed (size, hash, url) or moved within its component; empty when the two are the same."""
    lines = []
    for name in dict.fromkeys([*old.components, *new.components]):
        if name not in new.components:
            lines.append(f"{name}: component removed")
            continue
        if name not in old.components:
            lines.append(f"{name}: component added ({len(new.components[name])} files)")
            continue
        before = {entry.name: entry for entry in old.components[name]}
        after = {entry.name: entry for entry in new.components[name]}
        changed = [f"{name}: - {file}" for file in before if file not in after]
        changed += [f"{name}: + {file}" for file in after if file not in before]
        changed += [
            f"{name}: ~ {file} ({_described(before[file])} -> {_described(after[file])})"
            for file in after
            if file in before and before[file] != after[file]
        ]
        if not changed and list(before) != list(after):
            changed.append(f"{name}: the same files in another order")
        lines += changed
    return lines


def _described(entry: LockedFile) -> str:
    return f"{entry.maven or entry.url}, {entry.size} bytes, sha256 {entry.sha256[:12]}…"


def _invalid(where: str, message: str) -> ExternalError:
    return ExternalError(f"{where}: not a valid stack lock: {message}")
