"""What the DynamicKafkaSource runs assert, on the stack's own pair (test_dynamic_kafka_source.py) and on every
other release of the KafkaSource matrix (test_dynamic_kafka_matrix.py)."""

from __future__ import annotations

from splitaudit.audit.checks.findings import INFO, LAG
from splitaudit.audit.checks.savepoint_tables import savepoint_tables
from splitaudit.guard.dynamic_kafka import recovery_window_losses
from splitaudit_lab.scenario.dynamic_kafka import CLUSTER_ID, RecoveryRun
from splitaudit_lab.scenario.flink_kafka import KafkaSourceRestore

CLEAN_PARTITIONS = 3  # the clean restore: 3 partitions, 300 records (100 each) before SP0, 300 more while down


def assert_clean_dynamic_restore(result: KafkaSourceRestore) -> None:
    """Every offset in the sink once; SP0 shows each partition with the cluster `splitaudit-kafka` at 100; the
    guard (with `--bootstrap`) sees only the backlog (`lag` 100..199 on each) and the audit nothing."""
    assert [(p.partition, p.expected_records, p.sink_rows, p.missing_offsets) for p in result.run.partitions] == [
        (p, 200, 200, 0) for p in range(CLEAN_PARTITIONS)
    ]
    sp0 = savepoint_tables(result.run.savepoint_before)
    assert sorted((r["cluster"], r["partition"], r["next_offset"]) for r in sp0.splits) == [
        (CLUSTER_ID, p, 100) for p in range(CLEAN_PARTITIONS)
    ]
    assert result.guard.safe
    assert [(f.kind, f.severity, f.partition, f.count, f.offset_ranges) for f in result.guard.findings] == [
        (LAG, INFO, p, 100, ((100, 199),)) for p in range(CLEAN_PARTITIONS)
    ]
    assert result.run.audit.findings == ()


def assert_no_recovery_loss(result: RecoveryRun) -> None:
    """A TaskManager kill of the 3-partition, 3000-record job: nothing missing from the sink (2000 per partition),
    no checkpoint shows FLINK-40469's state to the guard's rule, and every checkpoint after the restart holds all
    three partitions (restored readers keep their splits: no released DynamicKafkaSource implements
    `SupportsSplitReassignmentOnRecovery`)."""
    assert [(p.partition, p.expected_records, p.missing_offsets) for p in result.run.partitions] == [
        (p, 2000, 0) for p in range(3)
    ]
    restart = int(result.run.savepoint_before.rstrip("/").rsplit("chk-", 1)[1])  # the checkpoint restored from
    recovery = [c for c in result.checkpoints if int(c.name.removeprefix("chk-")) > restart]
    assert recovery, result.checkpoints
    for checkpoint in result.checkpoints:
        assert recovery_window_losses(savepoint_tables(str(checkpoint))) == (), checkpoint
    for checkpoint in recovery:
        held = {(r["cluster"], r["partition"]) for r in savepoint_tables(str(checkpoint)).splits}
        assert held == {(CLUSTER_ID, p) for p in range(3)}, checkpoint
