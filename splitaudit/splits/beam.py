"""Apache Beam sources on Flink: FLIP-27 `FlinkSourceSplit` and the legacy `UnboundedSourceWrapper` state.

Java serialization is parsed AS DATA with javaobj-py3's v1 unmarshaller; no class is ever loaded or run.
Layouts in splitaudit/splits/FORMAT.md, "Beam `FlinkSource`":

- Reader split (`SourceReaderState` element, Beam `SerdeUtils.getNaiveObjectSerializer()`, version 0):
  `ObjectOutputStream` of
  `org.apache.beam.runners.flink.translation.wrappers.streaming.io.source.FlinkSourceSplit`
  (Beam 2.52+; fields `int splitIndex`, `Source beamSplitSource`, `byte[] splitState`) whose `splitState` is
  the source's checkpoint-mark coder output.
- Enumerator checkpoint (coordinator payload, version 0): `HashMap<Integer, List<FlinkSourceSplit>>` of
  pending splits per subtask.
- Legacy/portable `UnboundedSourceWrapper`: operator list state `_default_`, each element a Java-serialized
  split source immediately followed by its checkpoint-mark coder bytes, no length prefix.
- Kafka: `org.apache.beam.sdk.io.kafka.KafkaUnboundedSource` (`id`, `spec.topicPartitions` of
  `org.apache.kafka.common.TopicPartition`) and `KafkaCheckpointMark` (AvroCoder reflect schema, fastavro).
  Other Beam sources come out with their class name and the checkpoint bytes as hex.

Read from bytes Beam 2.62.0 wrote: its own serializers' elements (fixtures/beam/serialization-2.62.0/: a
`FlinkSourceSplit` with `KafkaUnboundedSource` and `KafkaCheckpointMark`, the enumerator map, an
`UnboundedSourceWrapper` element, a `CountingSource` split) and whole savepoints of the reference pipeline on
Flink 1.19.3 (fixtures/beam_flink_source/), which tests/unit/test_fixtures.py decodes.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from splitaudit.primitives.datainput import DataInput
from splitaudit.primitives.javaser import STREAM_MAGIC, class_name, read_java_object
from splitaudit.splits.kafka import is_secret_setting
from splitaudit.splits.model import PENDING, EnumeratorEntry, PartitionRow

FLINK_SOURCE_SPLIT = "org.apache.beam.runners.flink.translation.wrappers.streaming.io.source.FlinkSourceSplit"
KAFKA_UNBOUNDED_SOURCE = "org.apache.beam.sdk.io.kafka.KafkaUnboundedSource"
UNBOUNDED_WRAPPER_STATE = "_default_"  # DefaultOperatorStateBackend.DEFAULT_OPERATOR_STATE_NAME

# KafkaCheckpointMark under AvroCoder (ReflectData): a non-null array of PartitionMark records. Beam 2.62.0
# writes the PartitionMark fields in name order (nextOffset, partition, topic, watermarkMillis: seen in the
# bytes its own AvroCoder wrote); declaration order (topic, partition, nextOffset, watermarkMillis) is tried
# too.
_PARTITION_MARK_FIELDS = {
    "nextOffset": {"name": "nextOffset", "type": "long"},
    "partition": {"name": "partition", "type": "int"},
    "topic": {"name": "topic", "type": "string"},
    "watermarkMillis": {"name": "watermarkMillis", "type": "long"},
}


@functools.cache
def _kafka_checkpoint_mark_schemas() -> tuple[Any, ...]:
    """The parsed schemas, built on first use: fastavro is imported only for savepoints that hold Beam Kafka
    state, not by every `inspect`."""
    import fastavro

    return tuple(
        fastavro.parse_schema(
            {
                "type": "record",
                "name": "KafkaCheckpointMark",
                "namespace": "org.apache.beam.sdk.io.kafka",
                "fields": [
                    {
                        "name": "partitions",
                        "type": {
                            "type": "array",
                            "items": {
                                "type": "record",
                                "name": "PartitionMark",
                                "fields": [_PARTITION_MARK_FIELDS[name] for name in order],
                            },
                        },
                    }
                ],
            }
        )
        for order in (
            ("nextOffset", "partition", "topic", "watermarkMillis"),
            ("topic", "partition", "nextOffset", "watermarkMillis"),
        )
    )


@dataclass(frozen=True)
class TopicPartition:
    """`org.apache.kafka.common.TopicPartition` as found in `KafkaIO.Read.topicPartitions`."""

    topic: str
    partition: int

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition}


@dataclass(frozen=True)
class PartitionMark:
    """`KafkaCheckpointMark.PartitionMark`: `next_offset` is the next offset to read."""

    topic: str
    partition: int
    next_offset: int
    watermark_millis: int

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "next_offset": self.next_offset,
            "watermark_millis": self.watermark_millis,
        }


ConfigScalar = str | bool | int | float


@dataclass(frozen=True)
class ConsumerConfig:
    """A Kafka consumer config map of `KafkaIO.Read` (`consumerConfig`, `offsetConsumerConfig`), as the job put it.

    `values` holds the entries whose value is a Java scalar (`String`, `Boolean`, a boxed number), exactly as
    written, never interpreted; `not_shown` names the Java class of every other entry (a `Class`, a list, a
    `Password`) and of the entries that hold secrets (`kafka.is_secret_setting`), whose values are never shown.
    Both sorted by key.
    """

    values: tuple[tuple[str, ConfigScalar], ...]
    not_shown: tuple[tuple[str, str], ...] = ()

    def get(self, key: str) -> ConfigScalar | None:
        """The scalar value of `key`, None when absent or not a scalar."""
        return dict(self.values).get(key)

    def to_json(self) -> dict[str, Any]:
        return {"values": dict(self.values), "not_shown": dict(self.not_shown)}


@dataclass(frozen=True)
class KafkaIORead:
    """The consumer settings of `KafkaIO.Read` (`AutoValue_KafkaIO_Read`, the `spec` of a KafkaUnboundedSource)
    that decide where a reader without a checkpoint mark starts and what it commits.

    Read from the class descriptor of each savepoint, since releases differ in the fields they have: a field
    the release does not have is None. `consumer_config` is `KafkaIO.read()`'s defaults merged with the job's
    updates (Beam 2.54.0-2.70.0 `KafkaIOUtils.DEFAULT_CONSUMER_PROPERTIES` put `auto.offset.reset=latest` and
    `enable.auto.commit=false` in it); `start_read_time` is `startReadTime` in epoch milliseconds.
    """

    java_class: str
    consumer_config: ConsumerConfig
    offset_consumer_config: ConsumerConfig | None
    commit_offsets_in_finalize_enabled: bool | None
    start_read_time: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "java_class": self.java_class,
            "consumer_config": self.consumer_config.to_json(),
            "offset_consumer_config": None
            if self.offset_consumer_config is None
            else self.offset_consumer_config.to_json(),
            "commit_offsets_in_finalize_enabled": self.commit_offsets_in_finalize_enabled,
            "start_read_time": self.start_read_time,
        }


@dataclass(frozen=True)
class BeamSource:
    """A serialized Beam split source: its class, Kafka partitions, decoded or raw checkpoint mark, and for
    KafkaIO the read's consumer settings (`spec`)."""

    source_class: str
    topic_partitions: tuple[TopicPartition, ...]
    checkpoint: tuple[PartitionMark, ...] | None
    checkpoint_bytes: bytes | None  # the mark as written by its coder; kept raw for non-Kafka sources
    spec: KafkaIORead | None = None  # KafkaUnboundedSource only

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "source_class": self.source_class,
            "topic_partitions": [tp.to_json() for tp in self.topic_partitions],
            "checkpoint": None
            if self.checkpoint is None
            else {"partitions": [mark.to_json() for mark in self.checkpoint]},
        }
        if self.checkpoint is None and self.checkpoint_bytes:
            document["checkpoint_hex"] = self.checkpoint_bytes.hex()
        document["spec"] = None if self.spec is None else self.spec.to_json()
        return document

    def partition_rows(self, split_type: str, split_id: str | None) -> tuple[PartitionRow, ...]:
        """One row per partition the source lists, then per partition only its checkpoint mark names; the
        mark's next offset where there is one. A source with neither (not Kafka) is one row without a topic."""
        marks = {(m.topic, m.partition): m.next_offset for m in self.checkpoint or ()}
        parts = [(tp.topic, tp.partition) for tp in self.topic_partitions]
        parts += [key for key in marks if key not in parts]
        if not parts:
            return (PartitionRow(split_type, split_id, None, None, None),)
        return tuple(PartitionRow(split_type, split_id, t, p, marks.get((t, p))) for t, p in parts)


@dataclass(frozen=True)
class FlinkSourceSplit:
    """Beam's `FlinkSourceSplit` (2.52+): one Beam source split and, once its reader started, its mark."""

    type: ClassVar[str] = "beam_flink_source"
    split_index: int
    source: BeamSource

    def to_json(self) -> dict[str, Any]:
        return {"split_index": self.split_index, **self.source.to_json()}

    def partition_rows(self) -> tuple[PartitionRow, ...]:
        return self.source.partition_rows(self.type, str(self.split_index))


@dataclass(frozen=True)
class PendingSplits:
    """Splits the enumerator holds for one subtask (not yet handed to its reader)."""

    subtask: int
    splits: tuple[FlinkSourceSplit, ...]

    def to_json(self) -> dict[str, Any]:
        return {"subtask": self.subtask, "splits": [split.to_json() for split in self.splits]}


@dataclass(frozen=True)
class FlinkSourceEnumeratorState:
    """`FlinkSourceSplitEnumerator.snapshotState`: `HashMap<Integer, List<FlinkSourceSplit>>`."""

    type: ClassVar[str] = "beam_flink_source"
    pending: tuple[PendingSplits, ...]

    def to_json(self) -> dict[str, Any]:
        return {"pending": [p.to_json() for p in self.pending]}

    def enumerator_entries(self) -> tuple[EnumeratorEntry, ...]:
        return tuple(
            EnumeratorEntry(p.subtask, PENDING, split.partition_rows()) for p in self.pending for split in p.splits
        )


@dataclass(frozen=True)
class UnboundedWrapperSplit:
    """One `_default_` element of `UnboundedSourceWrapper`: `KV<UnboundedSource, CheckpointMark>`."""

    type: ClassVar[str] = "beam_unbounded_wrapper"
    source: BeamSource

    def to_json(self) -> dict[str, Any]:
        return self.source.to_json()

    def partition_rows(self) -> tuple[PartitionRow, ...]:
        """The wrapper keeps no split id."""
        return self.source.partition_rows(self.type, None)


def kafka_read_spec(states: Iterable[object]) -> KafkaIORead | None:
    """The KafkaIO read spec of the first Beam Kafka source among decoded reader splits and enumerator states (of
    one operator): `KafkaUnboundedSource.split` copies one spec into every split, changing only its topics and
    partitions. None when no state is a Beam Kafka source."""
    for state in states:
        sources: list[BeamSource] = []
        if isinstance(state, FlinkSourceSplit | UnboundedWrapperSplit):
            sources = [state.source]
        elif isinstance(state, FlinkSourceEnumeratorState):
            sources = [split.source for pending in state.pending for split in pending.splits]
        for source in sources:
            if source.spec is not None:
                return source.spec
    return None


def kafka_checkpoint_marks(state: object) -> tuple[PartitionMark, ...]:
    """The KafkaIO checkpoint marks a decoded reader split holds (each partition's position and the watermark its
    timestamp policy had given it); none for any other split."""
    if isinstance(state, FlinkSourceSplit | UnboundedWrapperSplit):
        return state.source.checkpoint or ()
    return ()


def is_java_serialization(data: bytes) -> bool:
    return data.startswith(STREAM_MAGIC)


def _field(inp: DataInput, value: Any, name: str, at: int) -> Any:
    if not hasattr(value, name):
        raise inp.error(f"{class_name(value)} has no field {name!r}", at)
    return getattr(value, name)


def _as_int(inp: DataInput, value: Any, what: str, at: int) -> int:
    raw = getattr(value, "value", value)  # java.lang.Integer arrives as an object with .value
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise inp.error(f"{what} is not an integer", at)
    return raw


def _as_list(inp: DataInput, value: Any, what: str, at: int) -> list[Any]:
    if isinstance(value, list):  # java.util.ArrayList / LinkedList
        return list(value)
    elements = getattr(value, "elements", None)  # Guava ImmutableList$SerializedForm (vendored or not)
    if isinstance(elements, list):
        return list(elements)
    raise inp.error(f"{what} is a {class_name(value)}, not a list", at)


def _as_bytes(inp: DataInput, value: Any, what: str, at: int) -> bytes:
    try:
        return bytes(b & 0xFF for b in value)  # javaobj's JavaByteArray yields signed ints
    except TypeError:
        raise inp.error(f"{what} is not a byte array", at) from None


def _topic_partitions(inp: DataInput, source: Any, at: int) -> tuple[TopicPartition, ...]:
    spec = _field(inp, source, "spec", at)
    partitions = []
    for tp in _as_list(inp, _field(inp, spec, "topicPartitions", at), "KafkaIO.Read.topicPartitions", at):
        topic = _field(inp, tp, "topic", at)
        if not isinstance(topic, str):
            raise inp.error("TopicPartition.topic is not a string", at)
        partitions.append(TopicPartition(topic, _as_int(inp, _field(inp, tp, "partition", at), "partition", at)))
    return tuple(partitions)


def _kafka_checkpoint_mark(inp: DataInput, data: bytes, at: int) -> tuple[PartitionMark, ...]:
    """`AvroCoder.of(KafkaCheckpointMark.class)` bytes; one of the known schemas must consume them exactly."""
    import fastavro

    for schema in _kafka_checkpoint_mark_schemas():
        stream = io.BytesIO(data)
        try:
            record: Any = fastavro.schemaless_reader(stream, schema, None)
        except Exception:  # fastavro raises EOFError, ValueError, UnicodeDecodeError, … on bytes that do not fit
            continue
        if stream.tell() == len(data):
            return tuple(
                PartitionMark(m["topic"], m["partition"], m["nextOffset"], m["watermarkMillis"])
                for m in record["partitions"]
            )
    raise inp.error("the split state is not a KafkaCheckpointMark (Avro)", at)


_JAVA_SCALARS = frozenset(
    {
        "java.lang.Boolean",
        "java.lang.Byte",
        "java.lang.Short",
        "java.lang.Integer",
        "java.lang.Long",
        "java.lang.Float",
        "java.lang.Double",
    }
)


def _consumer_config(inp: DataInput, value: Any, what: str, at: int) -> ConsumerConfig:
    """A `Map<String, Object>` of consumer settings: its scalar values as written, the rest by class name."""
    if not isinstance(value, dict):  # java.util.HashMap (and Guava's maps) arrive as dicts
        raise inp.error(f"{what} is a {class_name(value)}, not a map", at)
    values: list[tuple[str, ConfigScalar]] = []
    not_shown: list[tuple[str, str]] = []
    for key, entry in value.items():
        if not isinstance(key, str):
            raise inp.error(f"{what} has a key of class {class_name(key)}, not a String", at)
        key = str(key)
        if isinstance(entry, str):
            scalar: ConfigScalar | None = str(entry)
            java_class = "java.lang.String"
        else:
            java_class = class_name(entry)
            raw = getattr(entry, "value", None)
            scalar = raw if java_class in _JAVA_SCALARS and isinstance(raw, bool | int | float) else None
        if scalar is None or is_secret_setting(key):
            not_shown.append((key, java_class))
        else:
            values.append((key, scalar))
    return ConsumerConfig(tuple(sorted(values)), tuple(sorted(not_shown)))


def _declared(value: Any) -> set[str]:
    """The field names the class descriptors of `value` (its class and superclasses) declare."""
    names: set[str] = set()
    descriptor = getattr(value, "classdesc", None)
    while descriptor is not None:
        names.update(getattr(descriptor, "fields_names", ()))
        descriptor = getattr(descriptor, "superclass", None)
    return names


def _instant_millis(inp: DataInput, value: Any, what: str, at: int) -> int | None:
    """A joda `Instant` (field `iMillis`) in epoch milliseconds; None for null."""
    if value is None:
        return None
    millis = getattr(value, "iMillis", None)
    if class_name(value) != "org.joda.time.Instant" or not isinstance(millis, int):
        raise inp.error(f"{what} is a {class_name(value)}, not an org.joda.time.Instant", at)
    return millis


def _kafka_io_read(inp: DataInput, source: Any, at: int) -> KafkaIORead:
    """`KafkaUnboundedSource.spec`'s consumer settings, from the fields its class descriptor declares."""
    spec = _field(inp, source, "spec", at)
    declared = _declared(spec)
    if "consumerConfig" not in declared:
        raise inp.error(f"{class_name(spec)} declares no consumerConfig", at)

    def optional(name: str) -> Any:
        return getattr(spec, name, None) if name in declared else None

    config = _consumer_config(inp, spec.consumerConfig, "KafkaIO.Read.consumerConfig", at)
    offset_raw = optional("offsetConsumerConfig")
    offset = None if offset_raw is None else _consumer_config(inp, offset_raw, "offsetConsumerConfig", at)
    commit = optional("commitOffsetsInFinalizeEnabled")
    if commit is not None and not isinstance(commit, bool):
        raise inp.error("KafkaIO.Read.commitOffsetsInFinalizeEnabled is not a boolean", at)
    start = _instant_millis(inp, optional("startReadTime"), "KafkaIO.Read.startReadTime", at)
    return KafkaIORead(class_name(spec), config, offset, commit, start)


def _beam_source(inp: DataInput, source: Any, mark: bytes | None, at: int) -> BeamSource:
    source_class = class_name(source)
    if source_class != KAFKA_UNBOUNDED_SOURCE:
        return BeamSource(source_class, (), None, mark)
    checkpoint = None if mark is None else _kafka_checkpoint_mark(inp, mark, at)
    return BeamSource(
        source_class, _topic_partitions(inp, source, at), checkpoint, mark, _kafka_io_read(inp, source, at)
    )


def _flink_source_split(inp: DataInput, value: Any, at: int) -> FlinkSourceSplit:
    if class_name(value) != FLINK_SOURCE_SPLIT:
        raise inp.error(f"expected a FlinkSourceSplit, found {class_name(value)}", at)
    index = _as_int(inp, _field(inp, value, "splitIndex", at), "FlinkSourceSplit.splitIndex", at)
    state = _field(inp, value, "splitState", at)
    mark = None if state is None else _as_bytes(inp, state, "FlinkSourceSplit.splitState", at)
    return FlinkSourceSplit(index, _beam_source(inp, _field(inp, value, "beamSplitSource", at), mark, at))


def decode_split(inp: DataInput) -> FlinkSourceSplit:
    """A `SourceReaderState` payload written by Beam's naive object serializer."""
    at = inp.tell()
    value = read_java_object(inp, "FlinkSourceSplit")
    inp.expect_end("the FlinkSourceSplit")
    return _flink_source_split(inp, value, at)


def decode_enumerator(inp: DataInput) -> FlinkSourceEnumeratorState:
    """The coordinator payload: a serialized `HashMap<Integer, List<FlinkSourceSplit>>`."""
    at = inp.tell()
    value = read_java_object(inp, "FlinkSource enumerator checkpoint")
    inp.expect_end("the FlinkSource enumerator checkpoint")
    if not isinstance(value, dict):
        raise inp.error(f"expected a java.util.HashMap, found {class_name(value)}", at)
    pending = [
        PendingSplits(
            _as_int(inp, key, "subtask id", at),
            tuple(_flink_source_split(inp, split, at) for split in _as_list(inp, splits, "pending splits", at)),
        )
        for key, splits in value.items()
    ]
    return FlinkSourceEnumeratorState(tuple(sorted(pending, key=lambda p: p.subtask)))


def decode_unbounded_wrapper_element(inp: DataInput) -> UnboundedWrapperSplit:
    """A `_default_` element: a Java-serialized `UnboundedSource`, then its checkpoint mark to the end."""
    at = inp.tell()
    source = read_java_object(inp, "UnboundedSource")
    mark = inp.read_bytes(inp.remaining(), "checkpoint mark")
    return UnboundedWrapperSplit(_beam_source(inp, source, mark, at))


def looks_like_beam_split(data: bytes) -> bool:
    """Evidence in the bytes: a Java stream whose first class descriptor is Beam's FlinkSourceSplit."""
    return is_java_serialization(data) and FLINK_SOURCE_SPLIT.encode() in data[:128]
