"""Kafka client calls splitaudit makes against any cluster: topics, produce, consume, offsets, partitions.

Used by the audit (a user's cluster, `--bootstrap`) and by the embedded stack (the broker `stack.kafka` starts);
confluent-kafka (librdkafka) underneath.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic, OffsetSpec  # type: ignore[attr-defined]

from splitaudit.errors import ExternalError, UsageError
from splitaudit.logs import KAFKA_LOGGER, library_log
from splitaudit.polling import poll


def admin(bootstrap: str, *, quiet: bool = False) -> AdminClient:
    """An admin client; short timeouts so a dead broker fails fast. `quiet` silences librdkafka's connection
    errors, for health checks that expect them while a broker starts."""
    config = _client_config({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
    if quiet:
        config["log_level"] = 0
    return AdminClient(config)


def _client_config(config: dict[str, Any]) -> dict[str, Any]:
    """A client's settings; librdkafka's log lines go to the libraries' log file when one is named."""
    return config | ({"logger": KAFKA_LOGGER} if library_log() is not None else {})


def create_topic(
    bootstrap: str, topic: str, partitions: int, config: Mapping[str, str] | None = None, timeout: float = 30.0
) -> None:
    """Create a topic with `partitions` partitions (replication 1) and the topic `config` given (for example
    `message.timestamp.type=LogAppendTime`); an existing topic is an error."""
    client = admin(bootstrap)  # must outlive the future: a collected client cancels its requests
    new = NewTopic(topic, num_partitions=partitions, replication_factor=1, config=dict(config or {}))
    futures = client.create_topics([new])
    try:
        futures[topic].result(timeout)
    except KafkaException as ex:
        raise UsageError(f"cannot create topic {topic!r} on {bootstrap}: {ex.args[0].str()}") from ex


def grow_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Give an existing topic `partitions` partitions in all (Kafka only ever adds partitions)."""
    client = admin(bootstrap)
    futures = client.create_partitions([NewPartitions(topic, partitions)])
    try:
        futures[topic].result(timeout)
    except KafkaException as ex:
        raise UsageError(f"cannot grow topic {topic!r} to {partitions} partitions: {ex.args[0].str()}") from ex


def numbered(number: int) -> tuple[str, str]:
    """The key and value of record `number` of a numbered topic: both the number itself."""
    return str(number), str(number)


class NumberedProducer:
    """Produces numbered records to a topic, round-robin over its partitions, in as many batches as needed over
    one connection (a steady stream need not set up an idempotent producer per batch).

    Record i goes to partition i % partitions, so what each partition holds is known; `record(i)` gives its key
    and value ("i" and "i" unless told otherwise).
    """

    def __init__(
        self, bootstrap: str, topic: str, partitions: int, record: Callable[[int], tuple[str, str]] = numbered
    ) -> None:
        self.topic, self.partitions, self.record = topic, partitions, record
        self._producer = Producer(
            _client_config({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": True})
        )

    def send(self, count: int, start: int) -> dict[int, int]:
        """Produce records start..start+count-1 and wait until all are acknowledged; per-partition counts."""
        errors: list[str] = []

        def delivered(error: object, _message: object) -> None:
            if error is not None:
                errors.append(str(error))

        sent: dict[int, int] = dict.fromkeys(range(self.partitions), 0)
        for i in range(start, start + count):
            partition = i % self.partitions
            key, value = self.record(i)
            while True:
                try:
                    self._producer.produce(self.topic, key=key, value=value, partition=partition, on_delivery=delivered)
                    break
                except BufferError:
                    self._producer.poll(0.1)
            sent[partition] += 1
        remaining = self._producer.flush(60)
        if remaining or errors:
            raise ExternalError(f"producing to {self.topic}: {remaining} undelivered, errors: {errors[:3]}")
        return sent


def produce(
    bootstrap: str,
    topic: str,
    partitions: int,
    count: int,
    start: int = 0,
    record: Callable[[int], tuple[str, str]] = numbered,
) -> dict[int, int]:
    """Produce `count` records numbered from `start` (see `NumberedProducer`); return per-partition counts."""
    return NumberedProducer(bootstrap, topic, partitions, record).send(count, start)


ADMIN_TIMEOUT = 10.0  # seconds a metadata or offsets request may take before the cluster counts as unreachable


@dataclass(frozen=True)
class PartitionOffsets:
    """What Kafka holds of one partition, as *next* offsets: the first offset still in the log (log-start, which
    retention and deleted records move up), the end offset (high watermark, one past the last record), and a
    consumer group's committed offset (the next offset the group reads; None when it committed none)."""

    log_start: int
    end: int
    committed: int | None = None


def topic_partitions(bootstrap: str, topic: str, timeout: float = ADMIN_TIMEOUT) -> list[int]:
    """The partition ids of `topic`, from the cluster's metadata, sorted.

    Raises UsageError when the topic does not exist, ExternalError when nothing at `bootstrap` answers within
    `timeout` seconds. Lists all topics rather than asking for this one, so a cluster that auto-creates topics
    does not create it.
    """
    try:
        metadata = admin(bootstrap, quiet=True).list_topics(timeout=timeout)
    except KafkaException as ex:
        raise ExternalError(
            f"the Kafka cluster at {bootstrap} did not answer within {timeout:g} s: {_reason(ex)}"
        ) from ex
    found = metadata.topics.get(topic)
    if found is None:
        raise UsageError(f"topic {topic!r} does not exist on the Kafka cluster at {bootstrap}")
    if found.error is not None:
        raise UsageError(f"topic {topic!r} on the Kafka cluster at {bootstrap}: {found.error.str()}")
    return sorted(found.partitions)


def partition_offsets(
    bootstrap: str, topic: str, group: str | None = None, timeout: float = ADMIN_TIMEOUT
) -> dict[tuple[str, int], PartitionOffsets]:
    """Log-start, end and (with `group`) committed offset of every partition of `topic`, keyed (topic, partition).

    The end offset is the high watermark (read_uncommitted): it counts records of open or aborted transactions
    and transaction markers, as any offset in the log does. Errors as `topic_partitions`.
    """
    partitions = topic_partitions(bootstrap, topic, timeout)
    client = admin(bootstrap, quiet=True)  # one client for all requests; it must outlive their futures
    where = f"offsets of topic {topic!r} from the Kafka cluster at {bootstrap}"
    try:
        starts = _list_offsets(client, topic, partitions, OffsetSpec.earliest(), timeout)  # type: ignore[no-untyped-call]
        ends = _list_offsets(client, topic, partitions, OffsetSpec.latest(), timeout)  # type: ignore[no-untyped-call]
        committed = _committed_offsets(client, group, topic, partitions, timeout) if group is not None else {}
    except KafkaException as ex:
        raise ExternalError(f"{where}: {_reason(ex)}") from ex
    return {(topic, p): PartitionOffsets(starts[p], ends[p], committed.get(p)) for p in partitions}


def topics_offsets(
    bootstrap: str, topics: Iterable[str], group: str | None = None
) -> dict[tuple[str, int], PartitionOffsets]:
    """`partition_offsets` of every partition of these topics, keyed (topic, partition)."""
    offsets: dict[tuple[str, int], PartitionOffsets] = {}
    for topic in topics:
        offsets |= partition_offsets(bootstrap, topic, group)
    return offsets


def offsets_for_time(
    bootstrap: str, topic: str, millis: int, timeout: float = ADMIN_TIMEOUT
) -> dict[tuple[str, int], int | None]:
    """Per partition of `topic`, the first offset whose record timestamp is at or after `millis` (epoch ms): what
    a Kafka consumer's `offsetsForTimes` answers; None where no record has such a timestamp yet. Errors as
    `topic_partitions`."""
    partitions = topic_partitions(bootstrap, topic, timeout)
    client = admin(bootstrap, quiet=True)
    try:
        found = _list_offsets(client, topic, partitions, OffsetSpec.for_timestamp(millis), timeout)
    except KafkaException as ex:
        raise ExternalError(f"offsets of topic {topic!r} at time {millis} from {bootstrap}: {_reason(ex)}") from ex
    return {(topic, p): (offset if offset >= 0 else None) for p, offset in found.items()}


def record_times(
    bootstrap: str, offsets: Sequence[tuple[str, int, int]], timeout: float = ADMIN_TIMEOUT
) -> dict[tuple[str, int, int], int]:
    """The Kafka timestamp (epoch ms) of the record at each (topic, partition, offset); an offset with no record
    (past the end, below the log start, a transaction marker) is left out."""
    consumer = Consumer(
        _client_config(
            {"bootstrap.servers": bootstrap, "group.id": f"splitaudit-time-{uuid.uuid4()}", "enable.auto.commit": False}
        )
    )
    times: dict[tuple[str, int, int], int] = {}
    try:
        for topic, partition, offset in offsets:
            consumer.assign([TopicPartition(topic, partition, offset)])
            for message in consumer.consume(num_messages=1, timeout=timeout):
                if message.error() is None and message.offset() == offset:
                    times[(topic, partition, offset)] = message.timestamp()[1]
    except KafkaException as ex:
        raise ExternalError(
            f"record times of {sorted({t for t, _, _ in offsets})} from {bootstrap}: {_reason(ex)}"
        ) from ex
    finally:
        consumer.close()
    return times


def _list_offsets(
    client: AdminClient, topic: str, partitions: list[int], spec: OffsetSpec, timeout: float
) -> dict[int, int]:
    """One ListOffsets request for all partitions: the earliest (log-start), latest (end) or for-a-timestamp offset
    of each (-1 where no record has the timestamp)."""
    futures = client.list_offsets(
        {TopicPartition(topic, p): spec for p in partitions},
        isolation_level=IsolationLevel.READ_UNCOMMITTED,
        request_timeout=timeout,
    )
    return {tp.partition: future.result(timeout).offset for tp, future in futures.items()}


def _committed_offsets(
    client: AdminClient, group: str, topic: str, partitions: list[int], timeout: float
) -> dict[int, int]:
    """The group's committed offset of each partition that has one (a group that never committed has none)."""
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in partitions])
    futures = client.list_consumer_group_offsets([request], request_timeout=timeout)
    answer = futures[group].result(timeout)
    return {tp.partition: tp.offset for tp in answer.topic_partitions if tp.error is None and tp.offset >= 0}


def set_committed_offsets(bootstrap: str, group: str, topic: str, offsets: Mapping[int, int]) -> None:
    """Set the committed offset of `group` for each partition of `topic` in `offsets` (partition -> next offset to
    read), as `kafka-consumer-groups --reset-offsets` does; the group must have no active member."""
    client = admin(bootstrap)
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, o) for p, o in sorted(offsets.items())])
    try:
        answer = client.alter_consumer_group_offsets([request], request_timeout=ADMIN_TIMEOUT)[group].result()
    except KafkaException as ex:
        raise ExternalError(f"cannot set the offsets of group {group!r} on {bootstrap}: {_reason(ex)}") from ex
    failed = [f"{tp.partition}: {tp.error}" for tp in answer.topic_partitions if tp.error is not None]
    if failed:
        raise ExternalError(f"cannot set the offsets of group {group!r} on {bootstrap}: {', '.join(failed)}")


def delete_group(bootstrap: str, group: str) -> None:
    """Delete consumer group `group` with its committed offsets, as `kafka-consumer-groups --delete` does: a
    consumer of the group then starts where its auto.offset.reset says. The group must have no active member."""
    client = admin(bootstrap)
    try:
        client.delete_consumer_groups([group], request_timeout=ADMIN_TIMEOUT)[group].result()
    except KafkaException as ex:
        raise ExternalError(f"cannot delete group {group!r} on {bootstrap}: {_reason(ex)}") from ex


def _reason(ex: KafkaException) -> str:
    """The librdkafka error text of an exception (its KafkaError), else the exception's own text."""
    error = ex.args[0] if ex.args else None
    return str(error.str()) if isinstance(error, KafkaError) else str(ex)


@dataclass(frozen=True)
class ConsumedRecord:
    """One record as a consumer reads it: where it is, its value bytes (None for a tombstone), its timestamp
    (epoch ms: the producer's create time, or the broker's log-append time when the topic's
    message.timestamp.type is LogAppendTime; None when the broker gives none) and its key bytes (None: no key)."""

    partition: int
    offset: int
    value: bytes | None
    timestamp: int | None
    key: bytes | None = None


def read_topic(
    bootstrap: str, topic: str, partitions: Iterable[int] | None = None, timeout: float = 60.0
) -> list[ConsumedRecord]:
    """Every record of `topic` (of `partitions`, all by default) from each partition's log start to its end offset
    as of the call, in the order consumed (a `PollTimeoutError` when not all arrive within `timeout`)."""
    known = partition_offsets(bootstrap, topic)
    offsets = {p: known[(topic, p)] for p in (partitions if partitions is not None else (p for _, p in known))}
    consumer = Consumer(
        _client_config(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"splitaudit-read-{uuid.uuid4()}",
                "enable.auto.commit": False,
            }
        )
    )
    records: list[ConsumedRecord] = []
    seen: dict[int, int] = dict.fromkeys(offsets, 0)

    def complete() -> bool:
        for message in consumer.consume(num_messages=10_000, timeout=1.0):
            partition, offset = message.partition(), message.offset()
            if message.error() is None and partition is not None and offset is not None:
                kind, millis = message.timestamp()
                stamp = None if kind == TIMESTAMP_NOT_AVAILABLE else millis
                records.append(ConsumedRecord(partition, offset, message.value(), stamp, message.key()))
                seen[partition] += 1
        return all(seen[p] >= offsets[p].end - offsets[p].log_start for p in seen)

    try:
        consumer.assign([TopicPartition(topic, p, offsets[p].log_start) for p in offsets])
        poll(
            f"every record of {topic}",
            complete,
            timeout=timeout,
            interval=0.0,
            last_seen=lambda: ", ".join(f"p{p}: {n}" for p, n in seen.items()),
        )
    finally:
        consumer.close()
    return records
