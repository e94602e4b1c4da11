"""Beam's `RowCoder` (a `SchemaCoder`'s encoding of a `Row`), read against the schema's fields.

Encoding (`RowCoderGenerator`): `VarInt fieldCount`, the null fields as a `BitSetCoder` (`ByteArrayCoder` of
`BitSet.toByteArray()`: a VarInt length, then little-endian bits; trailing zero bytes dropped), then every
non-null field in encoding order with its type's coder, nested: STRING `StringUtf8Coder`, INT32 `VarIntCoder`,
INT64 `VarLongCoder`, DATETIME `InstantCoder`, ARRAY `ListCoder` (`int` count, then the elements).

The savepoint does not hold the schema: the runner keeps a Row as opaque SDK bytes. When the field order is not
fixed by the class (Beam's `AutoValueSchema` takes it from `getDeclaredMethods`, whose order the JVM does not
define, until `@SchemaFieldNumber`), `read_row_unordered` tries every order of the known fields over the
non-null positions and accepts the row only when every order that decodes the bytes exactly gives the same
values; otherwise the row is refused, never guessed. Layouts: splitaudit/splits/FORMAT.md, "Beam's SDF state".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.splits.beam_coders import VARINT_BYTES, read_instant, read_nested_string, read_var_int, read_var_long

MAX_FIELDS = 64  # a BitSet of more fields than this is not a schema this reader knows


def _read_string_list(inp: DataInput) -> list[str]:
    return [read_nested_string(inp) for _ in range(inp.read_length("number of list elements"))]


FIELD_TYPES: dict[str, Callable[[DataInput], Any]] = {
    "STRING": read_nested_string,
    "INT32": read_var_int,
    "INT64": read_var_long,
    "DATETIME": read_instant,
    "ARRAY<STRING>": _read_string_list,
}


@dataclass(frozen=True)
class Field:
    """One field of a Beam `Schema`: its name, its type (a key of FIELD_TYPES) and whether it may be null."""

    name: str
    type: str
    nullable: bool


def read_row_header(inp: DataInput, expected_fields: int) -> tuple[int, ...]:
    """The field count (which must be `expected_fields`) and null bits; the non-null field positions."""
    at = inp.tell()
    count = read_var_int(inp, "row field count")
    if count != expected_fields:
        raise inp.error(f"row has {count} fields, the schema {expected_fields}", at)
    bits_at = inp.tell()
    bits = inp.read_bytes(inp.read_varint("row null bit set length", VARINT_BYTES), "row null bit set")
    nulls = {index for index in range(len(bits) * 8) if bits[index // 8] >> (index % 8) & 1}
    if any(index >= count for index in nulls):
        raise inp.error(f"row null bit set names field {max(nulls)} of {count}", bits_at)
    return tuple(index for index in range(count) if index not in nulls)


def read_row_unordered(inp: DataInput, fields: tuple[Field, ...], what: str) -> dict[str, Any]:
    """The rest of `inp` as a Row of `fields` in an order the savepoint does not record: `{name: value}` (None
    for null fields), the same whichever order decodes the bytes exactly, or an InputError."""
    at = inp.tell()
    if len(fields) > MAX_FIELDS:
        raise inp.error(f"{what}: schema of {len(fields)} fields")
    present = read_row_header(inp, len(fields))
    results: list[dict[str, Any]] = []
    required = frozenset(field.name for field in fields if not field.nullable)

    def assign(position: int, used: dict[str, Any]) -> None:
        if len(results) > 1:
            return
        if position == len(present):
            if not inp.remaining() and required <= used.keys():
                decoded = {field.name: used.get(field.name) for field in fields}
                if decoded not in results:
                    results.append(decoded)
            return
        here = inp.tell()
        for field in fields:
            if field.name in used:
                continue
            try:
                value = FIELD_TYPES[field.type](inp)
            except InputError:
                inp.seek(here)
                continue
            assign(position + 1, {**used, field.name: value})
            inp.seek(here)

    assign(0, {})
    if not results:
        raise inp.error(f"{what}: no order of the schema's fields decodes the row's {len(present)} non-null fields", at)
    if len(results) > 1:
        raise inp.error(f"{what}: the row's fields decode in more than one order of the schema; not guessed", at)
    inp.skip(inp.remaining())  # every branch went back to where the fields start
    return results[0]
