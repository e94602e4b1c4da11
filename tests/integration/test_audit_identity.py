"""`splitaudit audit --sink-key/--source-key` against a real broker: a sink with no Kafka coordinates mapped back to
the source records by a record identity, and sinks whose coordinates name no source topic refused."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from splitaudit.audit.checks.findings import (
    AMBIGUOUS_IDENTITY,
    DUPLICATE,
    INVALID,
    LAG,
    MISSING,
    NO_IDENTITY,
    NOT_A_SOURCE_TOPIC,
    UNMATCHED,
)
from splitaudit.audit.passes import identity
from splitaudit.audit.passes.kafka_topic import read_topics, topic_records
from splitaudit.audit.passes.sink import audit_sink
from splitaudit.audit.request import IdentityMatch
from splitaudit.clients import kafka
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration

SOURCE_KEY = "get_json_object(CAST(value AS STRING), '$.timestamp')"


def _audit(*args: str) -> tuple[int, dict[str, Any], str]:
    command = [sys.executable, "-m", "splitaudit", "--json", "audit", "--master", "local[1]", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    document: dict[str, Any] = json.loads(done.stdout)
    message = document["error"]["message"] if "error" in document else ""
    assert "Traceback" not in done.stderr
    return done.returncode, document, message


def _weather(i: int) -> dict[str, Any]:
    """Record i of the test's source: a unique timestamp, as a weather feed has."""
    return {"timestamp": f"2026-11-25T10:00:{i // 60:02d}.{i % 60:03d}Z", "temperature": i % 30, "rainfall": i % 7}


def _produce(bootstrap: str, topic: str, values: list[tuple[int, bytes]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for partition, value in values:
        producer.produce(topic, value=value, partition=partition)
    assert producer.flush(30) == 0


def test_a_sink_without_coordinates_is_judged_by_record_identity(stack: Stack, tmp_path: Path) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "weather-in", partitions=2)
    # records 0..23: record i to partition i % 2, so offset i // 2 (0..11 in each partition)
    records = [_weather(i) for i in range(24)]
    values = [(i % 2, json.dumps(r).encode()) for i, r in enumerate(records)]
    # then two records sharing one timestamp (p0 offsets 12, 13) and one that is not JSON (p1 offset 12)
    shared = json.dumps({"timestamp": "shared", "temperature": 0, "rainfall": 0}).encode()
    values += [(0, shared), (0, shared), (1, b"not json")]
    _produce(bootstrap, "weather-in", values)

    # The job's output: each record's fields, no coordinates. p1's offset 4 (record 9) is missing, p0's offsets
    # 8..11 (records 16, 18, 20, 22) are there twice, one row names no record, one has no timestamp, and one
    # carries the shared timestamp.
    rows = [r for i, r in enumerate(records) if i != 9]
    rows += [records[i] for i in (16, 18, 20, 22)]
    rows += [
        {"timestamp": "nope", "temperature": 1, "rainfall": 1},
        {"timestamp": None, "temperature": 2, "rainfall": 2},
    ]
    rows += [{"timestamp": "shared", "temperature": 0, "rainfall": 0}]
    sink = tmp_path / "sink.parquet"
    pq.write_table(pa.Table.from_pylist(rows), sink)

    code, judged, _ = _audit(
        "--sink", str(sink), "--bootstrap", bootstrap, "--topic", "weather-in",
        "--sink-key", "timestamp", "--source-key", SOURCE_KEY,
    )  # fmt: skip
    assert code == 1
    found = [(f["kind"], f["partition"], f["count"], f["offset_ranges"]) for f in judged["findings"]]
    assert found == [
        (INVALID, None, 1, []),
        (UNMATCHED, None, 1, []),
        (AMBIGUOUS_IDENTITY, None, 2, []),
        (NO_IDENTITY, None, 1, []),
        (MISSING, 1, 1, [[4, 4]]),
        (DUPLICATE, 0, 4, [[8, 11]]),
        # lag counts from the sink's last judged offset (11): the shared and the unparsable records lie past it
        (LAG, 0, 2, [[12, 13]]),
        (LAG, 1, 1, [[12, 12]]),
    ]
    by_kind = {f["kind"]: f for f in judged["findings"]}
    assert by_kind[UNMATCHED]["sample"] == [{"timestamp": "nope", "temperature": 1, "rainfall": 1}]
    assert by_kind[INVALID]["sample"] == [{"timestamp": None, "temperature": 2, "rainfall": 2}]
    assert by_kind[AMBIGUOUS_IDENTITY]["sample"] == [
        {"topic": "weather-in", "partition": 0, "offset": 12, "records": 2},
        {"topic": "weather-in", "partition": 0, "offset": 13, "records": 2},
    ]
    assert by_kind[DUPLICATE]["classified_by"] is None  # no lineage and no --before: not classified
    assert judged["summary"]["duplicate_records"] == 4
    assert judged["summary"]["missing_records"] == 1
    assert [
        (c["partition"], c["rows"], c["distinct"], c["first_offset"], c["last_offset"]) for c in judged["coverage"]
    ] == [
        (0, 16, 12, 0, 11),
        (1, 11, 11, 0, 11),
    ]
    assert any("mapped to source records by identity" in n for n in judged["notes"])

    # The payload mode: a pass-through job's sink holds each record's value as it was read.
    passthrough = tmp_path / "passthrough.parquet"
    copied = [v.decode() for _, v in values[:24] if v != values[9][1]] + [values[0][1].decode()]
    pq.write_table(pa.table({"value": copied}), passthrough)
    code, judged, _ = _audit(
        "--sink", str(passthrough), "--bootstrap", bootstrap, "--topic", "weather-in", "--match-payload"
    )
    assert code == 1
    found = [(f["kind"], f["partition"], f["count"], f["offset_ranges"]) for f in judged["findings"]]
    assert [f for f in found if f[0] != LAG] == [
        (AMBIGUOUS_IDENTITY, None, 2, []),
        # the value that is no JSON is an identity here: its record is missing too
        (MISSING, 1, 2, [[4, 4], [12, 12]]),
        (DUPLICATE, 0, 1, [[0, 0]]),
    ]

    # The same pass-through output written to a topic: the sink's own coordinates are not the source's, the
    # identity is, and --sink-key reads the output record as Spark's Kafka source gives it.
    kafka.create_topic(bootstrap, "weather-out", partitions=3)
    _produce(bootstrap, "weather-out", [(i % 3, value.encode()) for i, value in enumerate(copied)])
    code, judged, _ = _audit(
        "--sink", "weather-out", "--sink-format", "kafka", "--bootstrap", bootstrap, "--topic", "weather-in",
        "--sink-key", "get_json_object(CAST(value AS STRING), '$.timestamp')", "--source-key", SOURCE_KEY,
    )  # fmt: skip
    assert code == 1
    found = [(f["kind"], f["partition"], f["count"], f["offset_ranges"]) for f in judged["findings"]]
    assert [f for f in found if f[0] != LAG] == [
        (AMBIGUOUS_IDENTITY, None, 2, []),
        (NO_IDENTITY, None, 1, []),
        (MISSING, 1, 1, [[4, 4]]),
        (DUPLICATE, 0, 1, [[0, 0]]),
    ]


def test_a_sink_whose_coordinates_name_no_source_topic_is_refused(stack: Stack, tmp_path: Path) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "own-in", partitions=2)
    kafka.produce(bootstrap, "own-in", partitions=2, count=20)
    # A dump of the job's output topic: its own coordinates, 3 records per partition of `own-out`.
    out = tmp_path / "out.parquet"
    pq.write_table(pa.table({"topic": ["own-out"] * 6, "partition": [0, 0, 0, 1, 1, 1], "offset": [0, 1, 2] * 2}), out)
    for extra in ((), ("--bootstrap", bootstrap)):
        code, _, message = _audit("--sink", str(out), "--topic", "own-in", *extra)
        assert code == 2
        assert "name only topic(s) own-out, which no source reads (the sources read own-in)" in message
        assert "--sink-key" in message

    # Rows of a source topic beside rows of another: the other is left out, never judged missing.
    mixed = tmp_path / "mixed.parquet"
    topics = ["own-in"] * 20 + ["own-out"] * 2
    partitions = [i % 2 for i in range(20)] + [0, 0]
    offsets = [i // 2 for i in range(20)] + [0, 5]
    pq.write_table(pa.table({"topic": topics, "partition": partitions, "offset": offsets}), mixed)
    code, judged, _ = _audit("--sink", str(mixed), "--topic", "own-in", "--bootstrap", bootstrap)
    assert code == 0
    assert [(f["kind"], f["topic"], f["count"]) for f in judged["findings"]] == [(NOT_A_SOURCE_TOPIC, "own-out", 2)]
    assert judged["summary"]["missing_records"] == 0
    assert {c["topic"] for c in judged["coverage"]} == {"own-in"}


def test_a_sink_without_coordinates_says_what_would_let_it_be_judged(tmp_path: Path) -> None:
    sink = tmp_path / "parsed.parquet"
    pq.write_table(pa.table({"timestamp": ["a"], "temperature": [1.0], "rainfall": [0.0]}), sink)
    code, _, message = _audit("--sink", str(sink))
    assert code == 2
    assert "the sink has no column topic (--topic-col), partition (--partition-col), offset (--offset-col)" in message
    assert "--sink-key EXPR --source-key EXPR" in message


def test_more_identities_than_join_rows_per_partition_are_joined_by_sort_merge(
    stack: Stack, spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A join of more identities than JOIN_ROWS per shuffle partition is a sort-merge join (whose sorts spill; a
    hash join task's map does not), with the same answer."""
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "weather-join", partitions=2)
    records = [_weather(i) for i in range(100)]  # record i to partition i % 2, so offset i // 2
    _produce(bootstrap, "weather-join", [(i % 2, json.dumps(r).encode()) for i, r in enumerate(records)])
    rows = [r for i, r in enumerate(records) if i not in (10, 12)] + [records[i] for i in (41, 43, 45)]
    sink = tmp_path / "sink.parquet"
    pq.write_table(pa.Table.from_pylist(rows), sink)
    monkeypatch.setattr(identity, "JOIN_ROWS", 10)  # 100 identities: more than 10 in each of the session's 4
    shuffle = spark.conf.get("spark.sql.shuffle.partitions") or "200"
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    try:
        source = read_topics(spark, bootstrap, ("weather-join",), headers=True)
        match = IdentityMatch("timestamp", SOURCE_KEY)
        with identity.map_to_source(spark.read.parquet(str(sink)), source, ("weather-join",), match) as mapping:
            plan = mapping.sink._jdf.queryExecution().executedPlan().toString()
            assert "SortMergeJoin" in plan
            assert "ShuffledHashJoin" not in plan
            audit = audit_sink(mapping.sink, source=mapping.source, source_topics=frozenset({"weather-join"}))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", shuffle)
    found = [(f.kind, f.partition, f.count, f.offset_ranges) for f in audit.findings]
    assert found == [(MISSING, 0, 2, ((5, 6),)), (DUPLICATE, 1, 3, ((20, 22),))]


def test_the_identities_are_aggregated_once_in_partitions_sized_by_the_topics(
    stack: Stack, spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source's identities are nearly all distinct, so they are counted by one aggregation after the shuffle,
    with no partial aggregate before it that would hash every record to reduce nothing (the setting that plans
    them so is the session's only while they are planned), in as many partitions as the topics' records need at
    IDENTITY_ROWS each, which the join keeps."""
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "weather-once", partitions=2)
    records = [_weather(i) for i in range(20)]
    _produce(bootstrap, "weather-once", [(i % 2, json.dumps(r).encode()) for i, r in enumerate(records)])
    sink = tmp_path / "sink.parquet"
    pq.write_table(pa.Table.from_pylist([r for i, r in enumerate(records) if i != 6]), sink)  # p0's offset 3
    held = topic_records(bootstrap, ("weather-once",))
    assert held == 20
    monkeypatch.setattr(identity, "IDENTITY_ROWS", 4)  # 20 records: 5 partitions, more than the session's 2
    assert spark.conf.get(identity.BYPASS_PARTIAL_AGGREGATION, None) is None
    shuffle = spark.conf.get("spark.sql.shuffle.partitions") or "200"
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    try:
        source = read_topics(spark, bootstrap, ("weather-once",), headers=True)
        match = IdentityMatch("timestamp", SOURCE_KEY)
        sink_rows = spark.read.parquet(str(sink))
        with identity.map_to_source(sink_rows, source, ("weather-once",), match, records=held) as mapping:
            assert spark.conf.get(identity.BYPASS_PARTIAL_AGGREGATION, None) is None
            plan = mapping.source._jdf.queryExecution().executedPlan().toString()
            assert "HashAggregate(keys=[_id_high" in plan
            assert "partial_count" not in plan
            assert "partial_min" not in plan
            assert re.search(r"hashpartitioning\(_id_high#\d+L, _id_low#\d+L, 5\), REPARTITION_BY_NUM", plan)
            joined = mapping.sink._jdf.queryExecution().executedPlan().toString()
            assert "ShuffledHashJoin" in joined
            # the sink shuffled to the identities' 5 partitions
            assert re.search(r"hashpartitioning\(_id_high#\d+L, _id_low#\d+L, 5\), ENSURE_REQUIREMENTS", joined)
            audit = audit_sink(mapping.sink, source=mapping.source, source_topics=frozenset({"weather-once"}))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", shuffle)
    found = [(f.kind, f.partition, f.count, f.offset_ranges) for f in audit.findings]
    assert found == [(MISSING, 0, 1, ((3, 3),))]


def test_an_identity_is_evaluated_once_per_row_and_null_gives_no_fingerprint(spark: SparkSession) -> None:
    """The identity expression (here a JSON path) runs once per row, not once per hash and null guard."""
    frame = spark.createDataFrame(
        [('{"t": "a"}', 1), ('{"t": "a"}', 2), ('{"u": 1}', 3), ('{"t": "b"}', 4)], "value string, n int"
    )
    hashed = identity._fingerprinted(frame, F.expr("get_json_object(value, '$.t')"), "n")
    assert hashed._jdf.queryExecution().executedPlan().toString().count("get_json_object(") == 1
    rows = {r["n"]: (r["_id_high"], r["_id_low"]) for r in hashed.collect()}
    assert rows[1] == rows[2]
    assert rows[3] == (None, None)
    assert None not in rows[4]
    assert rows[4] != rows[1]
