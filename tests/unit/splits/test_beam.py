"""Beam decoders on bytes written by Beam 2.62.0's own classes (fixtures/beam/, generate_beam_objects.py).

These are real state elements, not a savepoint: a Beam-on-Flink savepoint fixture comes from the pipeline
runs. What they prove is that the Java-serialization graphs Beam really writes (`FlinkSourceSplit`,
`KafkaUnboundedSource` with its whole `KafkaIO.Read` spec, the enumerator's `HashMap`, the wrapper's `KV`)
are read as data, and that `KafkaCheckpointMark` Avro bytes decode to the marks the program built.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.splits import registry
from splitaudit.splits.model import PENDING, EnumeratorEntry, PartitionRow

BEAM = Path(__file__).resolve().parents[3] / "fixtures" / "beam" / "serialization-2.62.0"
EXPECTED: dict[str, Any] = json.loads((BEAM / "expected.json").read_text())
READER_SPLITS = ["reader-split-started.bin", "reader-split-unstarted.bin", "counting-split.bin"]


def _versioned(name: str) -> tuple[int, DataInput]:
    """A `SimpleVersionedSerialization` blob: int version, int length, payload."""
    inp = DataInput((BEAM / name).read_bytes(), name)
    version = inp.read_int()
    payload = inp.sub(inp.read_length("payload length"), "payload")
    inp.expect_end(name)
    return version, payload


@pytest.mark.parametrize("name", READER_SPLITS)
def test_flink_source_split(name: str) -> None:
    version, payload = _versioned(name)
    decoded = registry.decode_reader_split(version, payload)
    expected = EXPECTED[name]
    assert (version, decoded.type, decoded.to_json()) == (
        expected["serializer_version"],
        expected["type"],
        expected["split"],
    )


def test_enumerator_checkpoint_map() -> None:
    version, payload = _versioned("enumerator.bin")
    decoded = registry.decode_enumerator(version, payload, set())
    expected = EXPECTED["enumerator.bin"]
    assert (version, decoded.type, decoded.to_json()) == (
        expected["serializer_version"],
        expected["type"],
        expected["state"],
    )


def test_unbounded_source_wrapper_element() -> None:
    name = "unbounded-wrapper-element.bin"
    decoded = registry.decode_unbounded_wrapper_element(DataInput((BEAM / name).read_bytes(), name))
    assert (decoded.type, decoded.to_json()) == (EXPECTED[name]["type"], EXPECTED[name]["split"])


def test_truncated_beam_split_is_an_input_error() -> None:
    version, payload = _versioned("reader-split-started.bin")
    data = payload.read_bytes(payload.remaining())
    for cut in (200, len(data) // 2, len(data) - 40, len(data) - 1):
        with pytest.raises(InputError) as error:
            registry.decode_reader_split(version, DataInput(data[:cut], "split"))
        assert "FlinkSourceSplit" in error.value.message
    # Cut before the class name: no evidence it is Beam's, so it stays unknown bytes.
    assert registry.decode_reader_split(version, DataInput(data[:10], "split")).type == "unknown"


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    name=st.sampled_from([*READER_SPLITS, "enumerator.bin"]),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), min_size=1, max_size=4),
)
def test_mutated_beam_bytes_never_escape(name: str, flips: list[tuple[int, int]]) -> None:
    """javaobj and fastavro see corrupted graphs; only InputError or an 'unknown' result may come out."""
    version, payload = _versioned(name)
    data = bytearray(payload.read_bytes(payload.remaining()))
    for at, mask in flips:
        data[at % len(data)] ^= mask
    try:
        if name == "enumerator.bin":
            registry.decode_enumerator(version, DataInput(bytes(data), name), set())
        else:
            registry.decode_reader_split(version, DataInput(bytes(data), name))
    except InputError:
        pass


def test_beam_states_describe_their_partitions() -> None:
    # What the audit's tables hold for each real element: one row per topic partition, offsets from the mark.
    version, payload = _versioned("reader-split-started.bin")
    assert registry.decode_reader_split(version, payload).partition_rows() == (
        PartitionRow("beam_flink_source", "1", "events", 1, 101),
        PartitionRow("beam_flink_source", "1", "events", 4, 104),
    )
    version, payload = _versioned("counting-split.bin")  # not Kafka: one row, no partition
    assert registry.decode_reader_split(version, payload).partition_rows() == (
        PartitionRow("beam_flink_source", "0", None, None, None),
    )
    name = "unbounded-wrapper-element.bin"
    wrapper = registry.decode_unbounded_wrapper_element(DataInput((BEAM / name).read_bytes(), name))
    assert wrapper.partition_rows() == (
        PartitionRow("beam_unbounded_wrapper", None, "events", 0, 100),
        PartitionRow("beam_unbounded_wrapper", None, "events", 3, 103),
    )
    version, payload = _versioned("enumerator.bin")  # split 2 waits for subtask 1, its reader never started
    assert registry.decode_enumerator(version, payload, set()).enumerator_entries() == (
        EnumeratorEntry(
            1,
            PENDING,
            (
                PartitionRow("beam_flink_source", "2", "events", 2, None),
                PartitionRow("beam_flink_source", "2", "events", 5, None),
            ),
        ),
    )
