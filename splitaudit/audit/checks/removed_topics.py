"""Records a restored job read from a topic it no longer subscribes to (FLINK-34089, flink-connector-kafka 3.3.0):
from two savepoints of one job and the restored job's subscription (`audit --subscription`).

Flink's KafkaSource restores its readers' splits whatever the restored job subscribes to, and its enumerator
leaves a removed topic's splits where they are ("TODO: Handle removed partitions" in 3.3.0's
`KafkaSourceEnumerator.handlePartitionSplitChanges`), so the readers read on. Between the savepoint the job was
restored from (`before`) and a later one (`after`), a split of a topic outside the subscription whose next offset
moved from `b` to `a` was read from `b` to `a - 1` by the restored job: exactly those offsets, every one a record
the job was told not to read. Pure: the savepoints' positions (`SavepointTables.positions`), no Spark.
"""

from __future__ import annotations

from collections.abc import Collection

from splitaudit.audit.checks.findings import ERROR, Finding
from splitaudit.audit.checks.savepoint_tables import SavepointTables

REMOVED_TOPIC_READ = "removed_topic_read"  # offsets of a topic outside the restored job's subscription, read


def check_removed_topics(
    before: SavepointTables, after: SavepointTables, subscription: Collection[str]
) -> tuple[Finding, ...]:
    """Per partition of a topic not in `subscription` that `after` holds further on than `before`: the offsets
    read in between (error, count and range)."""
    earlier, later = before.positions, after.positions
    findings = []
    for key in sorted(later.keys() & earlier.keys()):
        operator, topic, partition = key
        old, new = earlier[key], later[key]
        if topic in subscription or old is None or new is None or new <= old:
            continue
        detail = (
            f"source {operator}: {topic} is not among the restored job's topics ({', '.join(sorted(subscription))}), "
            f"yet its split moved from next offset {old} in checkpoint {before.checkpoint_id} to {new} in checkpoint "
            f"{after.checkpoint_id}: the restored readers read offsets {old}..{new - 1} of it (FLINK-34089: the "
            "KafkaSource keeps a removed topic's restored splits)"
        )
        read = ((old, new - 1),)
        findings.append(Finding(REMOVED_TOPIC_READ, ERROR, topic, partition, new - old, read, detail=detail))
    return tuple(findings)
