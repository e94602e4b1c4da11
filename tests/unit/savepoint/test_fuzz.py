"""Property test: mutated real `_metadata` files only ever produce `InputError`.

Mutations of the 48 real `_metadata` fixtures (Flink 1.15-2.3, KafkaSource, file merging): truncations,
flipped bytes, extensions, absurd lengths (counts and UTF lengths overwritten anywhere), and relative state
handles rewritten to point outside the directory. For each, `inspect` must return normally or raise
`InputError`: never another exception, never a hang (a deadline per example), never a read outside the
savepoint directory (every read is recorded and checked).

The default run is modest. For the issue's 100,000 cases:

    SPLITAUDIT_FUZZ_EXAMPLES=100000 .venv/bin/pytest tests/unit/savepoint/test_fuzz.py --timeout 3600
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import struct
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from splitaudit.errors import InputError
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint_view import inspect_savepoint
from tests.unit.conftest import flink_fixtures

CORPUS = flink_fixtures("flink", "kafka", "flink-file-merging")
EXAMPLES = int(os.environ.get("SPLITAUDIT_FUZZ_EXAMPLES", "3000"))
UUID_NAME = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ESCAPES = (b"../" * 10 + b"secret", b"/" + b"a" * 28 + b"/secret", b"..", b".", b"")
ABSURD = (0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 0x0000FFFF, 0x00010000, 0x7FFFFFF0)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[Path, bytes]]]:
    """A copy of every fixture directory (so mutations never touch the repository) and a secret outside."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "secret").write_bytes(b"outside the savepoint")
    copies = []
    for case in CORPUS:
        target = root / case.name / case.snapshot.name
        shutil.copytree(case.snapshot, target)
        copies.append((target, case.metadata.read_bytes()))
    return root, copies


@st.composite
def mutation(draw: st.DrawFn, size: int) -> tuple[str, Any]:
    kind = draw(st.sampled_from(["truncate", "flip", "extend", "absurd", "escape", "combined"]))
    if kind == "truncate":
        return kind, draw(st.integers(0, size - 1))
    if kind == "flip":
        return kind, draw(st.lists(st.tuples(st.integers(0, size - 1), st.integers(1, 255)), min_size=1, max_size=8))
    if kind == "extend":
        return kind, draw(st.binary(min_size=1, max_size=64))
    if kind == "absurd":
        value = draw(st.sampled_from(ABSURD) | st.integers(0, 0xFFFFFFFF))
        return kind, (draw(st.integers(0, size - 2)), value, draw(st.booleans()))
    if kind == "escape":
        return kind, (draw(st.integers(0, 16)), draw(st.sampled_from(ESCAPES) | st.binary(max_size=40)))
    return kind, (draw(st.integers(0, size - 1)), draw(st.integers(1, 255)), draw(st.integers(1, size)))


def apply(data: bytes, kind: str, arg: Any) -> bytes:
    if kind == "truncate":
        return data[:arg]
    if kind == "flip":
        out = bytearray(data)
        for at, mask in arg:
            out[at] ^= mask
        return bytes(out)
    if kind == "extend":
        return data + bytes(arg)
    if kind == "absurd":
        at, value, as_int = arg
        packed = struct.pack(">I", value) if as_int else struct.pack(">H", value & 0xFFFF)
        return data[:at] + packed + data[at + len(packed) :]
    if kind == "escape":
        index, replacement = arg[0], bytes(arg[1])
        names = list(UUID_NAME.finditer(data))
        if not names:
            return data
        name = names[index % len(names)]
        # Rewrite the u16 length in front of the name too, so the handle stays well-formed.
        start = name.start() - 2
        return data[:start] + struct.pack(">H", len(replacement)) + replacement + data[name.end() :]
    at, mask, cut = arg
    out = bytearray(data)
    out[at] ^= mask
    return bytes(out[:cut])


@settings(
    max_examples=EXAMPLES,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=EXAMPLES <= 3000,  # CI runs are reproducible; long runs explore
    database=None,
)
@given(data=st.data())
def test_mutated_metadata_only_raises_input_error(
    workspace: tuple[Path, list[tuple[Path, bytes]]], data: st.DataObject
) -> None:
    _, copies = workspace
    snapshot, original = copies[data.draw(st.integers(0, len(copies) - 1), label="fixture")]
    kind, arg = data.draw(mutation(len(original)), label="mutation")
    (snapshot / "_metadata").write_bytes(apply(original, kind, arg))
    reads: list[str] = []
    real_read = SavepointFiles._read

    def recording_read(self: SavepointFiles, fs: Any, path: str, *rest: Any) -> bytes:
        reads.append(path)
        return real_read(self, fs, path, *rest)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SavepointFiles, "_read", recording_read)
        with contextlib.suppress(InputError):
            inspect_savepoint(str(snapshot))
    inside = str(snapshot) + os.sep
    assert all(path.startswith(inside) for path in reads), reads


def test_fuzz_fixture_covers_every_case(workspace: tuple[Path, list[tuple[Path, bytes]]]) -> None:
    _, copies = workspace
    assert len(copies) == len(CORPUS) == 48
    assert all(UUID_NAME.search(data) for _, data in copies)  # every fixture has a name the escape can rewrite
