"""Transactional producing for the Kafka tests: real commit and abort markers, which occupy offsets."""

from __future__ import annotations

from confluent_kafka import Producer


def produce_transactions(bootstrap: str, topic: str, transactions: list[tuple[dict[int, int], bool]]) -> None:
    """Produce each transaction's record counts per partition, then commit it or (after a flush, so its records
    are in the log) abort it. Each transaction ends with a marker at one offset of every partition it wrote."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"splitaudit-{topic}"})
    producer.init_transactions(30)
    for counts, commit in transactions:
        producer.begin_transaction()
        for partition, count in counts.items():
            for i in range(count):
                producer.produce(topic, value=f"{partition}:{i}".encode(), partition=partition)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


# Two partitions with every kind of hole: committed records p0 0 1 2 7 and p1 0 1 3 4; commit markers at p0 3, 8
# and p1 2, 5; aborted records p0 4 5 and their abort marker p0 6. End offsets 9 and 6.
MARKED = [
    ({0: 3, 1: 2}, True),  # p0: 0 1 2, commit marker 3;  p1: 0 1, marker 2
    ({0: 2}, False),  # p0: aborted 4 5, abort marker 6
    ({0: 1, 1: 2}, True),  # p0: 7, marker 8;  p1: 3 4, marker 5
]
