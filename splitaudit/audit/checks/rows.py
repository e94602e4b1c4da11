"""A savepoint's `operators`, `splits` and `enumerator` tables as plain rows (dicts): what the checks read on
the driver and what `audit/checks/tables.py` types for pyarrow and Spark; and its `keyed` table, every keyed-state
entry. Pure Python, so a savepoint-only audit, `diff` and `guard` start without pyarrow.

Each split family makes its own rows (`SplitState.partition_rows`, `EnumeratorState.enumerator_entries` in
`splitaudit/splits/model.py`); this module only lays them out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from splitaudit.savepoint_view import KeyedStateRow, OperatorView, SavepointView


def concrete_offset(offset: int | None) -> int | None:
    """A next offset, or None for an unknown or symbolic one (Flink's -1 latest, -2 earliest, -3 committed)."""
    return offset if offset is not None and offset >= 0 else None


def operator_rows(view: SavepointView) -> list[dict[str, Any]]:
    return [
        _operator(view, op)
        | {
            "parallelism": op.parallelism,
            "max_parallelism": op.max_parallelism,
            "is_source": op.source is not None,
            "reader_splits": 0 if op.source is None else len(op.source.reader_splits),
        }
        for op in view.operators
    ]


def split_rows(view: SavepointView) -> list[dict[str, Any]]:
    """Every topic partition every source subtask held; a split with no partitions still gets one row."""
    rows = []
    for op in view.operators:
        if op.source is None:
            continue
        base = _operator(view, op)
        for split in op.source.reader_splits:
            rows += [base | {"subtask": split.subtask} | row.to_json() for row in split.state.partition_rows()]
    return rows


def enumerator_rows(view: SavepointView) -> list[dict[str, Any]]:
    """What each enumerator checkpoint names: pending splits (per target subtask when known) and, for Flink's
    KafkaSource, the partitions it has assigned."""
    rows = []
    for op in view.operators:
        if op.source is None or op.source.enumerator is None:
            continue
        base = _operator(view, op)
        for entry in op.source.enumerator.state.enumerator_entries():
            rows += [base | {"subtask": entry.subtask, "status": entry.status} | row.to_json() for row in entry.rows]
    return rows


def _operator(view: SavepointView, op: OperatorView) -> dict[str, Any]:
    return {
        "operator_id": op.operator_id,
        "operator_uid": op.uid,
        "operator_name": op.name,
        "checkpoint_id": view.checkpoint_id,
        "kind": view.kind,
    }


def keyed_rows(entries: Iterator[KeyedStateRow]) -> Iterator[dict[str, Any]]:
    """One row per keyed-state entry: key, namespace, user key and value as JSON text (their types differ state
    by state; bytes a serializer this reader does not know wrote are `{"serializer", "bytes"}`, with `"type_class"`
    when its snapshot names one), null when absent (`VoidNamespace`, no user key, or an `unread` row), and the
    entry's status."""
    for row in entries:
        entry = row.entry
        yield {
            "operator_id": row.operator_id,
            "operator_uid": row.uid,
            "subtask": row.subtask,
            "state": entry.state,
            "key_group": entry.key_group,
            "key": json_text(entry.key),
            "namespace": json_text(entry.namespace),
            "user_key": json_text(entry.user_key),
            "value": json_text(entry.value),
            "status": entry.status,
        }


# One encoder for every value: `json.dumps` with options builds a new one per call, which cost the keyed table
# more than a third of its time (benchmarks/keyed_state.py).
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=lambda item: item.to_json())
# What that encoder does with a string (`ensure_ascii`), called without going through it.
_STRING = json.encoder.encode_basestring_ascii
# And with a list or a dict: json's C encoder, made once with that encoder's settings (markers: the circular
# check; indent, separators, sort_keys, skipkeys, allow_nan), where `JSONEncoder.encode` makes one per value,
# which took two thirds of its time. The pure-Python encoder where json has no C one.
_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_ITERENCODE = _C_ENCODER({}, _ENCODER.default, _STRING, None, ":", ",", False, False, True) if _C_ENCODER else None


def _encode(value: Any) -> str:
    """`_ENCODER.encode(value)`, through the C encoder made once when there is one."""
    return "".join(_ITERENCODE(value, 0)) if _ITERENCODE is not None else _ENCODER.encode(value)


def json_text(value: Any) -> str | None:
    """A decoded value as compact JSON; decoded objects (Beam's values, undecoded bytes) by their `to_json`."""
    kind = type(value)
    if kind is str:
        return _STRING(value)
    if kind is int:  # its decimal digits (not a bool), without the encoder's set-up
        return str(value)
    if value is None:
        return None
    return _encode(value)


def json_texts(values: list[Any]) -> list[str | None]:
    """`json_text` of each value of a column: where every value is of one type (the keyed table's columns mostly
    are: a state's keys, a state's values), the call for that type mapped over it in C, not a Python call each."""
    kinds = set(map(type, values))
    if len(kinds) == 1:
        kind = kinds.pop()
        if kind is str:
            return list(map(_STRING, values))
        if kind is int:
            return list(map(str, values))
        if kind is type(None):
            return [None] * len(values)
    return list(map(json_text, values))
