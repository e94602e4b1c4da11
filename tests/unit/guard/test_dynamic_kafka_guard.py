"""The guard's FLINK-40469 rule on hand-made tables: which (cluster, topic, partition) a DynamicKafkaSource
restore loses, decided by the savepoint alone (assigned in a cluster's KafkaSourceEnumState, held by no reader
split), and its finding in place of the assignment check's `partition_unassigned`; and `guard` end to end on the
real savepoint of fixtures/dynamic_kafka/ with one reader split rewritten to hold its partition no longer. The rule
on the real state of a run is in tests/unit/splits/test_dynamic_kafka_fixture.py."""

from __future__ import annotations

import json
import shutil
import struct
import zipfile
from pathlib import Path
from typing import Any

from splitaudit.audit.checks.findings import ERROR, LAG, UNASSIGNED, Finding
from splitaudit.audit.checks.savepoint_tables import SavepointTables
from splitaudit.guard.dynamic_kafka import LOST_IN_RECOVERY, recovery_window_losses, with_recovery_window_losses
from splitaudit.guard.predict import run_guard
from splitaudit.progress import Progress
from splitaudit.splits.model import ASSIGNED, PENDING
from tests.unit.conftest import FIXTURES
from tests.unit.splits.test_dynamic_kafka import utf

CASE = FIXTURES / "dynamic_kafka" / "1.19.3-dynamic-kafka-3.3.0-1.19"
EXPECTED: dict[str, Any] = json.loads((CASE / "expected.json").read_text())

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


def test_guard_fails_a_real_savepoint_whose_reader_no_longer_holds_a_partition(tmp_path: Path) -> None:
    # The real SP0 of fixtures/dynamic_kafka/ with one reader split's partition rewritten in place, 0 -> 7 (same
    # length: every length and offset stays valid; the enumerator's bytes do not match the split's pattern): no
    # reader holds partition 0 while the cluster's KafkaSourceEnumState names it assigned, FLINK-40469's state.
    job = EXPECTED["job"]
    snapshot = CASE / EXPECTED["sp0"]["snapshot_dir"]
    copy = tmp_path / snapshot.name
    shutil.copytree(snapshot, copy)
    head = utf(job["cluster"]) + struct.pack(">i", 0) + utf(job["topic"])
    data = (copy / "_metadata").read_bytes()
    assert data.count(head + struct.pack(">i", 0)) == 1
    (copy / "_metadata").write_bytes(data.replace(head + struct.pack(">i", 0), head + struct.pack(">i", 7)))
    jar = tmp_path / "job.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    report = run_guard(str(copy), jar, None, None, Progress())
    assert not report.safe
    assert [(f.kind, f.severity, f.topic, f.partition) for f in report.findings] == [
        (LOST_IN_RECOVERY, ERROR, job["topic"], 0)
    ]
