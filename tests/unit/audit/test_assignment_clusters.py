"""The assignment check on a DynamicKafkaSource reading the same topic from two Kafka clusters (a migration reads
it so): the real savepoints of fixtures/dynamic_kafka/1.19.3-dynamic-kafka-two-clusters/ (written by
fixtures/generate_dynamic_kafka_clusters.py: 2 partitions on each cluster, parallelism 2, 100 records per partition
and cluster before SP0 and 100 more before SP1). Each (cluster, topic, partition) is its own partition: one holder
each is clean, where keying by topic and partition alone made every partition `partition_assigned_twice`."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from splitaudit.audit.checks.assignment import CLUSTERS_SOURCE, ENUMERATOR_SOURCE, PartitionList, check_assignment
from splitaudit.audit.checks.findings import ERROR, UNASSIGNED
from splitaudit.audit.checks.savepoint_tables import SavepointTables, savepoint_tables
from tests.unit.conftest import FIXTURES

CASE = FIXTURES / "dynamic_kafka" / "1.19.3-dynamic-kafka-two-clusters"
EXPECTED: dict[str, Any] = json.loads((CASE / "expected.json").read_text())
TOPIC = EXPECTED["job"]["topic"]
CLUSTERS = sorted(EXPECTED["job"]["clusters"])


def _savepoint(name: str) -> SavepointTables:
    return savepoint_tables(str(CASE / EXPECTED[name]["snapshot_dir"]))


def _rows(tables: SavepointTables, partitions: PartitionList | None = None) -> list[tuple[Any, ...]]:
    (matrix,) = check_assignment(tables, partitions).matrices
    return [
        (row.cluster, row.topic, row.partition, [(h.subtask, h.next_offset) for h in row.holders])
        for row in matrix.partitions
    ]


def test_each_cluster_holds_its_own_partitions_once_in_both_savepoints() -> None:
    for name in ("sp0", "sp1"):
        tables = _savepoint(name)
        check = check_assignment(tables)
        assert check.findings == ()
        assert [m.partitions_from for m in check.matrices] == [ENUMERATOR_SOURCE]
        offsets = EXPECTED[name]["next_offsets"]
        held = [(c, p, offsets[c][str(p)]) for p in range(2) for c in CLUSTERS]
        # the run's readers: subtask 0 holds partition 0 of both clusters, subtask 1 partition 1
        assert _rows(tables) == [(c, TOPIC, p, [(p, offset)]) for c, p, offset in held]


def test_a_partition_list_without_clusters_is_not_applied_to_a_source_of_several() -> None:
    tables = _savepoint("sp0")
    listed = PartitionList(frozenset({(TOPIC, 0), (TOPIC, 1), (TOPIC, 2)}), "Kafka admin API at 127.0.0.1:9092")
    check = check_assignment(tables, listed)
    assert check.findings == ()
    assert [m.partitions_from for m in check.matrices] == [CLUSTERS_SOURCE]
    assert [(c, p) for c, _, p, _ in _rows(tables, listed)] == [(c, p) for p in range(2) for c in CLUSTERS]


def test_the_notes_name_the_partitions_read_from_several_clusters() -> None:
    notes = check_assignment(_savepoint("sp0")).notes
    operator = EXPECTED["job"]["source_operator_id"]  # the uid is not in the savepoint, its hash is
    assert notes[1].startswith(
        f"source {operator} reads 2 partitions from several Kafka clusters: "
        f"{TOPIC}/0 (cluster-a and cluster-b), {TOPIC}/1 (cluster-a and cluster-b); "
    )
    assert len(notes) == 2


def test_one_clusters_split_dropped_is_that_clusters_partition_unassigned() -> None:
    tables = _savepoint("sp1")
    dropped = replace(
        tables, splits=tuple(r for r in tables.splits if (r["cluster"], r["partition"]) != ("cluster-b", 1))
    )
    (finding,) = check_assignment(dropped).findings
    assert (finding.kind, finding.severity, finding.topic, finding.partition, finding.count) == (
        UNASSIGNED,
        ERROR,
        TOPIC,
        1,
        0,
    )
    assert "cluster cluster-b: in the topic but held by no reader" in finding.detail
    assert (finding.detail or "").endswith("so it will not hand it out again)")
