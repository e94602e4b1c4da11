"""A savepoint as three flat, typed tables: what the `flink_savepoint` data source serves and the checks join.

- `operators`: one row per operator (id, uid, name, parallelism, whether it is a source).
- `splits`: one row per (reader split, topic partition): the partitions each source subtask held.
- `enumerator`: one row per (split or partition, topic partition) the enumerator checkpoint names, with its
  status: `pending` (not yet handed to a reader; such a partition must not also be held by one) or `assigned`.

Offsets are Kafka's *next* offset to read. Negative values are Flink's symbolic offsets kept as they are
(-2 earliest, -1 latest, -3 committed); a Kafka stopping offset of Long.MIN_VALUE (unbounded) becomes null.
Each split family makes its own rows (`SplitState.partition_rows`, `EnumeratorState.enumerator_entries` in
`splitaudit/splits/model.py`); this module only lays them out. Spark-free: plain rows and pyarrow tables, so
the data source, the checks and the tests share one shape.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from splitaudit.savepoint_view import OperatorView, SavepointView

_SNAPSHOT = [
    pa.field("checkpoint_id", pa.int64(), nullable=False),
    pa.field("kind", pa.string()),
]
_OPERATOR = [
    pa.field("operator_id", pa.string(), nullable=False),
    pa.field("operator_uid", pa.string()),
    pa.field("operator_name", pa.string()),
]
_SPLIT = [
    pa.field("split_type", pa.string(), nullable=False),
    pa.field("split_id", pa.string()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("next_offset", pa.int64()),
    pa.field("stopping_offset", pa.int64()),
]

SCHEMAS: dict[str, pa.Schema] = {
    "operators": pa.schema(
        [
            *_OPERATOR,
            pa.field("parallelism", pa.int32(), nullable=False),
            pa.field("max_parallelism", pa.int32(), nullable=False),
            pa.field("is_source", pa.bool_(), nullable=False),
            pa.field("reader_splits", pa.int32(), nullable=False),
            *_SNAPSHOT,
        ]
    ),
    "splits": pa.schema([*_OPERATOR, pa.field("subtask", pa.int32(), nullable=False), *_SPLIT, *_SNAPSHOT]),
    "enumerator": pa.schema(
        [
            *_OPERATOR,
            pa.field("subtask", pa.int32()),  # the reader a pending split waits for, when the state says
            pa.field("status", pa.string(), nullable=False),
            *_SPLIT,
            *_SNAPSHOT,
        ]
    ),
}
TABLES = tuple(SCHEMAS)


def concrete_offset(offset: int | None) -> int | None:
    """A next offset, or None for an unknown or symbolic one (Flink's -1 latest, -2 earliest, -3 committed)."""
    return offset if offset is not None and offset >= 0 else None


def savepoint_table(view: SavepointView, table: str) -> pa.Table:
    """One of `TABLES` of the savepoint, typed by `SCHEMAS`."""
    rows = {"operators": operator_rows, "splits": split_rows, "enumerator": enumerator_rows}[table](view)
    return pa.Table.from_pylist(rows, schema=SCHEMAS[table])


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
