"""The keyed state Flink's migration ITCases check after restoring their RocksDB native snapshots, written down
from the ITCases' sources (apache/flink, flink-tests/src/test/java/org/apache/flink/test/checkpointing/), as the
bytes each column family holds: key-group prefix stripped, the composite key's key and namespace, the value.

- `StatefulJobSnapshotMigrationITCase` (snapshots `new-stateful-udf-migration-itcase-flink<v>-rocksdb-*`):
  parallelism and max parallelism 4, two identical pipelines. `MigrationTestUtils`' sources emit
  `Tuple2(i, i)` for i in 0..3 (NUM_SOURCE_ELEMENTS = 4); `keyBy(0)` keys by `Tuple1<Long>` (8 bytes).
  `CheckingKeyedStateFlatMap` (uids `CheckpointingKeyedStateFlatMap1/2`) asserts value state `state-name`
  (`LongSerializer`, VoidNamespace: one 0 byte) == f1 for every element; `CheckingTimelyStatefulOperator` (uids
  `CheckpointingTimelyStatefulOperator1/2`) asserts `state-name` in namespace f0 (a Long) == f1, and that the
  event-time timers (registered at watermark 0 + 10, namespace f0) and processing-time timers (namespace f0) fire
  once per element: 4 + 4 timers in `_timer_state/event_timer` and `_timer_state/processing_timer`.
- `TypeSerializerSnapshotMigrationITCase` (`type-serializer-snapshot-migration-itcase-flink1.16-rocksdb-*`):
  parallelism and max parallelism 1, the same source, `keyBy(0)`, value state `testState` (a `TestSerializer`
  writing a Long) updated to f1.
"""

from __future__ import annotations


def long_bytes(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


VOID_NAMESPACE = b"\x00"
ELEMENTS = range(4)
STATEFUL_JOB_UIDS = {
    "CheckpointingKeyedStateFlatMap1": "flat_map",
    "CheckpointingKeyedStateFlatMap2": "flat_map",
    "CheckpointingTimelyStatefulOperator1": "timely",
    "CheckpointingTimelyStatefulOperator2": "timely",
}


def flat_map_state() -> set[tuple[bytes, bytes]]:
    """`state-name` of `CheckingKeyedStateFlatMap`: key (i,), VoidNamespace, value i."""
    return {(long_bytes(i) + VOID_NAMESPACE, long_bytes(i)) for i in ELEMENTS}


def timely_state() -> set[tuple[bytes, bytes]]:
    """`state-name` of `CheckingTimelyStatefulOperator`: key (i,), namespace i (a Long), value i."""
    return {(long_bytes(i) + long_bytes(i), long_bytes(i)) for i in ELEMENTS}


def event_timers() -> set[tuple[bytes, bytes]]:
    """Event-time timers (`TimerSerializer`: the timestamp with its sign bit flipped, the key, the namespace i).
    The ITCase registers them at `currentWatermark() + 10`; its elements reach the operator before the source's
    Watermark(0) does, so the watermark is still Long.MIN_VALUE: the timestamp is Long.MIN_VALUE + 10, flipped
    0x000000000000000a."""
    return {((10).to_bytes(8, "big") + long_bytes(i) + long_bytes(i), b"") for i in ELEMENTS}


def processing_timer_keys() -> set[bytes]:
    """Processing-time timers' key and namespace (their timestamps are wall-clock time + 30 s)."""
    return {long_bytes(i) + long_bytes(i) for i in ELEMENTS}


def type_serializer_state() -> set[tuple[bytes, bytes]]:
    """`testState` of `TypeSerializerSnapshotMigrationITCase`: key (i,), VoidNamespace, value i."""
    return {(long_bytes(i) + VOID_NAMESPACE, long_bytes(i)) for i in ELEMENTS}
