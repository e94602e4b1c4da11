"""A job that reads two topics, audited end to end: the reference pipeline (stock Beam 2.62.0) reads `orders`
(5 partitions) and `payments` (2) at parallelism 2 — 7 partitions, a parallelism that divides neither the total
nor the first topic — is savepointed, cancelled and restored; the audit judges both topics at once, with
--bootstrap (partitions and real offsets of every source topic from Kafka, no --topic) and with --partitions
TOPIC=N per topic.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from splitaudit.audit.findings import DOUBLE_ASSIGNMENT
from splitaudit.audit.request import AuditRequest
from splitaudit.audit.run import run_audit
from splitaudit.clients import kafka
from splitaudit.home import pipeline_jars
from splitaudit.polling import poll
from splitaudit.progress import Progress
from splitaudit.scenario.sink import count_rows
from splitaudit.stack.stack import Stack

pytestmark = pytest.mark.integration

TOPICS = {"orders": 5, "payments": 2}
PER_PARTITION = 100  # records per partition in each of the two batches


def _settled(sink: Path, rows: int) -> None:
    """Wait for `rows` sink rows, then until three seconds pass without one more (twins may still catch up)."""
    poll(f"{rows} rows in {sink}", lambda: count_rows(sink) >= rows, timeout=300, interval=1.0)
    seen = [-1]

    def stable() -> bool:
        before, seen[0] = seen[0], count_rows(sink)
        return before == seen[0]

    poll(f"{sink} to stop growing", stable, timeout=300, interval=3.0)


def test_a_two_topic_job_is_audited_as_one(stack: Stack, tmp_path: Path) -> None:
    bootstrap, flink = stack.kafka.bootstrap, stack.flink.client()
    suffix = uuid.uuid4().hex[:6]
    topics = {f"{name}-{suffix}": partitions for name, partitions in TOPICS.items()}
    for topic, partitions in topics.items():
        kafka.create_topic(bootstrap, topic, partitions)
        kafka.produce(bootstrap, topic, partitions, PER_PARTITION * partitions)
    sink = tmp_path / "sink"
    sink.mkdir()
    args = [
        f"--bootstrapServers={bootstrap}",
        f"--topic={','.join(topics)}",
        f"--sinkDir={sink}",
        f"--groupId=two-topics-{suffix}",
        "--parallelism=2",
    ]
    jar = flink.upload_jar(pipeline_jars()["stock"])
    first = flink.run_jar(jar, program_args=args, job_id=uuid.uuid4().hex)
    flink.wait_all_running(first)
    total = sum(topics.values()) * PER_PARTITION
    _settled(sink, total)
    before = flink.savepoint(first, (tmp_path / "savepoints").as_uri())
    flink.cancel(first)
    for topic, partitions in topics.items():
        kafka.produce(bootstrap, topic, partitions, PER_PARTITION * partitions, start=PER_PARTITION * partitions)
    second, _ = flink.restore(jar, before, program_args=args, job_id=uuid.uuid4().hex)
    # Stock Beam: after the restore two readers read every partition's second batch.
    _settled(sink, 3 * total)
    after = flink.savepoint(second, (tmp_path / "savepoints").as_uri())
    flink.cancel(second)

    request = AuditRequest(sink=str(sink), sink_format="json", savepoint=after, before=before)
    with_kafka = run_audit(replace(request, bootstrap=bootstrap), Progress())
    counted = run_audit(replace(request, partitions=tuple(topics.items())), Progress())
    every_partition = sorted((t, p) for t, n in topics.items() for p in range(n))
    for findings in (with_kafka, counted):
        assert sorted((f.kind, f.topic, f.partition, f.count, f.offset_ranges) for f in findings.findings) == [
            (DOUBLE_ASSIGNMENT, topic, partition, PER_PARTITION, ((PER_PARTITION, 2 * PER_PARTITION - 1),))
            for topic, partition in every_partition
        ]
        assert findings.summary.double_assigned_partitions == 7
        assert findings.summary.missing_records == 0
        (matrix,) = findings.assignment
        assert [(row.topic, row.partition, row.status) for row in matrix.partitions] == [
            (topic, partition, "ok") for topic, partition in every_partition
        ]
        # KafkaIO makes one split per partition here: each subtask holds several, every one at offset 200.
        assert {h.subtask for row in matrix.partitions for h in row.holders} == {0, 1}
        assert {h.next_offset for row in matrix.partitions for h in row.holders} == {2 * PER_PARTITION}
    assert (
        with_kafka.assignment[0].partitions_from == f"the Kafka admin API at {bootstrap} (topics {', '.join(topics)})"
    )
    assert counted.assignment[0].partitions_from == "--partitions " + ", ".join(f"{t}={n}" for t, n in topics.items())
