"""Decoder choice from evidence in the bytes. Positive cases run on real fixtures (test_view); these are the
minimal hand-made cases the fixtures cannot show: tie-breaks and bytes nobody recognises."""

from __future__ import annotations

from splitaudit.primitives.datainput import DataInput
from splitaudit.splits import registry
from splitaudit.splits.kafka import KafkaEnumeratorState
from splitaudit.splits.model import UnknownState
from splitaudit.splits.number_sequence import NumberSequenceEnumeratorState


def test_unknown_serializer_version_is_kept_as_hex() -> None:
    decoded = registry.decode_reader_split(42, DataInput(b"\x01\x02\x03", "s"))
    assert decoded == UnknownState(b"\x01\x02\x03")
    assert (decoded.type, decoded.to_json()) == ("unknown", {"hex": "010203"})


def test_bytes_that_fit_no_layout_are_unknown_not_an_error() -> None:
    # Version 1 but not a NumberSequenceSplit (a UTF length pointing past the end).
    decoded = registry.decode_reader_split(1, DataInput(b"\x00\x09ab", "s"))
    assert decoded == UnknownState(b"\x00\x09ab")


def test_empty_enumerator_checkpoint_follows_the_readers() -> None:
    # NumberSequenceSource and Kafka enum-state v1 both write an empty list as 00000000.
    empty = b"\x00\x00\x00\x00"
    assert registry.decode_enumerator(1, DataInput(empty, "c"), {"number_sequence"}) == (
        NumberSequenceEnumeratorState(())
    )
    assert registry.decode_enumerator(1, DataInput(empty, "c"), {"kafka"}) == KafkaEnumeratorState(1, (), None)


def test_non_beam_java_object_in_default_state_is_unknown() -> None:
    decoded = registry.decode_unbounded_wrapper_element(DataInput(b"\x00\x00\x00\x01", "s"))
    assert decoded.type == "unknown"
