"""A RocksDB `OPTIONS-N` file (`options/options_parser.cc`): the options the database was last opened with, as
INI-like text. Sections `[Version]` (`rocksdb_version`), `[DBOptions]`, and per column family `[CFOptions "name"]`
and `[TableOptions/BlockBasedTable "name"]`, each followed by `  key=value` lines; `#` starts a comment.

What the reader takes from it: the RocksDB release that wrote the snapshot and, per column family, its comparator
and merge operator (Flink sets `StringAppendTESTOperator` on every one) and the table format. Column family names
are written with `\\"` and `\\\\` escaped; the file is at most `MAX_OPTIONS_BYTES`, real ones 10-20 KB.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from splitaudit.primitives.datainput import DataInput

MAX_OPTIONS_BYTES = 1 << 20
_SECTION = re.compile(r'\[([A-Za-z/]+)(?: "((?:[^"\\]|\\.)*)")?\]')


@dataclass(frozen=True)
class ColumnFamilyOptions:
    """What OPTIONS says of one column family."""

    name: str
    comparator: str | None
    merge_operator: str | None
    format_version: str | None
    checksum: str | None


@dataclass(frozen=True)
class Options:
    """The RocksDB release and the column families' options."""

    rocksdb_version: str | None
    column_families: tuple[ColumnFamilyOptions, ...]

    def column_family(self, name: str) -> ColumnFamilyOptions | None:
        return next((family for family in self.column_families if family.name == name), None)


def read_options(data: DataInput) -> Options:
    """The sections of an OPTIONS file; a line that is neither a section, an option nor a comment is an error."""
    if len(data) > MAX_OPTIONS_BYTES:
        raise data.error(f"an OPTIONS file of {len(data)} bytes, more than the {MAX_OPTIONS_BYTES} read", 0)
    text = data.read_bytes(len(data)).decode("utf-8", "replace")
    sections: dict[tuple[str, str], dict[str, str]] = {}
    order: list[str] = []
    current: dict[str, str] | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        at, offset = offset, offset + len(line.encode("utf-8", "replace"))
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        section = _SECTION.fullmatch(stripped)
        if section:
            kind = section.group(1)
            name = re.sub(r"\\(.)", r"\1", section.group(2) or "")
            current = sections.setdefault((kind, name), {})
            if kind == "CFOptions":
                order.append(name)
            continue
        key, equals, value = stripped.partition("=")
        if not equals or current is None:
            raise data.error(f"OPTIONS line {stripped[:80]!r} is neither a section nor key=value", at)
        current[key.strip()] = value.strip()
    version = sections.get(("Version", ""), {}).get("rocksdb_version")
    families = []
    for name in order:
        options = sections[("CFOptions", name)]
        table = sections.get(("TableOptions/BlockBasedTable", name), {})
        merge_operator = options.get("merge_operator")
        families.append(
            ColumnFamilyOptions(
                name,
                options.get("comparator"),
                None if merge_operator in (None, "nullptr") else merge_operator,
                table.get("format_version"),
                table.get("checksum"),
            )
        )
    return Options(version, tuple(families))
