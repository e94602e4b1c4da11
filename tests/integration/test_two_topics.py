"""A job that reads two topics, end to end through the scenario: the reference pipeline (stock Beam 2.62.0)
reads two new topics of 5 and 2 partitions (`scenario --partitions 5,2`) at parallelism 2 — 7 partitions, a
parallelism that divides neither the total nor the first topic — is savepointed, cancelled and restored; the
scenario's audit (--partitions TOPIC=N per topic) and an audit with --bootstrap (partitions and real offsets of
every source topic from Kafka, no --topic) judge both topics at once.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from splitaudit.audit.checks.findings import DOUBLE_ASSIGNMENT
from splitaudit.audit.request import AuditRequest
from splitaudit.audit.run import run_audit
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import ScenarioSettings, pipeline_jar, run_restore_scenario
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration

RECORDS = 1_000  # produced to each topic before the savepoint, and again after it
SETTINGS = ScenarioSettings(partitions=5, more_topics=(2,), records=RECORDS, parallelism=2)


def test_a_two_topic_job_is_audited_as_one(stack: Stack, spark: SparkSession, tmp_path: Path) -> None:
    # `spark` first: the scenario's and the audits' sessions are that one (getOrCreate), with Kafka's connector,
    # which --bootstrap reads the source's offsets through; started by the scenario it would have none
    report = run_restore_scenario(stack, tmp_path / "stock", pipeline_jar("stock"), "stock", Progress(), SETTINGS)
    first, second = report.topics
    assert (first[-3:], second[-3:]) == ("-t0", "-t1")
    counts = {first: 5, second: 2}
    per_batch = {topic: RECORDS // n for topic, n in counts.items()}  # 200 per partition of t0, 500 of t1
    every_partition = [(t, p) for t, n in counts.items() for p in range(n)]
    # Stock Beam: after the restore two readers read every partition's second batch, from the savepoint's offset.
    assert [
        (p.topic, p.partition, p.expected_records, p.sink_rows, p.double_read_offsets, p.missing_offsets)
        for p in report.partitions
    ] == [(t, p, 2 * per_batch[t], 3 * per_batch[t], per_batch[t], 0) for t, p in every_partition]
    assert report.double_assigned == tuple(every_partition)

    request = AuditRequest(
        sink=report.sink_path, sink_format="json", savepoint=report.savepoint_after, before=report.savepoint_before
    )
    with_kafka = run_audit(replace(request, bootstrap=stack.kafka.bootstrap), Progress())
    for findings in (report.audit, with_kafka):
        assert sorted((f.kind, f.topic, f.partition, f.count, f.offset_ranges) for f in findings.findings) == [
            (DOUBLE_ASSIGNMENT, t, p, per_batch[t], ((per_batch[t], 2 * per_batch[t] - 1),)) for t, p in every_partition
        ]
        assert findings.summary.double_assigned_partitions == 7
        assert findings.summary.missing_records == 0
        (matrix,) = findings.assignment
        assert [(row.topic, row.partition, row.status) for row in matrix.partitions] == [
            (t, p, "ok") for t, p in every_partition
        ]
        # KafkaIO makes one split per partition here: each subtask holds several, each at its partition's end.
        assert {h.subtask for row in matrix.partitions for h in row.holders} == {0, 1}
        assert [[h.next_offset for h in row.holders] for row in matrix.partitions] == [
            [2 * per_batch[t]] for t, _ in every_partition
        ]
    assert report.audit.assignment[0].partitions_from == f"--partitions {first}=5, {second}=2"
    assert with_kafka.assignment[0].partitions_from == (
        f"the Kafka admin API at {stack.kafka.bootstrap} (topics {first}, {second})"
    )
