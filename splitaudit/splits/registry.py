"""Picks the decoder for a piece of source state from evidence in the bytes, never from guesses about the job.

Evidence, in order: the state name (`SourceReaderState` for FLIP-27 readers, `_default_` for Beam's
`UnboundedSourceWrapper`), Java-serialization magic plus Beam class names, then the serializer version and
whether a family's layout consumes the bytes exactly. Nothing that fails to fit is an error here: it comes out
as `UnknownState` with its bytes, so an unfamiliar connector never stops `inspect`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.splits import beam, kafka, number_sequence
from splitaudit.splits.model import DecodedState, UnknownState

SOURCE_READER_STATE = "SourceReaderState"  # SourceOperator.SPLITS_STATE_DESC
UNBOUNDED_WRAPPER_STATE = beam.UNBOUNDED_WRAPPER_STATE

Decoder = Callable[[DataInput], DecodedState]


def _first_fit(payload: DataInput, candidates: Iterable[Decoder]) -> DecodedState:
    start = payload.tell()
    for decoder in candidates:
        payload.seek(start)
        try:
            return decoder(payload)
        except InputError:
            continue
    payload.seek(start)
    return UnknownState(payload.read_bytes(payload.remaining(), "unknown state"))


def decode_reader_split(serializer_version: int, payload: DataInput) -> DecodedState:
    """A FLIP-27 split from a `SourceReaderState` element (`SimpleVersionedSerialization` payload)."""
    data_start = payload.tell()
    head = payload.read_bytes(min(payload.remaining(), 128), "split head")
    payload.seek(data_start)
    if beam.looks_like_beam_split(head):
        # Identified as Beam by its class name: a failure from here on is corruption, not a foreign format.
        return beam.decode_split(payload)
    candidates: list[Decoder] = []
    if serializer_version == number_sequence.SERIALIZER_VERSION:
        candidates.append(number_sequence.decode_split)
    if serializer_version == kafka.SPLIT_SERIALIZER_VERSION:
        candidates.append(kafka.decode_split)
    return _first_fit(payload, candidates)


def decode_enumerator(serializer_version: int, payload: DataInput, reader_types: set[str]) -> DecodedState:
    """An enumerator checkpoint; the split types of the same operator's readers break ties.

    (An empty NumberSequenceSource checkpoint and an empty Kafka v1 checkpoint are both `00000000`.)
    """
    start = payload.tell()
    head = payload.read_bytes(min(payload.remaining(), 4), "enumerator head")
    payload.seek(start)
    if beam.is_java_serialization(head) and (not reader_types or "beam_flink_source" in reader_types):
        return beam.decode_enumerator(payload)
    candidates: list[tuple[str, Decoder]] = []
    if serializer_version == number_sequence.SERIALIZER_VERSION:
        candidates.append(("number_sequence", number_sequence.decode_enumerator))
    if serializer_version in kafka.ENUMERATOR_VERSIONS:
        candidates.append(("kafka", lambda inp: kafka.decode_enumerator(inp, serializer_version)))
    candidates.sort(key=lambda candidate: candidate[0] not in reader_types)
    return _first_fit(payload, (decoder for _, decoder in candidates))


def decode_unbounded_wrapper_element(element: DataInput) -> DecodedState:
    """A `_default_` list element: Beam's legacy source wrapper if it is a Java stream, else unknown."""
    start = element.tell()
    head = element.read_bytes(min(element.remaining(), 4), "element head")
    element.seek(start)
    if beam.is_java_serialization(head):
        return beam.decode_unbounded_wrapper_element(element)
    return UnknownState(element.read_bytes(element.remaining(), "unknown state"))
