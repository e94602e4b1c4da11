"""A savepoint as three flat, typed tables: what the `flink_savepoint` data source serves and the checks join.

- `operators`: one row per operator (id, uid, name, parallelism, whether it is a source).
- `splits`: one row per (reader split, topic partition): the partitions each source subtask held.
- `enumerator`: one row per (split or partition, topic partition) the enumerator checkpoint names, with its
  status: `pending` (not yet handed to a reader; such a partition must not also be held by one) or `assigned`.

Offsets are Kafka's *next* offset to read. Negative values are Flink's symbolic offsets kept as they are
(-2 earliest, -1 latest, -3 committed); a Kafka stopping offset of Long.MIN_VALUE (unbounded) becomes null.
Spark-free: plain rows and pyarrow tables, so the data source, the checks and the tests share one shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from splitaudit.savepoint_view import OperatorView, SavepointView
from splitaudit.splits.beam import FlinkSourceEnumeratorState, FlinkSourceSplit, UnboundedWrapperSplit
from splitaudit.splits.kafka import KafkaEnumeratorState, KafkaPartitionSplit
from splitaudit.splits.model import DecodedState
from splitaudit.splits.number_sequence import NumberSequenceEnumeratorState, NumberSequenceSplit

NO_STOPPING_OFFSET = -(2**63)  # Flink's KafkaPartitionSplit.NO_STOPPING_OFFSET (Long.MIN_VALUE)
PENDING = "pending"
ASSIGNED = "assigned"

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
        for split in op.source.reader_splits:
            rows += [_operator(view, op) | {"subtask": split.subtask} | r for r in _split_parts(split.state)]
    return rows


def enumerator_rows(view: SavepointView) -> list[dict[str, Any]]:
    """What each enumerator checkpoint names: pending splits (per target subtask when known) and, for Flink's
    KafkaSource, the partitions it has assigned."""
    rows = []
    for op in view.operators:
        if op.source is None or op.source.enumerator is None:
            continue
        base = _operator(view, op)
        for subtask, status, parts in _enumerator_parts(op.source.enumerator.state):
            rows += [base | {"subtask": subtask, "status": status} | r for r in parts]
    return rows


def _operator(view: SavepointView, op: OperatorView) -> dict[str, Any]:
    return {
        "operator_id": op.operator_id,
        "operator_uid": op.uid,
        "operator_name": op.name,
        "checkpoint_id": view.checkpoint_id,
        "kind": view.kind,
    }


def _split_parts(state: DecodedState) -> list[dict[str, Any]]:
    """The split columns of one decoded split: one dict per topic partition it covers."""
    if isinstance(state, KafkaPartitionSplit):
        return [_kafka_part(state)]
    if isinstance(state, FlinkSourceSplit | UnboundedWrapperSplit):
        split_id = str(state.split_index) if isinstance(state, FlinkSourceSplit) else None
        marks = {(m.topic, m.partition): m.next_offset for m in state.source.checkpoint or ()}
        parts = [(tp.topic, tp.partition) for tp in state.source.topic_partitions]
        parts += [key for key in marks if key not in parts]  # a mark for a partition the source does not list
        if not parts:
            return [_part(state.type, split_id, None, None, None)]
        return [
            _part(state.type, split_id, topic, partition, marks.get((topic, partition))) for topic, partition in parts
        ]
    if isinstance(state, NumberSequenceSplit):
        return [_part(state.type, state.split_id, None, None, state.from_value, state.to_value)]
    return [_part(state.type, None, None, None, None)]


def _enumerator_parts(state: DecodedState) -> Iterator[tuple[int | None, str, list[dict[str, Any]]]]:
    """(target subtask, status, split columns) of each split or partition an enumerator checkpoint names."""
    if isinstance(state, KafkaEnumeratorState):
        for assignment in state.partitions:
            status = ASSIGNED if assignment.status == "ASSIGNED" else PENDING
            if assignment.split is not None:
                yield None, status, [_kafka_part(assignment.split)]
            else:
                split_id = f"{assignment.topic}-{assignment.partition}"
                yield None, status, [_part(state.type, split_id, assignment.topic, assignment.partition, None)]
    elif isinstance(state, FlinkSourceEnumeratorState):
        for pending in state.pending:
            for split in pending.splits:
                yield pending.subtask, PENDING, _split_parts(split)
    elif isinstance(state, NumberSequenceEnumeratorState):
        for remaining in state.splits:
            yield None, PENDING, _split_parts(remaining)


def _kafka_part(split: KafkaPartitionSplit) -> dict[str, Any]:
    stopping = None if split.stopping_offset == NO_STOPPING_OFFSET else split.stopping_offset
    # KafkaPartitionSplit.splitId() is topic + "-" + partition.
    split_id = f"{split.topic}-{split.partition}"
    return _part(split.type, split_id, split.topic, split.partition, split.starting_offset, stopping)


def _part(
    split_type: str,
    split_id: str | None,
    topic: str | None,
    partition: int | None,
    next_offset: int | None,
    stopping_offset: int | None = None,
) -> dict[str, Any]:
    return {
        "split_type": split_type,
        "split_id": split_id,
        "topic": topic,
        "partition": partition,
        "next_offset": next_offset,
        "stopping_offset": stopping_offset,
    }
