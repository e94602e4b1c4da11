"""The real broker: topics, produce and consume with exact counts per partition."""

from __future__ import annotations

import pytest

from splitaudit.errors import UsageError
from splitaudit.stack import kafka
from splitaudit.stack.stack import Stack

pytestmark = pytest.mark.integration


def test_produce_and_consume_exact_counts_per_partition(stack: Stack) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "counts", partitions=4)

    sent = kafka.produce(bootstrap, "counts", partitions=4, count=10_000)

    assert sent == {0: 2500, 1: 2500, 2: 2500, 3: 2500}
    assert kafka.end_offsets(bootstrap, "counts", range(4)) == {p: (0, 2500) for p in range(4)}
    seen = kafka.consume_all(bootstrap, "counts", partitions=4)
    assert {p: sorted(offsets) for p, offsets in seen.items()} == {p: list(range(2500)) for p in range(4)}


def test_produce_continues_numbering(stack: Stack) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "more", partitions=3)
    kafka.produce(bootstrap, "more", partitions=3, count=10)
    sent = kafka.produce(bootstrap, "more", partitions=3, count=5, start=10)
    # records 10..14 go to partitions 1, 2, 0, 1, 2
    assert sent == {0: 1, 1: 2, 2: 2}
    assert kafka.end_offsets(bootstrap, "more", range(3)) == {0: (0, 5), 1: (0, 5), 2: (0, 5)}


def test_creating_an_existing_topic_is_refused(stack: Stack) -> None:
    kafka.create_topic(stack.kafka.bootstrap, "twice", partitions=1)
    with pytest.raises(UsageError, match=r"TOPIC_ALREADY_EXISTS|already exists"):
        kafka.create_topic(stack.kafka.bootstrap, "twice", partitions=1)
