"""The assignment check: in one savepoint, every partition of the topic held by exactly one split.

Kafka's VerifiableConsumer invariant, applied to the source's state: across all reader subtasks and the
splits the enumerator still holds back (pending), each (topic, partition) must have exactly one holder. Two
readers holding it read it twice after a restore; a reader holding it while it is also pending gets it twice
once the enumerator hands it out; a partition nobody holds is not read at all.

Which partitions the topic has is not in the savepoint; it comes from a `PartitionList` the caller gets from
Kafka's admin API, the user (`--partitions`), the sink, or — for Flink's KafkaSource — the enumerator's own
list of known partitions. The matrix records which one was used.

A DynamicKafkaSource names the Kafka cluster of every split: a partition is a (cluster, topic, partition), and the
same topic read from two clusters (a migration reads it so) is two partitions with a holder each, not one held
twice. A `PartitionList` names no cluster: it stands for a source's partitions only when the source reads one
cluster; a source reading several is judged on its enumerator's per-cluster list, and a note says so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from splitaudit.audit.checks.findings import (
    ASSIGNED_AND_PENDING,
    ASSIGNED_TWICE,
    ERROR,
    UNASSIGNED,
    AssignmentMatrix,
    Finding,
    Holder,
    PartitionAssignment,
)
from splitaudit.audit.checks.savepoint_tables import Row, SavepointTables, partition_rows
from splitaudit.splits.model import ASSIGNED, PENDING

ENUMERATOR_SOURCE = "the enumerator checkpoint"
CLUSTERS_SOURCE = (
    "the enumerator checkpoint (the source reads several Kafka clusters; the listed partitions name none, so they "
    "are not applied to it)"
)
PartitionKey = tuple[str | None, str, int]  # (cluster, topic, partition); the cluster None but for DynamicKafkaSource
SAVEPOINT_SOURCE = "the savepoint (held partitions only: give --bootstrap or --partitions to find missing ones)"


@dataclass(frozen=True)
class PartitionList:
    """The partitions the source topics really have, and where the list came from (shown in the report)."""

    partitions: frozenset[tuple[str, int]]
    source: str


@dataclass(frozen=True)
class AssignmentCheck:
    """Findings of the assignment check and, per source operator, the matrix they were judged on."""

    findings: tuple[Finding, ...]
    matrices: tuple[AssignmentMatrix, ...]

    @property
    def notes(self) -> list[str]:
        """Where each source's partitions came from, and the partitions a source reads from several Kafka clusters
        (a DynamicKafkaSource's): what keys by topic and partition alone cannot tell those clusters apart."""
        notes = [f"partitions of {m.operator} from {m.partitions_from}" for m in self.matrices]
        for matrix in self.matrices:
            clusters: dict[tuple[str, int], list[str]] = defaultdict(list)
            for row in matrix.partitions:
                if row.cluster is not None:
                    clusters[row.topic, row.partition].append(row.cluster)
            shared = {tp: names for tp, names in clusters.items() if len(names) > 1}
            if shared:
                named = ", ".join(f"{t}/{p} ({' and '.join(names)})" for (t, p), names in sorted(shared.items()))
                notes.append(
                    f"source {matrix.operator} reads {len(shared)} partitions from several Kafka clusters: {named}; "
                    "each cluster's is judged apart in the assignment, but a restore's position is the lowest of "
                    "them, --bootstrap is one cluster and the sink's lineage names none, so the offsets, rewinds "
                    "and the sink's records of these partitions count the clusters together"
                )
        return notes


def check_assignment(savepoint: SavepointTables, topic_partitions: PartitionList | None = None) -> AssignmentCheck:
    """Flag partitions held twice, held and pending, or held by nobody, per source operator of `savepoint`."""
    operators = {r["operator_id"]: r for r in savepoint.operators}
    holders: dict[str, dict[PartitionKey, list[Holder]]] = defaultdict(lambda: defaultdict(list))
    known: dict[str, set[PartitionKey]] = defaultdict(set)  # what each enumerator says the topic has
    assigned: set[PartitionKey] = set()  # partitions an enumerator has handed to a reader
    for r in partition_rows(savepoint.splits):
        holders[r["operator_id"]][_key(r)].append(_holder(r, r["subtask"]))
    for r in partition_rows(savepoint.enumerator):
        known[r["operator_id"]].add(_key(r))
        if r["status"] == PENDING:
            holders[r["operator_id"]][_key(r)].append(_holder(r, None))
        elif r["status"] == ASSIGNED:
            assigned.add(_key(r))
    sources = sorted(holders.keys() | known.keys())
    findings: list[Finding] = []
    matrices = []
    for operator in sources:
        held = holders[operator]
        keys = held.keys() | known[operator]
        topics = {topic for _, topic, _ in keys}
        clusters = {cluster for cluster, _, _ in keys}
        expected: set[PartitionKey]
        if topic_partitions is not None and len(clusters) > 1:
            expected, source = known[operator], CLUSTERS_SOURCE
        elif topic_partitions is not None and (topics or len(sources) == 1):
            # The listed partitions of the topics this source reads (all of them when it holds none at all).
            cluster = next(iter(clusters), None)
            expected = {(cluster, *tp) for tp in topic_partitions.partitions if not topics or tp[0] in topics}
            source = topic_partitions.source
        elif known[operator]:
            expected, source = known[operator], ENUMERATOR_SOURCE
        else:
            expected, source = set(), SAVEPOINT_SOURCE
        rows = tuple(
            PartitionAssignment(topic, partition, tuple(held.get((cluster, topic, partition), ())), cluster)
            for cluster, topic, partition in sorted(held.keys() | expected, key=_order)
        )
        name = operators[operator]["operator_uid"] or operator
        findings += [
            f for row in rows if (f := _finding(row, name, (row.cluster, row.topic, row.partition) in assigned))
        ]
        matrices.append(AssignmentMatrix(name, operators[operator]["parallelism"], source, rows))
    return AssignmentCheck(tuple(findings), tuple(matrices))


def _key(row: Row) -> PartitionKey:
    return row["cluster"], row["topic"], row["partition"]


def _order(key: PartitionKey) -> tuple[str, int, str]:
    """Topic, partition, then cluster: one topic's partitions together, whichever clusters they come from."""
    cluster, topic, partition = key
    return topic, partition, cluster or ""


def _holder(row: Row, subtask: int | None) -> Holder:
    return Holder(subtask, row["split_id"] or "", row["next_offset"])


def _finding(row: PartitionAssignment, operator: str, enumerator_assigned: bool) -> Finding | None:
    readers = [h for h in row.holders if h.subtask is not None]
    pending = [h for h in row.holders if h.subtask is None]
    sample = tuple(_holder_json(h) for h in row.holders)
    where = f"source {operator}: " + ("" if row.cluster is None else f"cluster {row.cluster}: ")
    if len(readers) > 1:
        detail = where + "held by " + " and ".join(_describe(h) for h in readers) + ": read twice after a restore"
        return Finding(ASSIGNED_TWICE, ERROR, row.topic, row.partition, len(row.holders), sample=sample, detail=detail)
    if readers and pending:
        detail = where + f"held by {_describe(readers[0])} and pending in the enumerator: it will be read twice"
        return Finding(
            ASSIGNED_AND_PENDING, ERROR, row.topic, row.partition, len(row.holders), sample=sample, detail=detail
        )
    if not row.holders:
        detail = where + "in the topic but held by no reader and not pending: nothing will read it"
        if enumerator_assigned:
            detail += " (the enumerator counts it as assigned, so it will not hand it out again)"
        return Finding(UNASSIGNED, ERROR, row.topic, row.partition, 0, detail=detail)
    return None


def _describe(holder: Holder) -> str:
    where = "the enumerator (pending)" if holder.subtask is None else f"subtask {holder.subtask}"
    offset = "" if holder.next_offset is None else f", next offset {holder.next_offset}"
    return f"{where} (split {holder.split_id or '?'}{offset})"


def _holder_json(holder: Holder) -> dict[str, Any]:
    return {"subtask": holder.subtask, "split_id": holder.split_id, "next_offset": holder.next_offset}
