"""Beam decoders on bytes written by Beam 2.62.0's own classes (fixtures/beam/, generate_beam_objects.py).

These are real state elements, not a savepoint (whole Beam-on-Flink savepoints are in
fixtures/beam_flink_source/). That every element decodes to its expected.json is checked in
tests/unit/test_fixtures.py; these tests are about corrupt bytes and the rows the audit gets.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.splits import registry
from splitaudit.splits.model import PENDING, EnumeratorEntry, EnumeratorState, PartitionRow, SplitState, UnknownState
from tests.unit.conftest import versioned

BEAM = Path(__file__).resolve().parents[3] / "fixtures" / "beam" / "serialization-2.62.0"
READER_SPLITS = ["reader-split-started.bin", "reader-split-unstarted.bin", "counting-split.bin"]


def _versioned(name: str) -> tuple[int, DataInput]:
    return versioned(BEAM / name)


def test_truncated_beam_split_is_an_input_error() -> None:
    version, payload = _versioned("reader-split-started.bin")
    data = payload.read_bytes(payload.remaining())
    for cut in (200, len(data) // 2, len(data) - 40, len(data) - 1):
        with pytest.raises(InputError) as error:
            registry.decode_reader_split(version, DataInput(data[:cut], "split"))
        assert "FlinkSourceSplit" in error.value.message
    # Cut before the class name: no evidence it is Beam's, so it stays unknown bytes.
    assert registry.decode_reader_split(version, DataInput(data[:10], "split")).type == "unknown"


def _decode(
    name: str, version: int, data: bytes
) -> tuple[SplitState | EnumeratorState, list[PartitionRow]] | InputError:
    """The state the registry decodes from `data` with the rows the audit would show, or the InputError."""
    try:
        if name == "enumerator.bin":
            enumerator = registry.decode_enumerator(version, DataInput(data, name), set())
            return enumerator, [row for entry in enumerator.enumerator_entries() for row in entry.rows]
        split = registry.decode_reader_split(version, DataInput(data, name))
        return split, list(split.partition_rows())
    except InputError as error:
        return error


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    name=st.sampled_from([*READER_SPLITS, "enumerator.bin"]),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), min_size=1, max_size=4),
)
def test_mutated_beam_bytes_never_escape(name: str, flips: list[tuple[int, int]]) -> None:
    """javaobj and fastavro see corrupted graphs; what comes out is an InputError naming the input and a byte
    offset inside it, an 'unknown' state keeping every byte, or a Beam state whose JSON and rows can be shown
    (a flipped byte inside an offset or a name still decodes: only a value changed)."""
    version, payload = _versioned(name)
    data = bytearray(payload.read_bytes(payload.remaining()))
    for at, mask in flips:
        data[at % len(data)] ^= mask
    outcome = _decode(name, version, bytes(data))
    if isinstance(outcome, InputError):
        assert outcome.path == name
        assert outcome.offset is not None
        assert 0 <= outcome.offset <= len(data)
        return
    decoded, rows = outcome
    if decoded.type == "unknown":
        assert decoded == UnknownState(bytes(data))
        return
    assert decoded.type == "beam_flink_source"
    json.dumps(decoded.to_json())
    assert all(row.split_type == "beam_flink_source" for row in rows)


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


def test_each_outcome_of_a_mutation_is_reachable() -> None:
    # The three outcomes the mutation test allows, each from one known flip of the started reader split.
    version, payload = _versioned("reader-split-started.bin")
    data = payload.read_bytes(payload.remaining())
    no_magic = bytes([data[0] ^ 0xFF]) + data[1:]  # not a Java stream: nothing claims it
    assert _decode("reader-split-started.bin", version, no_magic) == (
        UnknownState(no_magic),
        [PartitionRow("unknown", None, None, None, None)],
    )
    topic_at = data.index(b"events")
    renamed = data[:topic_at] + b"E" + data[topic_at + 1 :]  # a value changed, the graph intact: it decodes
    outcome = _decode("reader-split-started.bin", version, renamed)
    assert not isinstance(outcome, InputError)
    assert outcome[0].type == "beam_flink_source"
    assert "Events" in {row.topic for row in outcome[1]}
    cut = data[: len(data) - 1]  # identified as Beam's, then the graph ends early: corruption
    error = _decode("reader-split-started.bin", version, cut)
    assert isinstance(error, InputError)
    assert error.path == "reader-split-started.bin"
