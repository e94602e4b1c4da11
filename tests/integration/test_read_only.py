"""Every command leaves the savepoint directories (and the sink) it reads byte for byte as they were: `inspect`,
`audit` of a savepoint alone, with `--before` and with a sink, and `diff`, on copies of real fixtures."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _hashes(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Every entry under `folder`: its content hash, mode and modification time."""
    found = {}
    for path in sorted(folder.rglob("*")):
        status = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        found[str(path.relative_to(folder))] = (digest, status.st_mode, status.st_mtime_ns)
    return found


def test_no_command_changes_what_it_reads(tmp_path: Path) -> None:
    before = Path(shutil.copytree(FIXTURES / "beam_flink_source" / "restore_patched_before", tmp_path / "sp0"))
    after = Path(shutil.copytree(FIXTURES / "beam_flink_source" / "restore_patched_after", tmp_path / "sp1"))
    sink = Path(shutil.copytree(FIXTURES / "beam_sink" / "restore_patched_small" / "sink", tmp_path / "sink"))
    # the sink comes from another run than the savepoints (another random topic name): --topic names it
    topic = json.loads((FIXTURES / "beam_sink" / "restore_patched_small" / "expected.json").read_text())["topic"]
    folders = (before, after, sink)
    original = [_hashes(folder) for folder in folders]
    commands = [
        ["inspect", str(after)],
        ["audit", "--savepoint", str(after), "--master", "local[1]"],
        ["audit", "--savepoint", str(after), "--before", str(before), "--master", "local[1]"],
        [
            "audit",
            "--savepoint",
            str(after),
            "--sink",
            str(sink),
            "--sink-format",
            "json",
            "--topic",
            topic,
            "--master",
            "local[1]",
        ],
        ["diff", str(before), str(after)],
    ]
    for command in commands:
        result = subprocess.run(
            [sys.executable, "-m", "splitaudit", "--json", *command],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert result.returncode in (0, 1), (command, result.stderr)
        assert [_hashes(folder) for folder in folders] == original, command
