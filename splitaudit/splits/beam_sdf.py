"""KafkaIO's splittable-DoFn read on Beam's portable Flink runner: the residuals its keyed state holds.

When a bundle of the stage that runs `ReadFromKafkaDoFn` checkpoints, Beam's
`BundleCheckpointHandlers.StateAndTimerBundleCheckpointHandler` keeps each residual in a value state named
`sdf_checkpoint:<bundle>:<n>` under the element's key (namespace: the window's, `//` for the global window) and
sets a processing-time timer with that name as its id; when the timer fires the residual is processed again.
The value is a `WindowedValue<KV<KV<element, KV<restriction, watermark state>>, size>>` whose components the
runner keeps as opaque SDK bytes (`LengthPrefixCoder(ByteArrayCoder)`, `splits/beam_coders.py`):

- element: `KafkaSourceDescriptor`, a `Row` (`splits/beam_row.py`) of topic, partition and the optional
  start/stop offsets and times and bootstrap servers (Beam 2.62.0: field order from `getDeclaredMethods`);
- restriction: `OffsetRange.Coder`, `VarLong from, VarLong to`: the offsets `[from, to)` still to read (`to` is
  `Long.MAX_VALUE` for a read without a stop);
- watermark state: `InstantCoder`, the watermark estimator's last watermark.

The handler never clears a value once its timer has fired, so a key accumulates one value per checkpointed
bundle (beam#27648); only the value the key's pending timer names is resumed on restore. Each Kafka partition
comes out as one `KafkaSdfResidual`: the resumed value, with the values no timer names as `superseded`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from splitaudit.errors import InputError
from splitaudit.splits.beam_coders import (
    KV,
    VARINT_BYTES,
    EncodedBytes,
    TimerData,
    WindowedValue,
    read_instant,
    read_var_long,
)
from splitaudit.splits.beam_row import Field, read_row_unordered
from splitaudit.splits.model import PartitionRow

SDF_CHECKPOINT_PREFIX = "sdf_checkpoint:"  # StateAndTimerBundleCheckpointHandler.SDF_PREFIX + ":"
LONG_MAX = (1 << 63) - 1
PROCESSING_TIME = "PROCESSING_TIME"  # TimeDomain of the timer that resumes a residual
# The operator list state of the Impulse a portable pipeline's reads start from (Beam's ImpulseSourceFunction on
# the portable Flink runner): seen in the fixtures' savepoints, on an operator of parallelism 1 with no uid.
IMPULSE_STATE = "impulse-emitted"

# KafkaSourceDescriptor's schema fields (@SchemaFieldName), in no particular order: Beam 2.62.0 does not fix it.
KAFKA_SOURCE_DESCRIPTOR_FIELDS = (
    Field("topic", "STRING", nullable=False),
    Field("partition", "INT32", nullable=False),
    Field("start_read_offset", "INT64", nullable=True),
    Field("start_read_time", "DATETIME", nullable=True),
    Field("stop_read_offset", "INT64", nullable=True),
    Field("stop_read_time", "DATETIME", nullable=True),
    Field("bootstrap_servers", "ARRAY<STRING>", nullable=True),
)


@dataclass(frozen=True)
class KafkaSourceDescriptor:
    """`org.apache.beam.sdk.io.kafka.KafkaSourceDescriptor`: what one Kafka partition's read was asked to do."""

    topic: str
    partition: int
    start_read_offset: int | None
    start_read_time: int | None  # epoch ms
    stop_read_offset: int | None
    stop_read_time: int | None
    bootstrap_servers: tuple[str, ...] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "start_read_offset": self.start_read_offset,
            "start_read_time": self.start_read_time,
            "stop_read_offset": self.stop_read_offset,
            "stop_read_time": self.stop_read_time,
            "bootstrap_servers": None if self.bootstrap_servers is None else list(self.bootstrap_servers),
        }


@dataclass(frozen=True)
class OffsetRange:
    """`org.apache.beam.sdk.io.range.OffsetRange`: `[start, end)`; `end` Long.MAX_VALUE is unbounded."""

    start: int
    end: int

    def to_json(self) -> dict[str, Any]:
        return {"from": self.start, "to": self.end}


@dataclass(frozen=True)
class SdfCheckpoint:
    """One `sdf_checkpoint:<bundle>:<n>` value: the residual's restriction and watermark, where it is held."""

    state: str
    subtask: int
    key_group: int
    descriptor: KafkaSourceDescriptor
    restriction: OffsetRange
    watermark: int  # epoch ms

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "subtask": self.subtask,
            "key_group": self.key_group,
            "restriction": self.restriction.to_json(),
            "watermark": self.watermark,
        }


@dataclass(frozen=True)
class KafkaSdfResidual:
    """One Kafka partition of a splittable-DoFn read: the residual its pending timer resumes (None when no timer
    names any of its values: nothing resumes it), and the values no timer names."""

    type: ClassVar[str] = "beam_kafka_sdf"
    descriptor: KafkaSourceDescriptor
    resumed: SdfCheckpoint | None
    superseded: tuple[SdfCheckpoint, ...]

    def to_json(self) -> dict[str, Any]:
        resumed = self.resumed
        return {
            "topic": self.descriptor.topic,
            "partition": self.descriptor.partition,
            "restriction": None if resumed is None else resumed.restriction.to_json(),
            "state": None if resumed is None else resumed.state,
            "key_group": None if resumed is None else resumed.key_group,
            "watermark": None if resumed is None else resumed.watermark,
            "descriptor": self.descriptor.to_json(),
            "superseded": [checkpoint.to_json() for checkpoint in self.superseded],
        }

    def partition_rows(self) -> tuple[PartitionRow, ...]:
        """The partition, from the resumed residual's restriction; a partition nothing resumes holds nothing."""
        if self.resumed is None:
            return (PartitionRow(self.type, None, None, None, None),)
        restriction = self.resumed.restriction
        stop = None if restriction.end == LONG_MAX else restriction.end
        row = PartitionRow(
            self.type, self.resumed.state, self.descriptor.topic, self.descriptor.partition, restriction.start, stop
        )
        return (row,)


def is_sdf_checkpoint_state(name: str) -> bool:
    return name.startswith(SDF_CHECKPOINT_PREFIX)


def read_kafka_source_descriptor(element: EncodedBytes) -> KafkaSourceDescriptor:
    """The element of KafkaIO's splittable DoFn: a `KafkaSourceDescriptor` row."""
    row = read_row_unordered(element.input(), KAFKA_SOURCE_DESCRIPTOR_FIELDS, "KafkaSourceDescriptor")
    servers = row["bootstrap_servers"]
    return KafkaSourceDescriptor(
        row["topic"],
        row["partition"],
        row["start_read_offset"],
        row["start_read_time"],
        row["stop_read_offset"],
        row["stop_read_time"],
        None if servers is None else tuple(servers),
    )


def read_offset_range(restriction: EncodedBytes) -> OffsetRange:
    """`OffsetRange.Coder`: `VarLong from, VarLong to`, nothing after."""
    inp = restriction.input()
    at = inp.tell()
    start, end = read_var_long(inp, "restriction from"), read_var_long(inp, "restriction to")
    inp.expect_end("OffsetRange")
    if start > end:
        raise inp.error(f"restriction [{start}, {end}) ends before it starts", at)
    return OffsetRange(start, end)


def read_watermark_state(state: EncodedBytes) -> int:
    """The watermark estimator state of `ReadFromKafkaDoFn`: an `InstantCoder` Instant."""
    inp = state.input()
    watermark = read_instant(inp, "watermark estimator state")
    inp.expect_end("watermark estimator state")
    return watermark


def read_sdf_checkpoint(state: str, subtask: int, key_group: int, value: Any) -> SdfCheckpoint:
    """An `sdf_checkpoint` value as the keyed reader decoded it (`beam_coders.WindowedValue`) into its residual."""
    shape = "WindowedValue<KV<KV<element bytes, KV<restriction bytes, watermark bytes>>, size>>"
    if not isinstance(value, WindowedValue) or not isinstance(value.value, KV):
        raise _shape_error(value, state, shape)
    element_and_restriction = value.value.key
    if not isinstance(element_and_restriction, KV) or not isinstance(element_and_restriction.value, KV):
        raise _shape_error(value, state, shape)
    element = element_and_restriction.key
    restriction, watermark = element_and_restriction.value.key, element_and_restriction.value.value
    if not all(isinstance(part, EncodedBytes) for part in (element, restriction, watermark)):
        raise _shape_error(value, state, shape)
    return SdfCheckpoint(
        state,
        subtask,
        key_group,
        read_kafka_source_descriptor(element),
        read_offset_range(restriction),
        read_watermark_state(watermark),
    )


def _shape_error(value: Any, state: str, shape: str) -> InputError:
    where = _first_bytes(value)
    path, offset = ("", None) if where is None else (where.path, where.offset)
    return InputError(path, offset, f"state {state!r} does not hold a {shape} (Beam's SDF residual)")


def _first_bytes(value: Any) -> EncodedBytes | None:
    """Any byte array inside a decoded value, to say where a misshapen one lies."""
    if isinstance(value, EncodedBytes):
        return value
    for part in (getattr(value, "value", None), getattr(value, "key", None)):
        if part is not None and part is not value and (found := _first_bytes(part)) is not None:
            return found
    return None


def kafka_sdf_residuals(
    checkpoints: list[SdfCheckpoint], resumed_states: dict[tuple[str, int], set[str]]
) -> tuple[KafkaSdfResidual, ...]:
    """One residual per (topic, partition): the value its key's pending timer names (`resumed_states`: per
    (topic, partition), the timer ids of its processing-time timers), the rest superseded. Two resumed values
    of one partition (two keys, or two timers) come out as two residuals, which the assignment audit flags."""
    by_partition: dict[tuple[str, int], list[SdfCheckpoint]] = {}
    for checkpoint in checkpoints:
        key = (checkpoint.descriptor.topic, checkpoint.descriptor.partition)
        by_partition.setdefault(key, []).append(checkpoint)
    residuals = []
    for key in sorted(by_partition):
        held = sorted(by_partition[key], key=lambda c: (c.subtask, c.key_group, c.state))
        timers = resumed_states.get(key, set())
        resumed = [c for c in held if c.state in timers]
        superseded = tuple(c for c in held if c.state not in timers)
        descriptor = held[0].descriptor
        if not resumed:
            residuals.append(KafkaSdfResidual(descriptor, None, superseded))
        residuals += [KafkaSdfResidual(c.descriptor, c, superseded) for c in resumed]
    return tuple(residuals)


def residual_timer(key: Any, namespace: Any) -> tuple[tuple[str, int], str] | None:
    """The (topic, partition) and id of a timer entry (its key and `TimerData` namespace) when it is the
    processing-time timer Beam set to resume an SDF residual; None for any other timer."""
    if not isinstance(namespace, TimerData) or not isinstance(key, EncodedBytes):
        return None
    if namespace.domain != PROCESSING_TIME or not is_sdf_checkpoint_state(namespace.timer_id):
        return None
    return timer_partition(key), namespace.timer_id


def timer_partition(timer_key: EncodedBytes) -> tuple[str, int]:
    """The (topic, partition) of a timer's key: the `ByteBufferCoder` bytes of the element's key coder
    (`LengthPrefixCoder`: a VarInt length, then the KafkaSourceDescriptor row)."""
    inp = timer_key.input()
    length = inp.read_varint("timer key length", VARINT_BYTES)
    at = inp.offset()
    element = EncodedBytes(inp.read_bytes(length, "timer key element"), inp.path, at)
    inp.expect_end("timer key")
    descriptor = read_kafka_source_descriptor(element)
    return descriptor.topic, descriptor.partition
