"""Kafka topics through Spark's Kafka source on the real broker: a transactional source's real offsets, and a
topic as the sink."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from splitaudit.audit.checks.findings import ERROR, MISSING, REPLAY
from splitaudit.audit.passes.kafka_topic import read_kafka_sink, source_offsets
from splitaudit.audit.passes.sink import audit_sink
from splitaudit.audit.request import SinkColumns
from splitaudit.clients import kafka
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.errors import UsageError
from splitaudit_lab.stack.stack import Stack
from tests.kafka_transactions import MARKED, produce_transactions

pytestmark = pytest.mark.integration


def _offsets(rows: list[tuple[int, int]]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for partition, offset in sorted(rows):
        found.setdefault(partition, []).append(offset)
    return found


def test_source_offsets_skip_transaction_markers_and_aborted_records(stack: Stack, spark: SparkSession) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "txn", partitions=2)
    produce_transactions(bootstrap, "txn", MARKED)
    # the log holds every offset up to the markers: 9 in p0, 6 in p1
    assert kafka.partition_offsets(bootstrap, "txn") == {
        ("txn", 0): PartitionOffsets(0, 9),
        ("txn", 1): PartitionOffsets(0, 6),
    }

    offsets = source_offsets(spark, bootstrap, ("txn",))

    assert offsets.schema.simpleString() == "struct<topic:string,partition:int,offset:bigint>"
    rows = offsets.collect()
    assert {r["topic"] for r in rows} == {"txn"}
    assert _offsets([(r["partition"], r["offset"]) for r in rows]) == {0: [0, 1, 2, 7], 1: [0, 1, 3, 4]}


def test_source_offsets_of_a_missing_topic_is_a_usage_error(stack: Stack, spark: SparkSession) -> None:
    with pytest.raises(UsageError, match="topic 'nowhere' does not exist"):
        source_offsets(spark, stack.kafka.bootstrap, ("nowhere",))


def _produce_json(bootstrap: str, topic: str, values: Mapping[int, Sequence[object]]) -> None:
    """Records with the given values (JSON-encoded unless bytes; None is a tombstone) per partition, in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for partition, records in values.items():
        for value in records:
            data = value if value is None or isinstance(value, bytes) else json.dumps(value).encode()
            producer.produce(topic, value=data, partition=partition)
    assert producer.flush(30) == 0


def _record(partition: int, offset: int, attempt: int) -> dict[str, object]:
    return {
        "topic": "src",
        "partition": partition,
        "offset": offset,
        "reader_id": f"r{partition}-{attempt}",
        "attempt": attempt,
        "subtask": partition,
        "job_id": "j1",
    }


def test_kafka_topic_as_sink_reads_like_a_file_sink_and_the_checks_run_unchanged(
    stack: Stack, spark: SparkSession
) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "out", partitions=2)
    # src/0: offsets 0..19, then attempt 1 replays 15..19; src/1: 0..9 without 4..6
    _produce_json(
        bootstrap,
        "out",
        {
            0: [_record(0, o, 0) for o in range(20)] + [_record(0, o, 1) for o in range(15, 20)],
            1: [_record(1, o, 0) for o in range(10) if not 4 <= o <= 6],
        },
    )

    sink = read_kafka_sink(spark, bootstrap, "out", SinkColumns())

    assert sink.schema.simpleString() == (
        "struct<topic:string,partition:int,offset:bigint,reader_id:string,attempt:int,subtask:int,job_id:string>"
    )
    assert sink.count() == 32
    result = audit_sink(sink)
    assert result.classified
    assert [(f.kind, f.severity, f.topic, f.partition, f.count, f.offset_ranges) for f in result.findings] == [
        (MISSING, ERROR, "src", 1, 3, ((4, 6),)),
        (REPLAY, "warning", "src", 0, 5, ((15, 19),)),
    ]


def test_kafka_sink_with_mapped_fields_and_no_lineage(stack: Stack, spark: SparkSession) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "mapped", partitions=1)
    _produce_json(bootstrap, "mapped", {0: [{"t": "src", "p": 3, "o": 40 + i, "payload": "x"} for i in range(3)]})

    sink = read_kafka_sink(spark, bootstrap, "mapped", SinkColumns(topic="t", partition="p", offset="o"))

    assert [tuple(r) for r in sink.orderBy("offset").collect()] == [("src", 3, 40), ("src", 3, 41), ("src", 3, 42)]
    assert sink.columns == ["topic", "partition", "offset"]


def test_kafka_sink_records_that_are_not_json_objects_are_a_usage_error(stack: Stack, spark: SparkSession) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "garbled", partitions=1)
    _produce_json(bootstrap, "garbled", {0: [_record(0, 0, 0), b"not json", b"[1, 2]", _record(0, 1, 0), None]})

    with pytest.raises(UsageError) as raised:
        read_kafka_sink(spark, bootstrap, "garbled", SinkColumns())
    assert str(raised.value) == (
        f"Kafka sink topic 'garbled' at {bootstrap}: 3 of 5 records are not JSON objects with integer 'partition' "
        "and 'offset' fields; the first at partition 0 offset 1 of that topic"
    )


def test_kafka_sink_records_without_a_coordinate_field_are_a_usage_error(stack: Stack, spark: SparkSession) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "partial", partitions=1)
    _produce_json(
        bootstrap, "partial", {0: [{"topic": "src", "partition": 0, "offset": 0}, {"topic": "src", "offset": 1}]}
    )

    with pytest.raises(UsageError) as raised:
        read_kafka_sink(spark, bootstrap, "partial", SinkColumns())
    assert str(raised.value) == (
        f"Kafka sink topic 'partial' at {bootstrap}: 1 of 2 records have no field 'partition' (--partition-col); "
        "the first at partition 0 offset 1 of that topic"
    )
