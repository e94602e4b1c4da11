"""The real DynamicKafkaSource savepoints of fixtures/dynamic_kafka/ (DynamicKafkaLineageJob, connector 3.3.0-1.19,
Flink 1.19.3; fixtures/generate_dynamic_kafka.py) read to exactly what their expected.json states: every partition
held by one reader with its cluster and next offset, the enumerator's streams and per-cluster state; and the
guard's FLINK-40469 rule on that real state, clean as taken and with a reader's splits dropped as the recovery
window drops them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from splitaudit.audit.checks.findings import ERROR
from splitaudit.audit.checks.savepoint_tables import SavepointTables, tables_of
from splitaudit.guard.dynamic_kafka import LOST_IN_RECOVERY, recovery_window_losses
from splitaudit.savepoint_view import inspect_savepoint
from tests.unit.conftest import FIXTURES

CASE = FIXTURES / "dynamic_kafka" / "1.19.3-dynamic-kafka-3.3.0-1.19"
EXPECTED: dict[str, Any] = json.loads((CASE / "expected.json").read_text())
JOB = EXPECTED["job"]


def _tables(snapshot: str) -> SavepointTables:
    return tables_of(inspect_savepoint(str(CASE / EXPECTED[snapshot]["snapshot_dir"])))


def _clusters(expected: dict[str, Any], snapshot: str) -> dict[str, tuple[str, dict[str, int]]]:
    """Per cluster id: its bootstrap servers and the next offset of each partition at `snapshot`, from a one-cluster
    run's `expected.json` (`cluster`, `bootstrap_servers`, offsets per partition) or a run of several (`clusters`,
    offsets per cluster and partition)."""
    job = expected["job"]
    offsets = expected[snapshot]["next_offsets"]
    if "clusters" in job:
        return {cluster: (bootstrap, offsets[cluster]) for cluster, bootstrap in job["clusters"].items()}
    return {job["cluster"]: (job["bootstrap_servers"], offsets)}


def check_dynamic_kafka_fixture(folder: Path, expected: dict[str, Any]) -> None:
    """Both savepoints: each partition of each cluster held once, with its cluster and the next offset the records
    produced before it give; each cluster's enumerator names every partition assigned; the stream's metadata (a
    stream per topic, on every cluster)."""
    job = expected["job"]
    partitions = range(job["partitions"])
    for snapshot in ("sp0", "sp1"):
        clusters = _clusters(expected, snapshot)
        view = inspect_savepoint(str(folder / expected[snapshot]["snapshot_dir"]))
        [(operator_id, source)] = [(op.operator_id, op.source) for op in view.operators if op.source is not None]
        assert operator_id == job["source_operator_id"]
        rows = [row for split in source.reader_splits for row in split.state.partition_rows()]
        held = sorted((r.split_type, r.cluster, r.topic, r.partition, r.next_offset, r.stopping_offset) for r in rows)
        assert held == sorted(
            ("dynamic_kafka", cluster, job["topic"], p, offsets[str(p)], None)
            for cluster, (_, offsets) in clusters.items()
            for p in partitions
        )
        assert source.enumerator is not None
        state = source.enumerator.state.to_json()
        assert state["version"] == 1  # DynamicKafkaSourceEnumStateSerializer VERSION_1 (connector 3.3.0)
        assert state["streams"] == [
            {
                "stream_id": job["topic"],  # a stream per topic, on every cluster the metadata service names
                "clusters": [
                    {
                        "cluster": cluster,
                        "topics": [job["topic"]],
                        "properties": {"bootstrap.servers": bootstrap},
                        "starting_offsets_initializer": None,
                        "stopping_offsets_initializer": None,
                    }
                    for cluster, (bootstrap, _) in sorted(clusters.items())
                ],
            }
        ]
        assert state["kafka_enum_version"] == 2  # KafkaSourceEnumStateSerializer CURRENT_VERSION in 3.3.0
        assert state["clusters"] == [
            {
                "cluster": cluster,
                "version": 2,
                "partitions": [
                    {"topic": job["topic"], "partition": p, "status": "ASSIGNED", "split": None} for p in partitions
                ],
                "initial_discovery_finished": True,
            }
            for cluster in sorted(clusters)
        ]


def test_the_fixture_decodes_to_its_expected_values() -> None:
    check_dynamic_kafka_fixture(CASE, EXPECTED)


def test_the_tables_carry_each_partition_with_its_cluster() -> None:
    tables = _tables("sp0")
    assert sorted((r["cluster"], r["split_id"], r["next_offset"]) for r in tables.splits) == [
        (JOB["cluster"], f"{JOB['cluster']}-{JOB['topic']}-{p}", 100) for p in range(JOB["partitions"])
    ]
    assert {(r["cluster"], r["status"]) for r in tables.enumerator} == {(JOB["cluster"], "assigned")}


def test_the_guard_rule_finds_nothing_lost_in_the_real_savepoints() -> None:
    assert recovery_window_losses(_tables("sp0")) == ()
    assert recovery_window_losses(_tables("sp1")) == ()


def test_the_guard_rule_names_the_partitions_of_a_reader_whose_splits_the_recovery_window_dropped() -> None:
    # FLINK-40469's checkpoint: the readers' state empty, the cluster's KafkaSourceEnumState still marking the
    # partitions assigned. Here the real SP0 with subtask 1's splits removed (it held partitions 0 and 2).
    tables = _tables("sp0")
    dropped = [r for r in tables.splits if r["subtask"] == 1]
    assert sorted(r["partition"] for r in dropped) == [0, 2]
    bad = dataclasses.replace(tables, splits=tuple(r for r in tables.splits if r["subtask"] != 1))
    losses = recovery_window_losses(bad)
    assert [(f.kind, f.severity, f.topic, f.partition, f.count) for f in losses] == [
        (LOST_IN_RECOVERY, ERROR, JOB["topic"], p, 0) for p in (0, 2)
    ]
    assert all(f"cluster {JOB['cluster']}'s KafkaSourceEnumState" in f.detail for f in losses)
