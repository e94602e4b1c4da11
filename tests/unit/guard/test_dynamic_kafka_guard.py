"""The guard's FLINK-40469 rule on hand-made tables: which (cluster, topic, partition) a DynamicKafkaSource
restore loses, decided by the savepoint alone (assigned in a cluster's KafkaSourceEnumState, held by no reader
split), and its finding in place of the assignment check's `partition_unassigned`. The rule on the real state of a
run is in tests/unit/splits/test_dynamic_kafka_fixture.py."""

from __future__ import annotations

from typing import Any

from splitaudit.audit.findings import ERROR, LAG, UNASSIGNED, Finding
from splitaudit.audit.savepoint_tables import SavepointTables
from splitaudit.guard.dynamic_kafka import LOST_IN_RECOVERY, recovery_window_losses, with_recovery_window_losses
from splitaudit.splits.model import ASSIGNED, PENDING

OPERATOR = {"operator_id": "op1", "operator_uid": "dynamic-kafka-source"}


def row(cluster: str, topic: str, partition: int, **more: Any) -> dict[str, Any]:
    return OPERATOR | {"split_type": "dynamic_kafka", "cluster": cluster, "topic": topic, "partition": partition} | more


def tables(splits: list[dict[str, Any]], enumerator: list[dict[str, Any]]) -> SavepointTables:
    return SavepointTables("sp", 7, (OPERATOR,), tuple(splits), tuple(enumerator))


def test_assigned_partitions_no_reader_holds_are_lost_per_cluster() -> None:
    found = recovery_window_losses(
        tables(
            [row("a", "t", 0, subtask=0, next_offset=5)],
            [
                row("a", "t", 0, status=ASSIGNED),
                row("a", "t", 1, status=ASSIGNED),  # lost
                row("b", "t", 0, status=ASSIGNED),  # the same topic partition on another cluster: lost too
                row("a", "t", 2, status=PENDING),  # pending: the enumerator hands it out, not lost
            ],
        )
    )
    assert [(f.kind, f.severity, f.topic, f.partition) for f in found] == [
        (LOST_IN_RECOVERY, ERROR, "t", 1),
        (LOST_IN_RECOVERY, ERROR, "t", 0),
    ]
    assert "cluster a's KafkaSourceEnumState names t-1" in found[0].detail
    assert "cluster b's KafkaSourceEnumState names t-0" in found[1].detail
    assert found[0].detail.startswith("source dynamic-kafka-source: decided by the savepoint")


def test_other_families_are_not_judged_by_this_rule() -> None:
    kafka = OPERATOR | {"split_type": "kafka", "cluster": None, "topic": "t", "partition": 0, "status": ASSIGNED}
    assert recovery_window_losses(tables([], [kafka])) == ()


def test_the_loss_replaces_the_unassigned_finding_of_its_partition_only() -> None:
    unassigned = [Finding(UNASSIGNED, ERROR, "t", p, 0) for p in (0, 1)]
    lag = Finding(LAG, "info", "t", 2, 3)
    state = tables([row("a", "t", 1, subtask=0, next_offset=1)], [row("a", "t", p, status=ASSIGNED) for p in (0, 1)])
    result = with_recovery_window_losses([*unassigned, lag], state)
    assert [(f.kind, f.partition) for f in result] == [(UNASSIGNED, 1), (LAG, 2), (LOST_IN_RECOVERY, 0)]
