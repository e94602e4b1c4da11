"""FLINK-40469 caught before a restore: a DynamicKafkaSource checkpoint that would silently drop partitions.

flink-connector-kafka, `DynamicKafkaSourceEnumerator` with `SupportsSplitReassignmentOnRecovery` (FLINK-39980,
connector main after 5.0.0, Flink 2.2.1): restored readers hold no splits and report theirs to the enumerator,
which defers reassigning them until the first metadata discovery and every reader's registration. A checkpoint
completed inside that window has empty reader state while each cluster's `KafkaSourceEnumState` still marks the
partitions ASSIGNED; a sub-enumerator never hands an assigned partition out again, so a restore from it reads
those partitions no more (connector PR #295 checkpoints the reported splits instead). On connector 3.3.0 with
Flink 1.19.3 readers keep their splits on restore and no such window exists; the state is the same either way.

The rule, decided by the savepoint alone: per DynamicKafkaSource operator, every (cluster, topic, partition) its
enumerator checkpoint names as assigned and no reader split holds is lost on restore
(`dynamic_kafka_partition_lost`, error). It replaces the generic `partition_unassigned` of the same partition.
"""

from __future__ import annotations

from collections.abc import Iterable

from splitaudit.audit.checks.findings import ERROR, UNASSIGNED, Finding
from splitaudit.audit.checks.savepoint_tables import SavepointTables, partition_rows
from splitaudit.splits.dynamic_kafka import DynamicKafkaSourceSplit
from splitaudit.splits.model import ASSIGNED

LOST_IN_RECOVERY = "dynamic_kafka_partition_lost"  # assigned in the enumerator's checkpoint, held by no reader
DYNAMIC_KAFKA_FAMILY = DynamicKafkaSourceSplit.type


def recovery_window_losses(tables: SavepointTables) -> tuple[Finding, ...]:
    """The partitions a restore of `tables` loses (FLINK-40469's state), one error each, sorted by operator,
    cluster, topic and partition."""
    names = {r["operator_id"]: r["operator_uid"] or r["operator_id"] for r in tables.operators}
    held = {
        (r["operator_id"], r["cluster"], r["topic"], r["partition"])
        for r in partition_rows(tables.splits)
        if r["split_type"] == DYNAMIC_KAFKA_FAMILY
    }
    assigned = sorted(
        {
            (r["operator_id"], r["cluster"], r["topic"], r["partition"])
            for r in partition_rows(tables.enumerator)
            if r["split_type"] == DYNAMIC_KAFKA_FAMILY and r["status"] == ASSIGNED
        }
        - held
    )
    return tuple(
        Finding(
            LOST_IN_RECOVERY,
            ERROR,
            topic,
            partition,
            0,
            detail=(
                f"source {names[operator]}: decided by the savepoint: cluster {cluster}'s KafkaSourceEnumState "
                f"names {topic}-{partition} as assigned and no reader split holds it, so the restored "
                "sub-enumerator never hands it out again and nothing reads it (FLINK-40469: a checkpoint taken in "
                "DynamicKafkaSource's recovery window; fixed by flink-connector-kafka PR #295)"
            ),
        )
        for operator, cluster, topic, partition in assigned
    )


def with_recovery_window_losses(findings: Iterable[Finding], tables: SavepointTables) -> tuple[Finding, ...]:
    """`findings` with the losses of `recovery_window_losses` added, each in place of the `partition_unassigned`
    finding the assignment check made of the same partition."""
    losses = recovery_window_losses(tables)
    lost = {(f.topic, f.partition) for f in losses}
    kept = [f for f in findings if not (f.kind == UNASSIGNED and (f.topic, f.partition) in lost)]
    return (*kept, *losses)
