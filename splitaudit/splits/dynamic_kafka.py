"""Flink's `DynamicKafkaSource` (apache/flink-connector-kafka, `org.apache.flink.connector.kafka.dynamic.source`).

A reader split is a `DynamicKafkaSourceSplit`: the Kafka cluster id and the `KafkaPartitionSplit`
(`DynamicKafkaSourceSplitSerializer` version 1 in 3.3.0, 4.0.1 and 5.0.0; version 2 after 5.0.0 adds the
retained-until time of a split of a removed cluster). The enumerator checkpoint is a `DynamicKafkaSourceEnumState`:
the `KafkaStream` metadata (stream ids, each cluster's topics and bootstrap servers) and one `KafkaSourceEnumState`
per cluster (`DynamicKafkaSourceEnumStateSerializer` version 1 in 3.3.0 and 4.0.1, version 2 in 5.0.0 adds each
cluster's Java-serialized starting/stopping `OffsetsInitializer`, of which only the class name is shown; version 3,
after 5.0.0, adds the states of removed clusters kept until a deadline). Layouts in splitaudit/splits/FORMAT.md;
the real savepoints of fixtures/dynamic_kafka/ are read exactly by the tests.

Cluster properties are shown redacted: a setting that may hold a secret (`kafka.is_secret_setting`:
`sasl.jaas.config`, passwords, PEM keys and certificates) never leaves this module with its value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from splitaudit.primitives.datainput import DataInput
from splitaudit.primitives.javaser import class_name, read_java_object
from splitaudit.splits import kafka
from splitaudit.splits.model import EnumeratorEntry, PartitionRow

SPLIT_SERIALIZER_VERSIONS = (1, 2)  # DynamicKafkaSourceSplitSerializer VERSION_1, VERSION_2
ENUMERATOR_VERSIONS = (1, 2, 3)  # DynamicKafkaSourceEnumStateSerializer VERSION_1 .. VERSION_3
BOOTSTRAP_SERVERS = "bootstrap.servers"  # CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG: the only property stored
REDACTED = "<redacted>"


def redact_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """Kafka client properties safe to show: the value of any key that may hold a secret is replaced."""
    return {k: REDACTED if kafka.is_secret_setting(k) else v for k, v in sorted(properties.items())}


def _in_cluster(cluster: str, row: PartitionRow) -> PartitionRow:
    """A Kafka row as the cluster's: `DynamicKafkaSourceSplit.splitId()` is cluster id + "-" + the Kafka split's."""
    return dataclasses.replace(
        row, split_type=DynamicKafkaSourceSplit.type, split_id=f"{cluster}-{row.split_id}", cluster=cluster
    )


@dataclass(frozen=True)
class DynamicKafkaSourceSplit:
    """`DynamicKafkaSourceSplit`: a topic partition of one Kafka cluster and the next offset to read there."""

    type: ClassVar[str] = "dynamic_kafka"
    cluster: str
    split: kafka.KafkaPartitionSplit
    retained_until_ms: int | None  # version 2: a split of a cluster the metadata removed, kept until then

    def to_json(self) -> dict[str, Any]:
        return {"cluster": self.cluster, **self.split.to_json(), "retained_until_ms": self.retained_until_ms}

    def partition_rows(self) -> tuple[PartitionRow, ...]:
        return tuple(_in_cluster(self.cluster, row) for row in self.split.partition_rows())


@dataclass(frozen=True)
class ClusterMetadata:
    """`ClusterMetadata` of one cluster in a `KafkaStream`: its topics and (redacted) properties; version 2 adds
    the class of its starting and stopping `OffsetsInitializer` (None when the stream has none)."""

    cluster: str
    topics: tuple[str, ...]
    properties: Mapping[str, str]
    starting_offsets: str | None
    stopping_offsets: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "topics": list(self.topics),
            "properties": dict(self.properties),
            "starting_offsets_initializer": self.starting_offsets,
            "stopping_offsets_initializer": self.stopping_offsets,
        }


@dataclass(frozen=True)
class KafkaStream:
    """`KafkaStream`: a stream id and the clusters (with their topics) it spans."""

    stream_id: str
    clusters: tuple[ClusterMetadata, ...]

    def to_json(self) -> dict[str, Any]:
        return {"stream_id": self.stream_id, "clusters": [c.to_json() for c in self.clusters]}


@dataclass(frozen=True)
class ClusterEnumState:
    """The `KafkaSourceEnumState` of one cluster's sub-enumerator; for a cluster the metadata removed (version 3's
    `RetainedClusterState`), the time until which it is kept."""

    cluster: str
    state: kafka.KafkaEnumeratorState
    retained_until_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        retained = {} if self.retained_until_ms is None else {"retained_until_ms": self.retained_until_ms}
        return {"cluster": self.cluster, **retained, **self.state.to_json()}


@dataclass(frozen=True)
class DynamicKafkaSourceEnumState:
    """`DynamicKafkaSourceEnumState`: the streams' metadata and every cluster's sub-enumerator state."""

    type: ClassVar[str] = "dynamic_kafka"
    version: int
    streams: tuple[KafkaStream, ...]
    kafka_enum_version: int  # the KafkaSourceEnumStateSerializer version every cluster state is written with
    clusters: tuple[ClusterEnumState, ...]
    # Version 3: removed clusters' states, kept for their readers' retained splits; not in the enumerator table.
    retained_clusters: tuple[ClusterEnumState, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "streams": [s.to_json() for s in self.streams],
            "kafka_enum_version": self.kafka_enum_version,
            "clusters": [c.to_json() for c in self.clusters],
            "retained_clusters": [c.to_json() for c in self.retained_clusters],
        }

    def enumerator_entries(self) -> tuple[EnumeratorEntry, ...]:
        """The partitions of the active clusters' states (a removed cluster's sub-enumerator is closed)."""
        return tuple(
            dataclasses.replace(entry, rows=tuple(_in_cluster(c.cluster, row) for row in entry.rows))
            for c in self.clusters
            for entry in c.state.enumerator_entries()
        )


def decode_split(inp: DataInput, version: int) -> DynamicKafkaSourceSplit:
    """A split of serializer `version` (1 or 2); the rest of `inp` is the KafkaPartitionSplit."""
    if version not in SPLIT_SERIALIZER_VERSIONS:
        raise inp.error(f"DynamicKafkaSourceSplit serializer version {version} is unknown", 0)
    cluster = inp.read_utf("kafka cluster id")
    retained: int | None = None
    if version == 2 and inp.read_bool("has retained-until time"):
        retained = inp.read_long("retained-until time (ms)")
    at = inp.tell()
    kafka_version = inp.read_int("KafkaPartitionSplit serializer version")
    if kafka_version != kafka.SPLIT_SERIALIZER_VERSION:
        raise inp.error(f"KafkaPartitionSplit serializer version {kafka_version} is unknown", at)
    return DynamicKafkaSourceSplit(cluster, kafka.decode_split(inp), retained)


def _initializer_class(inp: DataInput, what: str) -> str | None:
    if not inp.read_bool(f"has {what}"):
        return None
    body = inp.sub(inp.read_length(f"{what} length"), what)
    value = read_java_object(body, what)
    body.expect_end(what)
    return class_name(value)


def _read_cluster_metadata(inp: DataInput, version: int) -> ClusterMetadata:
    cluster = inp.read_utf("kafka cluster id")
    topics = sorted(inp.read_utf("topic") for _ in range(inp.read_length("number of topics", 2)))
    properties = redact_properties({BOOTSTRAP_SERVERS: inp.read_utf("bootstrap servers")})
    starting = stopping = None
    if version >= 2:  # deserializeV2, versions 2 and 3
        starting = _initializer_class(inp, "starting OffsetsInitializer")
        stopping = _initializer_class(inp, "stopping OffsetsInitializer")
    return ClusterMetadata(cluster, tuple(topics), properties, starting, stopping)


def _read_stream(inp: DataInput, version: int) -> KafkaStream:
    stream_id = inp.read_utf("stream id")
    clusters = [_read_cluster_metadata(inp, version) for _ in range(inp.read_length("number of clusters", 6))]
    return KafkaStream(stream_id, tuple(sorted(clusters, key=lambda c: c.cluster)))


def _read_cluster_state(inp: DataInput, kafka_version: int, retained: bool) -> ClusterEnumState:
    cluster = inp.read_utf("kafka cluster id")
    until = inp.read_long("retained-until time (ms)") if retained else None
    body = inp.sub(inp.read_length("cluster state length"), "KafkaSourceEnumState")
    return ClusterEnumState(cluster, kafka.decode_enumerator(body, kafka_version), until)


def decode_enumerator(inp: DataInput, version: int) -> DynamicKafkaSourceEnumState:
    """A `DynamicKafkaSourceEnumState` of serializer `version`; each cluster's state exactly its length."""
    if version not in ENUMERATOR_VERSIONS:
        raise inp.error(f"DynamicKafkaSourceEnumState serializer version {version} is unknown", 0)
    streams = [_read_stream(inp, version) for _ in range(inp.read_length("number of streams", 6))]
    at = inp.tell()
    kafka_version = inp.read_int("KafkaSourceEnumState serializer version")
    if kafka_version not in kafka.ENUMERATOR_VERSIONS:
        raise inp.error(f"KafkaSourceEnumState serializer version {kafka_version} is unknown", at)
    clusters = [_read_cluster_state(inp, kafka_version, False) for _ in range(inp.read_length("number of clusters", 6))]
    retained: list[ClusterEnumState] = []
    if version == 3:
        count = inp.read_length("number of retained clusters", 14)
        retained = [_read_cluster_state(inp, kafka_version, True) for _ in range(count)]
    inp.expect_end("the DynamicKafkaSourceEnumState")
    # Written from HashSet/HashMap in hash order; sorted, two states of one job compare as equal.
    return DynamicKafkaSourceEnumState(
        version,
        tuple(sorted(streams, key=lambda s: s.stream_id)),
        kafka_version,
        tuple(sorted(clusters, key=lambda c: c.cluster)),
        tuple(sorted(retained, key=lambda c: c.cluster)),
    )
