"""Flink's `KafkaSource` (apache/flink-connector-kafka): reader splits and enumerator checkpoints.

`KafkaPartitionSplitSerializer` (CURRENT_VERSION 0 in every release v3.0.0 … v5.0.0) and
`KafkaSourceEnumStateSerializer` versions 0-3 (0: connector-base `SerdeUtils.serializeSplitAssignments`;
1: v3.0.x; 2: v3.1.0 … v4.0.1; 3: v5.0.0). Layouts in splitaudit/splits/FORMAT.md, read from real
KafkaSource savepoints of connectors 3.0.2 (v1), 3.3.0, 3.4.0, 4.0.1 (v2) and 5.0.0 (v3) (fixtures/kafka/);
version 0 (Flink <= 1.12 connectors) is from code only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from splitaudit.primitives.datainput import DataInput
from splitaudit.splits.model import ASSIGNED, PENDING, EnumeratorEntry, PartitionRow

SPLIT_SERIALIZER_VERSION = 0
ENUMERATOR_VERSIONS = (0, 1, 2, 3)
ASSIGNMENT_STATUS = ("ASSIGNED", "UNASSIGNED")
NO_STOPPING_OFFSET = -(2**63)  # KafkaPartitionSplit.NO_STOPPING_OFFSET (Long.MIN_VALUE): unbounded


# Kafka client settings whose values are secrets: the PASSWORD-type ones (`*.password`, the PEM key and certificates
# of `ssl.keystore.key`, `ssl.keystore.certificate.chain`, `ssl.truststore.certificates`) and the JAAS config, which
# holds credentials as text. Never shown, only named.
SECRET_KEYS = ("sasl.jaas.config", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates")


def is_secret_setting(key: str) -> bool:
    """Whether a Kafka client setting's value may be a secret (every reader of client settings asks this)."""
    return key in SECRET_KEYS or key.endswith(".password")


def split_id(topic: str, partition: int) -> str:
    """`KafkaPartitionSplit.splitId()`: topic + "-" + partition."""
    return f"{topic}-{partition}"


@dataclass(frozen=True)
class KafkaPartitionSplit:
    """`KafkaPartitionSplit`: `UTF topic, int partition, long startingOffset, long stoppingOffset`.

    `starting_offset` is the next offset to read (special values: -2 EARLIEST, -3 COMMITTED, -1 LATEST,
    Long.MIN_VALUE migrated/unknown); `stopping_offset` Long.MIN_VALUE means unbounded.
    """

    type: ClassVar[str] = "kafka"
    topic: str
    partition: int
    starting_offset: int
    stopping_offset: int

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "starting_offset": self.starting_offset,
            "stopping_offset": self.stopping_offset,
        }

    def partition_rows(self) -> tuple[PartitionRow, ...]:
        stopping = None if self.stopping_offset == NO_STOPPING_OFFSET else self.stopping_offset
        split = split_id(self.topic, self.partition)
        return (PartitionRow(self.type, split, self.topic, self.partition, self.starting_offset, stopping),)


@dataclass(frozen=True)
class KafkaPartitionAssignment:
    """One partition the enumerator knows: its status and (enum-state v0/v3 only) the split it was given."""

    topic: str
    partition: int
    status: str
    split: KafkaPartitionSplit | None

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "status": self.status,
            "split": None if self.split is None else self.split.to_json(),
        }

    def entry(self) -> EnumeratorEntry:
        """The partition as the enumerator table shows it; without its split (v1, v2), no offsets."""
        status = ASSIGNED if self.status == "ASSIGNED" else PENDING
        if self.split is not None:
            return EnumeratorEntry(None, status, self.split.partition_rows())
        row = PartitionRow(
            KafkaPartitionSplit.type, split_id(self.topic, self.partition), self.topic, self.partition, None
        )
        return EnumeratorEntry(None, status, (row,))


@dataclass(frozen=True)
class KafkaEnumeratorState:
    """`KafkaSourceEnumState`: partitions known to the enumerator; `initial_discovery_finished` from v2."""

    type: ClassVar[str] = "kafka"
    version: int
    partitions: tuple[KafkaPartitionAssignment, ...]
    initial_discovery_finished: bool | None

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "partitions": [p.to_json() for p in self.partitions],
            "initial_discovery_finished": self.initial_discovery_finished,
        }

    def enumerator_entries(self) -> tuple[EnumeratorEntry, ...]:
        return tuple(p.entry() for p in self.partitions)


def kafka_source_states(
    reader_states: Iterable[object], enumerator_state: object | None
) -> tuple[tuple[KafkaPartitionSplit, ...], KafkaEnumeratorState | None]:
    """Of one source operator's decoded reader splits and enumerator checkpoint, those of Flink's KafkaSource: the
    family answers which states are its own, so code outside `splits/` never asks a state's class."""
    splits = tuple(state for state in reader_states if isinstance(state, KafkaPartitionSplit))
    enumerator = enumerator_state if isinstance(enumerator_state, KafkaEnumeratorState) else None
    return splits, enumerator


def _read_split(inp: DataInput) -> KafkaPartitionSplit:
    topic = inp.read_utf("topic")
    partition = inp.read_int("partition")
    return KafkaPartitionSplit(topic, partition, inp.read_long("starting offset"), inp.read_long("stopping offset"))


def decode_split(inp: DataInput) -> KafkaPartitionSplit:
    split = _read_split(inp)
    inp.expect_end("the KafkaPartitionSplit")
    return split


def _read_status(inp: DataInput) -> str:
    at = inp.tell()
    status = inp.read_int("assignment status")
    if not 0 <= status < len(ASSIGNMENT_STATUS):
        raise inp.error(f"unknown Kafka assignment status {status}", at)
    return ASSIGNMENT_STATUS[status]


def _read_split_bytes(inp: DataInput, split_version: int) -> KafkaPartitionSplit:
    if split_version != SPLIT_SERIALIZER_VERSION:
        raise inp.error(f"KafkaPartitionSplit serializer version {split_version} is unknown")
    return decode_split(inp.sub(inp.read_length("split length"), "KafkaPartitionSplit"))


def decode_enumerator(inp: DataInput, version: int) -> KafkaEnumeratorState:
    partitions: list[KafkaPartitionAssignment] = []
    finished: bool | None = None
    if version == 0:
        subtasks = inp.read_length("number of subtasks", 8)
        split_version = inp.read_int("split serializer version")
        for _ in range(subtasks):
            inp.read_int("subtask id")
            for _ in range(inp.read_length("number of splits", 4)):
                split = _read_split_bytes(inp, split_version)
                partitions.append(KafkaPartitionAssignment(split.topic, split.partition, "ASSIGNED", split))
    elif version in (1, 2):
        for _ in range(inp.read_length("number of partitions", 6)):
            topic = inp.read_utf("topic")
            partition = inp.read_int("partition")
            status = _read_status(inp) if version == 2 else "ASSIGNED"
            partitions.append(KafkaPartitionAssignment(topic, partition, status, None))
        if version == 2:
            finished = inp.read_bool("initial discovery finished")
    elif version == 3:
        count = inp.read_length("number of partitions", 8)
        split_version = inp.read_int("split serializer version")
        for _ in range(count):
            split = _read_split_bytes(inp, split_version)
            partitions.append(KafkaPartitionAssignment(split.topic, split.partition, _read_status(inp), split))
        finished = inp.read_bool("initial discovery finished")
    else:
        raise inp.error(f"KafkaSourceEnumState serializer version {version} is unknown", 0)
    inp.expect_end("the KafkaSourceEnumState")
    # The connector writes a HashSet/HashMap in hash order; sorted, two states of one job compare as equal.
    partitions.sort(key=lambda p: (p.topic, p.partition))
    return KafkaEnumeratorState(version, tuple(partitions), finished)
