"""The split-file check before a FileSource restore: the files a savepoint's splits still have to read, stat'ed
(read-only) against the file system. On the real savepoint of fixtures/flink_file/ (its expected.json: the input
the generator wrote and the job's witness), whose input folder was a temporary one, gone since: every file is
missing; on files made here: unchanged, changed, remote."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from splitaudit.audit.checks.findings import ERROR, INFO, WARNING
from splitaudit.guard.split_files import (
    SPLIT_FILE_CHANGED,
    SPLIT_FILE_MISSING,
    SPLIT_FILE_UNCHECKED,
    HeldFile,
    check_files,
    check_split_files,
    held_files,
)
from splitaudit.savepoint_view import inspect_savepoint
from splitaudit.splits.model import SourceFile
from tests.unit.conftest import FIXTURES

CASE = FIXTURES / "flink_file" / "1.19.3-savepoint-continuous"
EXPECTED: dict[str, Any] = json.loads((CASE / "expected.json").read_text())
FILES = {f["name"]: f for f in EXPECTED["job"]["input"]}


def _source_file(name: str) -> SourceFile:
    file = FILES[name]
    return SourceFile("file:" + file["path"], file["path"], file["size"], file["modified"])


def test_the_held_files_are_the_readers_then_the_pending_splits() -> None:
    held = held_files(inspect_savepoint(str(CASE / EXPECTED["snapshot_dir"])))
    readers = [HeldFile(_source_file(h["file"]), h["subtask"]) for h in EXPECTED["held"]]
    assert held[:2] == tuple(readers)
    assert sorted(held[2:], key=lambda h: h.file.path) == [
        HeldFile(_source_file(name), None) for name in EXPECTED["pending_files"]
    ]


def test_every_file_of_the_fixture_is_gone_so_every_split_would_fail() -> None:
    assert not Path(FILES["part-0.txt"]["path"]).exists()  # the generator's temporary input folder
    findings = check_split_files(inspect_savepoint(str(CASE / EXPECTED["snapshot_dir"])))
    assert sorted((f.kind, f.severity, f.topic, f.count) for f in findings) == sorted(
        (SPLIT_FILE_MISSING, ERROR, "file:" + f["path"], 1) for f in FILES.values()
    )
    held = {f.topic: f.detail for f in findings}
    for h in EXPECTED["held"]:
        assert held["file:" + FILES[h["file"]]["path"]].startswith(f"held by subtask {h['subtask']}; the file is gone")
    for name in EXPECTED["pending_files"]:
        assert held["file:" + FILES[name]["path"]].startswith("pending in the enumerator; the file is gone")


def test_an_unchanged_file_passes_a_changed_one_warns_a_remote_one_is_not_checked(tmp_path: Path) -> None:
    same, grown = tmp_path / "same.txt", tmp_path / "grown.txt"
    same.write_text("a 000000\n")
    grown.write_text("b 000000\n")
    os.utime(same, ns=(1_700_000_000_123_000_000, 1_700_000_000_123_000_000))
    os.utime(grown, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    held = [
        HeldFile(SourceFile(f"file:{same}", str(same), 9, 1_700_000_000_123), 0),
        HeldFile(SourceFile(f"file:{grown}", str(grown), 5, 1_700_000_000_000), None),
        HeldFile(SourceFile("hdfs://nn:8020/d/f.txt", None, 400, 1), 1),
    ]
    findings = check_files(held)
    assert [(f.kind, f.severity, f.topic) for f in findings] == [
        (SPLIT_FILE_CHANGED, WARNING, f"file:{grown}"),
        (SPLIT_FILE_UNCHECKED, INFO, "hdfs://nn:8020/d/f.txt"),
    ]
    assert findings[0].detail == (
        "pending in the enumerator; the split recorded 5 bytes modified at 1700000000000 ms, the file has 9 bytes "
        "modified at 1700000000000 ms: read from the split's position all the same"
    )


def test_a_path_the_file_system_cannot_stat_is_said_not_guessed(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x\n")
    under_a_file = tmp_path / "a-file" / "part-0.txt"  # its folder is a file: gone, as a reader would find it
    too_long = tmp_path / ("n" * 300)  # a name longer than the file system allows: not checked, and why
    held = [HeldFile(SourceFile(f"file:{p}", str(p), 2, 1), 0) for p in (under_a_file, too_long)]
    findings = check_files(held)
    assert [(f.kind, f.severity) for f in findings] == [(SPLIT_FILE_MISSING, ERROR), (SPLIT_FILE_UNCHECKED, INFO)]
    assert findings[1].detail == "held by subtask 0; not checked: File name too long"
