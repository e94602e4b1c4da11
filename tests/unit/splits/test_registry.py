"""Decoder choice from evidence in the bytes. Positive cases run on real fixtures (test_view); these are the
minimal hand-made cases the fixtures cannot show: tie-breaks and bytes nobody recognises."""

from __future__ import annotations

from splitaudit.primitives.datainput import DataInput
from splitaudit.splits import registry
from splitaudit.splits.kafka import KafkaEnumeratorState, KafkaPartitionAssignment, KafkaPartitionSplit
from splitaudit.splits.model import ASSIGNED, PENDING, EnumeratorEntry, PartitionRow, UnknownState
from splitaudit.splits.number_sequence import NumberSequenceEnumeratorState, NumberSequenceSplit


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


def test_enumerators_describe_pending_and_assigned_partitions() -> None:
    # Kafka enum state v2 keeps only (topic, partition, status): an UNASSIGNED partition is pending, no offset.
    kafka = KafkaEnumeratorState(
        2,
        (
            KafkaPartitionAssignment("t", 0, "ASSIGNED", None),
            KafkaPartitionAssignment("t", 1, "UNASSIGNED", KafkaPartitionSplit("t", 1, 42, -(2**63))),
        ),
        True,
    )
    assert kafka.enumerator_entries() == (
        EnumeratorEntry(None, ASSIGNED, (PartitionRow("kafka", "t-0", "t", 0, None),)),
        EnumeratorEntry(None, PENDING, (PartitionRow("kafka", "t-1", "t", 1, 42, None),)),
    )
    sequence = NumberSequenceEnumeratorState((NumberSequenceSplit("3", 7, 9),))
    assert sequence.enumerator_entries() == (
        EnumeratorEntry(None, PENDING, (PartitionRow("number_sequence", "3", None, None, 7, 9),)),
    )
    assert UnknownState(b"\x00").enumerator_entries() == ()
    assert UnknownState(b"\x00").partition_rows() == (PartitionRow("unknown", None, None, None, None),)
