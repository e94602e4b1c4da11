"""The real broker: topics, produce and consume with exact counts per partition."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from splitaudit.clients import kafka
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.errors import ExternalError, UsageError
from splitaudit_lab.stack.process import free_port
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration


def test_produce_and_consume_exact_counts_per_partition(stack: Stack) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "counts", partitions=4)

    sent = kafka.produce(bootstrap, "counts", partitions=4, count=10_000)

    assert sent == {0: 2500, 1: 2500, 2: 2500, 3: 2500}
    assert kafka.partition_offsets(bootstrap, "counts") == {("counts", p): PartitionOffsets(0, 2500) for p in range(4)}
    seen: dict[int, list[int]] = {p: [] for p in range(4)}
    for record in kafka.read_topic(bootstrap, "counts"):
        seen[record.partition].append(record.offset)
    assert {p: sorted(offsets) for p, offsets in seen.items()} == {p: list(range(2500)) for p in range(4)}


def test_produce_continues_numbering(stack: Stack) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "more", partitions=3)
    kafka.produce(bootstrap, "more", partitions=3, count=10)
    sent = kafka.produce(bootstrap, "more", partitions=3, count=5, start=10)
    # records 10..14 go to partitions 1, 2, 0, 1, 2
    assert sent == {0: 1, 1: 2, 2: 2}
    assert kafka.partition_offsets(bootstrap, "more") == {("more", p): PartitionOffsets(0, 5) for p in range(3)}


def test_creating_an_existing_topic_is_refused(stack: Stack) -> None:
    kafka.create_topic(stack.kafka.bootstrap, "twice", partitions=1)
    with pytest.raises(UsageError, match=r"TOPIC_ALREADY_EXISTS|already exists"):
        kafka.create_topic(stack.kafka.bootstrap, "twice", partitions=1)


def test_topic_partitions_and_offsets_with_deleted_records_and_committed_group(stack: Stack) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "kept", partitions=3)
    kafka.produce(bootstrap, "kept", partitions=3, count=30)  # 10 per partition
    _commit(bootstrap, "kept-group", {("kept", 0): 4, ("kept", 2): 10})
    _delete_records(bootstrap, {("kept", 0): 6})

    assert kafka.topic_partitions(bootstrap, "kept") == [0, 1, 2]
    assert kafka.partition_offsets(bootstrap, "kept", "kept-group") == {
        ("kept", 0): PartitionOffsets(log_start=6, end=10, committed=4),
        ("kept", 1): PartitionOffsets(log_start=0, end=10, committed=None),
        ("kept", 2): PartitionOffsets(log_start=0, end=10, committed=10),
    }
    assert kafka.partition_offsets(bootstrap, "kept", "no-such-group")[("kept", 2)] == PartitionOffsets(0, 10)


def test_topic_partitions_of_a_missing_topic_is_a_usage_error(stack: Stack) -> None:
    with pytest.raises(
        UsageError, match=f"topic 'absent' does not exist on the Kafka cluster at {stack.kafka.bootstrap}"
    ):
        kafka.topic_partitions(stack.kafka.bootstrap, "absent")


def test_unreachable_cluster_is_an_external_error_naming_it() -> None:
    bootstrap = f"127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    with pytest.raises(ExternalError, match=f"the Kafka cluster at {bootstrap} did not answer within 2 s"):
        kafka.partition_offsets(bootstrap, "t", timeout=2)
    assert time.monotonic() - started < 10


def _commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit `offsets` (next offsets) for `group`, as a consumer of that group does."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    finally:
        consumer.close()


def _delete_records(bootstrap: str, before: dict[tuple[str, int], int]) -> None:
    """Delete every record below the given offset: the partition's log-start offset moves up to it."""
    client = kafka.admin(bootstrap)
    futures = client.delete_records([TopicPartition(t, p, o) for (t, p), o in before.items()])
    for future in futures.values():
        future.result(30)
