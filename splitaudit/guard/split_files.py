"""Before a restore: whether the files a file source's savepoint still has to read are there as it saw them.

A restored `FileSource` (flink-connector-files) reads each split's file by the path its state names; it does not
list the folder again for them. A file removed between the savepoint and the restore fails the reader that opens
it (`FileNotFoundException`: the job restarts from the same state until its restart strategy gives up), whether
a reader held its split or the enumerator had it pending; a finished file (a processed path only) is not opened
again. A file of another size or modification time than its split recorded is read all the same, from the
position the split holds: lines skipped or read twice if its content moved.

The check is read-only: it stats the local files the splits name (`SourceFile.local_path`; a remote scheme is
not checked, and says so) and never opens them. Which states read files the family says (`source_files`),
so nothing here names a source's classes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from splitaudit.audit.checks.findings import ERROR, INFO, WARNING, Finding
from splitaudit.savepoint_view import SavepointView
from splitaudit.splits.model import SourceFile, source_files

SPLIT_FILE_MISSING = "split_file_missing"  # a split's file is gone: the reader that opens it fails
SPLIT_FILE_CHANGED = "split_file_changed"  # a split's file has another size or modification time than it recorded
SPLIT_FILE_UNCHECKED = "split_file_unchecked"  # a split's file is not on the local file system: not checked


@dataclass(frozen=True)
class HeldFile:
    """A file a savepoint's split still has to read, and who holds that split: a reader subtask, or the
    enumerator (None: pending)."""

    file: SourceFile
    subtask: int | None

    @property
    def holder(self) -> str:
        return "pending in the enumerator" if self.subtask is None else f"held by subtask {self.subtask}"


def held_files(view: SavepointView) -> tuple[HeldFile, ...]:
    """Every file the savepoint's file-source splits still have to read, reader-held first, in the state's order."""
    held: list[HeldFile] = []
    pending: list[HeldFile] = []
    for operator in view.operators:
        source = operator.source
        if source is None:
            continue
        for split in source.reader_splits:
            held.extend(HeldFile(file, split.subtask) for file in source_files(split.state))
        if source.enumerator is not None:
            pending.extend(HeldFile(file, None) for file in source_files(source.enumerator.state))
    return (*held, *pending)


def check_split_files(view: SavepointView) -> tuple[Finding, ...]:
    """A finding for each file the savepoint's splits still have to read that is missing (error), changed
    (warning) or not local (info)."""
    return check_files(held_files(view))


def check_files(held: Iterable[HeldFile]) -> tuple[Finding, ...]:
    """The findings of `check_split_files` for these held files."""
    return tuple(finding for finding in map(_check, held) if finding is not None)


def _check(held: HeldFile) -> Finding | None:
    file = held.file
    if file.local_path is None:
        return Finding(SPLIT_FILE_UNCHECKED, INFO, file.path, None, 1, detail=f"{held.holder}; not a local file")
    try:
        stat = os.stat(file.local_path)
    except (FileNotFoundError, NotADirectoryError):
        detail = f"{held.holder}; the file is gone: the reader that opens it on restore fails (FileNotFoundException)"
        return Finding(SPLIT_FILE_MISSING, ERROR, file.path, None, 1, detail=detail)
    except OSError as error:  # e.g. a folder this user may not read: said, not guessed
        detail = f"{held.holder}; not checked: {error.strerror or type(error).__name__}"
        return Finding(SPLIT_FILE_UNCHECKED, INFO, file.path, None, 1, detail=detail)
    modified = stat.st_mtime_ns // 1_000_000  # File.lastModified(), what Flink's local file system reports
    if stat.st_size == file.size and modified == file.modification_time:
        return None
    detail = (
        f"{held.holder}; the split recorded {file.size} bytes modified at {file.modification_time} ms, the file "
        f"has {stat.st_size} bytes modified at {modified} ms: read from the split's position all the same"
    )
    return Finding(SPLIT_FILE_CHANGED, WARNING, file.path, None, 1, detail=detail)
