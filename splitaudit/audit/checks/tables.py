"""A savepoint as three flat, typed tables: what the `flink_savepoint` data source serves and the checks join.

- `operators`: one row per operator (id, uid, name, parallelism, whether it is a source).
- `splits`: one row per (reader split, topic partition): the partitions each source subtask held.
- `enumerator`: one row per (split or partition, topic partition) the enumerator checkpoint names, with its
  status: `pending` (not yet handed to a reader; such a partition must not also be held by one), `assigned`, or
  `finished` (a file source's processed file that no split holds: the whole file, partition null).
- `keyed`: one row per keyed-state entry (operator, subtask, state, key group, then key, namespace, user key and
  value as JSON text, and its status: read, raw or unread, with why), read key group by key group
  (`keyed_batches`), not from the inspected view.

Offsets are Kafka's *next* offset to read. Negative values are Flink's symbolic offsets kept as they are
(-2 earliest, -1 latest, -3 committed); a Kafka stopping offset of Long.MIN_VALUE (unbounded) becomes null.
Each split family makes its own rows (`SplitState.partition_rows`, `EnumeratorState.enumerator_entries` in
`splitaudit/splits/model.py`); `audit/checks/rows.py` lays them out as plain rows and this module types them
(pyarrow), so the data source, the checks and the tests share one shape.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pyarrow as pa

from splitaudit.audit.checks.rows import enumerator_rows, json_texts, operator_rows, split_rows
from splitaudit.savepoint.fileio import DEFAULT_MAX_FILE_SIZE, SavepointFiles
from splitaudit.savepoint.keyed import EntryRow
from splitaudit.savepoint_view import KeyedStatePart, SavepointView, plan_keyed_state, read_keyed_part_rows

if TYPE_CHECKING:
    from splitaudit.audit.checks.keyed_columns import ColumnRun

# Rows per Arrow batch of the keyed table, about (a run of entries, at most a 1 MiB window of them, is not cut):
# memory stays flat as the state grows.
KEYED_BATCH_ROWS = 10_000

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
    pa.field("cluster", pa.string()),  # a DynamicKafkaSource partition's Kafka cluster id, else null
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
    "keyed": pa.schema(
        [
            pa.field("operator_id", pa.string(), nullable=False),
            pa.field("operator_uid", pa.string()),
            pa.field("subtask", pa.int32(), nullable=False),
            pa.field("state", pa.string(), nullable=False),
            pa.field("key_group", pa.int32(), nullable=False),
            pa.field("key", pa.string()),
            pa.field("namespace", pa.string()),
            pa.field("user_key", pa.string()),
            pa.field("value", pa.string()),
            # read; raw: <serializer class>: <why> (a part kept as bytes); unread: <why> (the entries it stands for)
            pa.field("status", pa.string(), nullable=False),
        ]
    ),
}
TABLES = tuple(SCHEMAS)


def savepoint_table(view: SavepointView, table: str) -> pa.Table:
    """The `operators`, `splits` or `enumerator` table of the savepoint, typed by `SCHEMAS`."""
    rows = {"operators": operator_rows, "splits": split_rows, "enumerator": enumerator_rows}[table](view)
    return pa.Table.from_pylist(rows, schema=SCHEMAS[table])


def keyed_batches(
    location: str,
    uids: Iterable[str] = (),
    allow_external_state: bool = False,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
) -> Iterator[pa.RecordBatch]:
    """The `keyed` table of the savepoint at `location`, about KEYED_BATCH_ROWS rows at a time (the rows of
    `read_keyed_state`, in its order: every part of `plan_keyed_state` in turn)."""
    files = SavepointFiles(location, allow_external_state, max_file_size)
    for part in plan_keyed_state(files, uids):
        yield from keyed_part_batches(files, part)


def keyed_part_batches(files: SavepointFiles, part: KeyedStatePart) -> Iterator[pa.RecordBatch]:
    """The rows of the `keyed` table one part of the keyed state gives (`plan_keyed_state`), about
    KEYED_BATCH_ROWS at a time (a run of entries read column by column, `keyed_columns`, is never cut), as
    `audit.rows.keyed_rows` lays them out."""
    # numpy and Arrow's compute kernels, loaded only where keyed state is read (not in Spark's planning processes)
    from splitaudit.audit.checks.keyed_columns import ColumnRun, run_reader

    items = read_keyed_part_rows(files, part, run_reader)
    # The part's operator and subtask, the same in every row: made once, a slice of them per batch (no copy).
    repeated = [
        (value, kind, pa.array([value] * KEYED_BATCH_ROWS, kind))
        for value, kind in ((part.operator_id, pa.string()), (part.uid, pa.string()), (part.subtask, pa.int32()))
    ]
    pieces: list[list[pa.Array]] = []  # the next batch's columns after the repeated ones, piece by piece
    rows: list[EntryRow] = []  # entries read one at a time, not yet in a piece
    size = 0
    while True:
        with _collector_paused():
            for item in items:
                if isinstance(item, ColumnRun):
                    if rows:
                        pieces.append(_row_columns(rows))
                        rows = []
                    pieces.append(_run_columns(item))
                    size += len(item)
                else:
                    rows.append(item)
                    size += 1
                if size >= KEYED_BATCH_ROWS:
                    break
            if rows:
                pieces.append(_row_columns(rows))
                rows = []
            if not pieces:
                return
            parts = [pa.concat_arrays(list(column)) for column in zip(*pieces, strict=True)]
            pieces = []
            size = 0
            arrow = pa.RecordBatch.from_arrays(
                [*(_repeated(value, kind, ready, len(parts[0])) for value, kind, ready in repeated), *parts],
                schema=SCHEMAS["keyed"],
            )
        yield arrow


def _repeated(value: object, kind: pa.DataType, ready: pa.Array, count: int) -> pa.Array:
    """A column of `count` times `value`: a slice of `ready` when it is long enough."""
    return ready.slice(0, count) if count <= len(ready) else pa.repeat(pa.scalar(value, kind), count)


def _row_columns(batch: list[EntryRow]) -> list[pa.Array]:
    """The columns of entries read one at a time, from their tuples (no row dicts): the state, key group, and
    the decoded parts as JSON text, and the status."""
    # (Lists, not tuples: pyarrow takes a tuple of strings some 50 times slower, pyarrow 25.)
    states, key_groups, keys, namespaces, user_keys, values, statuses = map(list, zip(*batch, strict=True))
    return [
        pa.array(states, pa.string()),
        pa.array(key_groups, pa.int32()),
        *(pa.array(json_texts(column), pa.string()) for column in (keys, namespaces, user_keys, values)),
        pa.array(statuses, pa.string()),
    ]


def _run_columns(run: ColumnRun) -> list[pa.Array]:
    """The columns of a run of entries read column by column (`keyed_columns`)."""
    count = len(run)
    return [
        pa.repeat(pa.scalar(run.state, pa.string()), count),
        pa.repeat(pa.scalar(run.key_group, pa.int32()), count),
        *run.columns(),
    ]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while one batch is decoded and built, on again before it is handed
    on: decoded entries hold no reference cycles (their memory goes by reference counting alone), and the
    collections their hundreds of thousands of allocations set off took a fifth of the `keyed` table's Python
    time (benchmarks/keyed_state.py), going over every object the worker holds."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
