"""DynamicKafkaSource's split and enumerator layouts on hand-made bytes, written as flink-connector-kafka's
serializers write them: `DynamicKafkaSourceSplitSerializer` (VERSION_1 in 3.3.0-5.0.0, VERSION_2 after 5.0.0) and
`DynamicKafkaSourceEnumStateSerializer` (VERSION_1 in 3.3.0 and 4.0.1, VERSION_2 in 5.0.0, VERSION_3 after it); the
bad-input errors;
the redaction of cluster properties. The real savepoints of fixtures/dynamic_kafka/ are read in
test_dynamic_kafka_fixture.py."""

from __future__ import annotations

import struct

import pytest

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.splits import registry
from splitaudit.splits.dynamic_kafka import (
    REDACTED,
    ClusterEnumState,
    ClusterMetadata,
    DynamicKafkaSourceEnumState,
    DynamicKafkaSourceSplit,
    KafkaStream,
    decode_enumerator,
    decode_split,
    redact_properties,
)
from splitaudit.splits.kafka import KafkaEnumeratorState, KafkaPartitionAssignment, KafkaPartitionSplit
from splitaudit.splits.model import ASSIGNED, PENDING, EnumeratorEntry, PartitionRow

UNBOUNDED = -(2**63)


def utf(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">H", len(data)) + data


def kafka_split(topic: str, partition: int, start: int, stop: int = UNBOUNDED) -> bytes:
    return utf(topic) + struct.pack(">iqq", partition, start, stop)


def dynamic_split_v1(cluster: str, topic: str, partition: int, start: int) -> bytes:
    return utf(cluster) + struct.pack(">i", 0) + kafka_split(topic, partition, start)


def kafka_enum_v2(*partitions: tuple[str, int, int]) -> bytes:
    body = struct.pack(">i", len(partitions))
    for topic, partition, status in partitions:
        body += utf(topic) + struct.pack(">ii", partition, status)
    return body + b"\x01"


def enum_state(streams: bytes, clusters: list[tuple[str, bytes]], kafka_version: int = 2) -> bytes:
    body = streams + struct.pack(">ii", kafka_version, len(clusters))
    for cluster, state in clusters:
        body += utf(cluster) + struct.pack(">i", len(state)) + state
    return body


def stream_v1(stream: str, cluster: str, topics: list[str], bootstrap: str) -> bytes:
    body = utf(stream) + struct.pack(">i", 1) + utf(cluster) + struct.pack(">i", len(topics))
    return body + b"".join(utf(t) for t in topics) + utf(bootstrap)


def java_object(class_name: str) -> bytes:
    """A Java serialization stream of one object of a Serializable class with no fields (ObjectOutputStream)."""
    return b"\xac\xed\x00\x05\x73\x72" + utf(class_name) + b"\x00" * 8 + b"\x02\x00\x00\x78\x70"


def test_a_v1_split_is_its_cluster_and_kafka_partition_split() -> None:
    decoded = decode_split(DataInput(dynamic_split_v1("c1", "orders", 3, 42), "s"), 1)
    assert decoded == DynamicKafkaSourceSplit("c1", KafkaPartitionSplit("orders", 3, 42, UNBOUNDED), None)
    assert decoded.partition_rows() == (PartitionRow("dynamic_kafka", "c1-orders-3", "orders", 3, 42, None, "c1"),)
    assert decoded.to_json() == {
        "cluster": "c1",
        "topic": "orders",
        "partition": 3,
        "starting_offset": 42,
        "stopping_offset": UNBOUNDED,
        "retained_until_ms": None,
    }


def test_a_v2_split_may_carry_its_retained_until_time() -> None:
    payload = utf("c1") + b"\x01" + struct.pack(">qi", 1_700_000_000_000, 0) + kafka_split("orders", 0, 7)
    decoded = decode_split(DataInput(payload, "s"), 2)
    assert decoded.retained_until_ms == 1_700_000_000_000
    absent = utf("c1") + b"\x00" + struct.pack(">i", 0) + kafka_split("orders", 0, 7)
    assert decode_split(DataInput(absent, "s"), 2).retained_until_ms is None


def test_the_registry_tells_a_dynamic_split_from_a_file_split_of_the_same_version() -> None:
    # FileSourceSplitSerializer is version 1 too: the layout that consumes the bytes exactly decides.
    decoded = registry.decode_reader_split(1, DataInput(dynamic_split_v1("c1", "t", 0, 5), "s"))
    assert decoded.type == "dynamic_kafka"


def test_a_v1_enumerator_state_names_each_partition_with_its_cluster() -> None:
    payload = enum_state(
        struct.pack(">i", 1) + stream_v1("t", "c1", ["t"], "127.0.0.1:9092"),
        [("c1", kafka_enum_v2(("t", 1, 0), ("t", 0, 1)))],
    )
    decoded = decode_enumerator(DataInput(payload, "e"), 1)
    assert decoded == DynamicKafkaSourceEnumState(
        1,
        (KafkaStream("t", (ClusterMetadata("c1", ("t",), {"bootstrap.servers": "127.0.0.1:9092"}, None, None),)),),
        2,
        (
            ClusterEnumState(
                "c1",
                KafkaEnumeratorState(
                    2,
                    (
                        KafkaPartitionAssignment("t", 0, "UNASSIGNED", None),
                        KafkaPartitionAssignment("t", 1, "ASSIGNED", None),
                    ),
                    True,
                ),
            ),
        ),
    )
    assert decoded.enumerator_entries() == (
        EnumeratorEntry(None, PENDING, (PartitionRow("dynamic_kafka", "c1-t-0", "t", 0, None, None, "c1"),)),
        EnumeratorEntry(None, ASSIGNED, (PartitionRow("dynamic_kafka", "c1-t-1", "t", 1, None, None, "c1"),)),
    )
    assert registry.decode_enumerator(1, DataInput(payload, "e"), {"dynamic_kafka"}) == decoded


def test_a_v2_enumerator_state_names_its_offsets_initializers_by_class_only() -> None:
    initializer = java_object(
        "org.apache.flink.connector.kafka.source.enumerator.initializer.NoStoppingOffsetsInitializer"
    )
    stream = stream_v1("t", "c1", ["t"], "b:9092") + b"\x01" + struct.pack(">i", len(initializer)) + initializer
    payload = enum_state(struct.pack(">i", 1) + stream + b"\x00", [("c1", kafka_enum_v2(("t", 0, 0)))])
    [metadata] = decode_enumerator(DataInput(payload, "e"), 2).streams[0].clusters
    assert metadata.starting_offsets == (
        "org.apache.flink.connector.kafka.source.enumerator.initializer.NoStoppingOffsetsInitializer"
    )
    assert metadata.stopping_offsets is None


def test_a_cluster_state_must_fill_its_length_exactly() -> None:
    state = kafka_enum_v2(("t", 0, 0)) + b"\x00"  # one byte past the KafkaSourceEnumState
    payload = enum_state(struct.pack(">i", 0), [("c1", state)])
    with pytest.raises(InputError, match="KafkaSourceEnumState"):
        decode_enumerator(DataInput(payload, "e"), 1)


def test_unknown_versions_are_refused() -> None:
    with pytest.raises(InputError, match="serializer version 4"):
        decode_enumerator(DataInput(b"", "e"), 4)
    with pytest.raises(InputError, match="KafkaPartitionSplit serializer version 9"):
        decode_split(DataInput(utf("c") + struct.pack(">i", 9) + kafka_split("t", 0, 0), "s"), 1)


def test_properties_that_may_hold_secrets_are_redacted() -> None:
    properties = {
        "bootstrap.servers": "b:9092",
        "sasl.jaas.config": 'PlainLoginModule required username="u" password="p";',
        "ssl.keystore.password": "p",
        "ssl.key.password": "p",
        "ssl.keystore.key": "k",
        "security.protocol": "SASL_SSL",
    }
    assert redact_properties(properties) == {
        "bootstrap.servers": "b:9092",
        "sasl.jaas.config": REDACTED,
        "security.protocol": "SASL_SSL",
        "ssl.key.password": REDACTED,
        "ssl.keystore.key": REDACTED,
        "ssl.keystore.password": REDACTED,
    }


def test_a_v3_enumerator_state_keeps_removed_clusters_apart_from_the_enumerator_table() -> None:
    # VERSION_3 (FLINK-39837, after 5.0.0): version 2's streams and clusters, then the retained clusters' states.
    stream = stream_v1("t", "c1", ["t"], "b:9092") + b"\x00\x00"
    payload = enum_state(struct.pack(">i", 1) + stream, [("c1", kafka_enum_v2(("t", 0, 0)))])
    retained = kafka_enum_v2(("t", 5, 0))
    payload += struct.pack(">i", 1) + utf("gone") + struct.pack(">qi", 1_800_000_000_000, len(retained)) + retained
    decoded = decode_enumerator(DataInput(payload, "e"), 3)
    [gone] = decoded.retained_clusters
    assert (gone.cluster, gone.retained_until_ms) == ("gone", 1_800_000_000_000)
    assert [p.partition for p in gone.state.partitions] == [5]
    assert [row.cluster for entry in decoded.enumerator_entries() for row in entry.rows] == ["c1"]
    assert decoded.to_json()["retained_clusters"][0]["retained_until_ms"] == 1_800_000_000_000
