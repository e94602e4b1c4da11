"""Picks the decoder for a piece of source state from evidence in the bytes, never from guesses about the job.

Evidence, in order: the state name (`SourceReaderState` for FLIP-27 readers, `_default_` for Beam's
`UnboundedSourceWrapper`), Java-serialization magic plus Beam class names, then the serializer version and
whether a family's layout consumes the bytes exactly. Nothing that fails to fit is an error here: it comes out
as `UnknownState` with its bytes, so an unfamiliar connector never stops `inspect`.

Adding a connector is one module in this package, whose split and enumerator classes implement `SplitState`
and `EnumeratorState` (`splitaudit/splits/model.py`: their JSON and the rows the audit's tables hold), and
one entry in `FAMILIES` below (a family whose bytes are Java serialization, as Beam's are, is told apart by
the class names in them instead: its entry is an evidence branch like Beam's). Nothing outside `splits/`
names a family's classes (tests/unit/test_split_families.py). The byte layouts each module relies on are
written down in `splitaudit/splits/FORMAT.md`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.splits import beam, dynamic_kafka, flink_file, kafka, number_sequence
from splitaudit.splits.model import EnumeratorState, SplitState, UnknownState

SOURCE_READER_STATE = "SourceReaderState"  # SourceOperator.SPLITS_STATE_DESC
UNBOUNDED_WRAPPER_STATE = beam.UNBOUNDED_WRAPPER_STATE


@dataclass(frozen=True)
class Family:
    """A FLIP-27 split family told apart by its serializer versions and by its layout consuming the bytes."""

    type: str  # the `type` of its decoded states
    split_versions: tuple[int, ...]
    decode_split: Callable[[DataInput, int], SplitState]  # payload, serializer version
    enumerator_versions: tuple[int, ...]
    decode_enumerator: Callable[[DataInput, int], EnumeratorState]  # payload, serializer version


FAMILIES = (
    Family(
        number_sequence.NumberSequenceSplit.type,
        (number_sequence.SERIALIZER_VERSION,),
        lambda payload, _version: number_sequence.decode_split(payload),
        (number_sequence.SERIALIZER_VERSION,),
        lambda payload, _version: number_sequence.decode_enumerator(payload),
    ),
    Family(
        kafka.KafkaPartitionSplit.type,
        (kafka.SPLIT_SERIALIZER_VERSION,),
        lambda payload, _version: kafka.decode_split(payload),
        kafka.ENUMERATOR_VERSIONS,
        kafka.decode_enumerator,
    ),
    Family(
        dynamic_kafka.DynamicKafkaSourceSplit.type,
        dynamic_kafka.SPLIT_SERIALIZER_VERSIONS,
        dynamic_kafka.decode_split,
        dynamic_kafka.ENUMERATOR_VERSIONS,
        dynamic_kafka.decode_enumerator,
    ),
    Family(
        flink_file.FileSourceSplit.type,
        (flink_file.SPLIT_SERIALIZER_VERSION,),
        lambda payload, _version: flink_file.decode_split(payload),
        flink_file.ENUMERATOR_VERSIONS,
        flink_file.decode_enumerator,
    ),
)

State = TypeVar("State", SplitState, EnumeratorState)


def _at_version(decoder: Callable[[DataInput, int], State], version: int) -> Callable[[DataInput], State]:
    return lambda inp: decoder(inp, version)


def _first_fit(payload: DataInput, candidates: Iterable[Callable[[DataInput], State]]) -> State:
    start = payload.tell()
    for decoder in candidates:
        payload.seek(start)
        try:
            return decoder(payload)
        except InputError:
            continue
    payload.seek(start)
    return UnknownState(payload.read_bytes(payload.remaining(), "unknown state"))


def decode_reader_split(serializer_version: int, payload: DataInput) -> SplitState:
    """A FLIP-27 split from a `SourceReaderState` element (`SimpleVersionedSerialization` payload)."""
    data_start = payload.tell()
    head = payload.read_bytes(min(payload.remaining(), 128), "split head")
    payload.seek(data_start)
    if beam.looks_like_beam_split(head):
        # Identified as Beam by its class name: a failure from here on is corruption, not a foreign format.
        return beam.decode_split(payload)
    candidates = (f.decode_split for f in FAMILIES if serializer_version in f.split_versions)
    return _first_fit(payload, (_at_version(decoder, serializer_version) for decoder in candidates))


def decode_enumerator(serializer_version: int, payload: DataInput, reader_types: set[str]) -> EnumeratorState:
    """An enumerator checkpoint; the split types of the same operator's readers break ties.

    (An empty NumberSequenceSource checkpoint and an empty Kafka v1 checkpoint are both `00000000`.)
    """
    start = payload.tell()
    head = payload.read_bytes(min(payload.remaining(), 4), "enumerator head")
    payload.seek(start)
    if beam.is_java_serialization(head) and (not reader_types or beam.FlinkSourceSplit.type in reader_types):
        return beam.decode_enumerator(payload)
    candidates = sorted(
        (f for f in FAMILIES if serializer_version in f.enumerator_versions),
        key=lambda f: f.type not in reader_types,
    )
    return _first_fit(payload, (_at_version(f.decode_enumerator, serializer_version) for f in candidates))


def decode_unbounded_wrapper_element(element: DataInput) -> SplitState:
    """A `_default_` list element: Beam's legacy source wrapper if it is a Java stream, else unknown."""
    start = element.tell()
    head = element.read_bytes(min(element.remaining(), 4), "element head")
    element.seek(start)
    if beam.is_java_serialization(head):
        return beam.decode_unbounded_wrapper_element(element)
    return UnknownState(element.read_bytes(element.remaining(), "unknown state"))
