"""Mutations of real savepoints for the hostile-input tests: a copy of a fixture with chosen bytes rewritten.

Nothing here writes bytes of its own making beyond the rewrite asked for: a savepoint directory is copied as
Flink wrote it, then one Java `writeUTF` string (a 2-byte big-endian length, then modified UTF-8) is replaced by
another of the same encoded length wherever it occurs, so every enclosing length and offset stays valid.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path


def rewrite_utf(data: bytes, old: str, new: str) -> bytes:
    """`data` with every `writeUTF(old)` replaced by `writeUTF(new)`; both must encode to the same length."""
    before, after = old.encode(), new.encode()
    if len(before) != len(after):
        raise ValueError(f"{new!r} must encode to {len(before)} bytes like {old!r}, not {len(after)}")
    framed = struct.pack(">H", len(before)) + before
    if framed not in data:
        raise ValueError(f"no writeUTF({old!r}) in the data")
    return data.replace(framed, struct.pack(">H", len(after)) + after)


def mutated_copy(snapshot: Path, target: Path, strings: dict[str, str]) -> Path:
    """Copy the savepoint directory `snapshot` to `target` and rewrite each old -> new string in every file
    that holds it; returns `target`. Every string must be found in at least one file."""
    shutil.copytree(snapshot, target)
    found = dict.fromkeys(strings, False)
    for path in sorted(p for p in target.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for old, new in strings.items():
            try:
                data = rewrite_utf(data, old, new)
            except ValueError:
                continue
            found[old] = True
        path.write_bytes(data)
    missing = [old for old, hit in found.items() if not hit]
    if missing:
        raise ValueError(f"not in {snapshot}: {missing}")
    return target
