"""`splitaudit audit --bootstrap` against a real broker: gaps judged against the offsets the topic really has
(transaction markers and aborted records are not loss), partitions from the admin API, a topic as the sink."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer

from splitaudit.audit.checks.findings import LAG, MISSING, UNASSIGNED
from splitaudit.clients import kafka
from splitaudit_lab.stack.stack import Stack
from tests.kafka_transactions import MARKED, produce_transactions

pytestmark = pytest.mark.integration

SAVEPOINT = Path(__file__).parents[2] / "fixtures" / "beam_flink_source" / "restore_patched_after"


def _audit(*args: str) -> tuple[int, dict[str, object]]:
    command = [sys.executable, "-m", "splitaudit", "--json", "audit", "--master", "local[1]", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    document: dict[str, object] = json.loads(done.stdout)
    return done.returncode, document


def _sink(path: Path, rows: dict[int, list[int]], topic: str) -> Path:
    partitions = [p for p, offsets in rows.items() for _ in offsets]
    offsets = [o for values in rows.values() for o in values]
    pq.write_table(pa.table({"topic": [topic] * len(offsets), "partition": partitions, "offset": offsets}), path)
    return path


def test_transaction_markers_are_no_gap_but_a_lost_record_is(stack: Stack, tmp_path: Path) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "txn-audit", partitions=2)
    produce_transactions(bootstrap, "txn-audit", MARKED)
    # A consumer (read_committed) saw every record but lost p1's offset 3.
    sink = _sink(tmp_path / "sink.parquet", {0: [0, 1, 2, 7], 1: [0, 1, 4]}, "txn-audit")

    code, judged = _audit("--sink", str(sink), "--bootstrap", bootstrap, "--topic", "txn-audit")
    assert code == 1
    findings = judged["findings"]
    assert isinstance(findings, list)
    assert [(f["kind"], f["partition"], f["count"], f["offset_ranges"]) for f in findings] == [
        (MISSING, 1, 1, [[3, 3]]),
        # Lag counts offsets, as Kafka's own tools do: each partition's last commit marker is "unread".
        (LAG, 0, 1, [[8, 8]]),
        (LAG, 1, 1, [[5, 5]]),
    ]
    assert judged["summary"] == {
        "duplicate_records": 0,
        "missing_records": 1,
        "double_assigned_partitions": 0,
        "missing_partitions": 0,
        "rewound_partitions": 0,
    }
    assert any("exist in topic txn-audit at" in str(note) for note in judged["notes"])  # type: ignore[attr-defined]

    # Without the topic, dense offsets are assumed: the markers at p0 3..6 and p1 2 look like loss too.
    code, dense = _audit("--sink", str(sink))
    assert code == 1
    assert dense["summary"]["missing_records"] == 4 + 2  # type: ignore[index]


def test_partitions_from_the_admin_api_and_a_topic_as_the_sink(stack: Stack, tmp_path: Path) -> None:
    # The restored savepoint holds partitions 0..3 of its topic; on this broker the topic has 6, 10 records each.
    bootstrap = stack.kafka.bootstrap
    topic = json.loads((SAVEPOINT / "expected.json").read_text())["topic"]
    kafka.create_topic(bootstrap, topic, partitions=6)
    kafka.produce(bootstrap, topic, partitions=6, count=60)
    kafka.create_topic(bootstrap, "sink-topic", partitions=2)
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in range(6):  # the job's output: one JSON record per source record, all but p0's offset 5
        for offset in range(10):
            if (partition, offset) != (0, 5):
                value = {"topic": topic, "partition": partition, "offset": offset, "reader_id": "r", "attempt": 0}
                producer.produce("sink-topic", value=json.dumps(value).encode(), partition=offset % 2)
    producer.flush(30)

    code, judged = _audit(
        "--savepoint", str(SAVEPOINT), "--bootstrap", bootstrap, "--sink", "sink-topic", "--sink-format", "kafka"
    )
    assert code == 1
    findings = judged["findings"]
    assert isinstance(findings, list)
    errors = [(f["kind"], f["partition"], f["count"], f["offset_ranges"]) for f in findings if f["severity"] == "error"]
    assert errors == [(UNASSIGNED, 4, 0, []), (UNASSIGNED, 5, 0, []), (MISSING, 0, 1, [[5, 5]])]
    assignment = judged["assignment"]
    assert isinstance(assignment, list)
    assert assignment[0]["partitions_from"] == f"the Kafka admin API at {bootstrap} (topic {topic})"
