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
