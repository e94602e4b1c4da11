"""The audit's checks of KafkaSource restore failures on hand-made savepoint tables (pure logic; the real runs'
figures are asserted in tests/integration/test_flink_kafka_restore_bugs.py): a removed topic read on
(`removed_topics.py`), bounded splits that ended and a source that did not (`bounded_sources.py`), a log that
ends below the restored offsets (`recreated_topics.py`)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from splitaudit.audit.checks.bounded_sources import (
    BOUNDED_SOURCE_NOT_ENDED,
    BOUNDED_SPLIT_FINISHED,
    explain_finished_bounded,
)
from splitaudit.audit.checks.findings import DROPPED_PARTITION, ERROR, INFO, UNASSIGNED, WARNING, Finding
from splitaudit.audit.checks.recreated_topics import OFFSET_PAST_LOG_END, check_recreated
from splitaudit.audit.checks.removed_topics import REMOVED_TOPIC_READ, check_removed_topics
from splitaudit.audit.checks.rewind import check_rewind
from splitaudit.audit.checks.savepoint_tables import SavepointTables
from splitaudit.audit.checks.tables import SCHEMAS
from splitaudit.clients.kafka import PartitionOffsets

BASE = {"operator_id": "op", "operator_uid": "kafka-source", "operator_name": None, "kind": None}


def _tables(
    checkpoint: int, splits: list[tuple[str, int, int, int | None]], assigned: list[tuple[str, int]]
) -> SavepointTables:
    """A KafkaSource savepoint: reader splits (topic, partition, next offset, stopping offset) and the partitions
    its enumerator names assigned (state version 2: no offsets)."""

    def table(name: str, rows: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
        rows = [BASE | {"checkpoint_id": checkpoint, "split_type": "kafka"} | r for r in rows]
        return tuple(pa.Table.from_pylist(rows, schema=SCHEMAS[name]).to_pylist())

    split_rows = [
        {"subtask": p, "split_id": f"{t}-{p}", "topic": t, "partition": p, "next_offset": n, "stopping_offset": s}
        for t, p, n, s in splits
    ]
    enumerator = [
        {"subtask": None, "status": "assigned", "split_id": f"{t}-{p}", "topic": t, "partition": p, "next_offset": None}
        for t, p in assigned
    ]
    operators = [BASE | {"checkpoint_id": checkpoint, "parallelism": 2, "max_parallelism": 128, "is_source": True,
                         "reader_splits": len(splits)}]  # fmt: skip
    return SavepointTables(f"sp{checkpoint}", checkpoint, table("operators", operators), table("splits", split_rows),
                           table("enumerator", enumerator))  # fmt: skip


BOTH = [("a", 0), ("a", 1), ("b", 0), ("b", 1)]


def test_offsets_of_a_topic_outside_the_subscription_read_between_the_savepoints_are_found() -> None:
    before = _tables(6, [("a", 0, 100, None), ("a", 1, 100, None), ("b", 0, 100, None), ("b", 1, 90, None)], BOTH)
    after = _tables(14, [("a", 0, 200, None), ("a", 1, 200, None), ("b", 0, 200, None), ("b", 1, 90, None)], BOTH)
    (finding,) = check_removed_topics(before, after, ("a",))
    assert (finding.kind, finding.severity, finding.topic, finding.partition, finding.count, finding.offset_ranges) == (
        REMOVED_TOPIC_READ, ERROR, "b", 0, 100, ((100, 199),)
    )  # fmt: skip
    assert "b is not among the restored job's topics (a), yet its split moved from next offset 100 in checkpoint 6 " \
        "to 200 in checkpoint 14" in finding.detail  # fmt: skip
    assert check_removed_topics(before, after, ("a", "b")) == ()


def test_bounded_splits_gone_from_the_readers_are_finished_and_the_source_did_not_end() -> None:
    before = _tables(4, [("a", 0, 100, 200), ("a", 1, 100, 200)], BOTH[:2])
    after = _tables(11, [], BOTH[:2])
    unassigned = [Finding(UNASSIGNED, ERROR, "a", p, 0) for p in (0, 1)]
    explained = explain_finished_bounded(before, after, [*check_rewind(before, after), *unassigned])
    assert [(f.kind, f.severity, f.partition, f.count) for f in explained] == [
        (BOUNDED_SPLIT_FINISHED, INFO, 0, 0),
        (BOUNDED_SPLIT_FINISHED, INFO, 1, 0),
        (BOUNDED_SPLIT_FINISHED, INFO, 0, 0),
        (BOUNDED_SPLIT_FINISHED, INFO, 1, 0),
        (BOUNDED_SOURCE_NOT_ENDED, WARNING, None, 2),
    ]
    assert "its split in sp4 stopped at offset 200 (a bounded source)" in explained[0].detail


def test_an_unbounded_split_gone_stays_dropped() -> None:
    before = _tables(4, [("a", 0, 100, None)], BOTH[:1])
    after = _tables(11, [], BOTH[:1])
    assert [f.kind for f in explain_finished_bounded(before, after, check_rewind(before, after))] == [DROPPED_PARTITION]


def test_a_log_ending_below_the_restored_offset_was_recreated() -> None:
    kafka = {("a", 0): PartitionOffsets(0, 50), ("a", 1): PartitionOffsets(0, 50), ("a", 2): PartitionOffsets(0, 300)}
    findings = check_recreated(kafka, {("a", 0): 100, ("a", 1): 100, ("a", 2): 100}, {("a", 0): 50, ("a", 1): 100})
    assert [(f.kind, f.severity, f.partition, f.count, f.offset_ranges) for f in findings] == [
        (OFFSET_PAST_LOG_END, WARNING, 0, 50, ((0, 49),)),
        (OFFSET_PAST_LOG_END, ERROR, 1, 50, ((0, 49),)),
    ]
    assert findings[0].detail.startswith("the restore resumed at next offset 100, but the log now holds offsets 0..49")
    assert findings[0].detail.endswith("; it read offsets 0..49 of the new log (other records than the same offsets "
                                       "before the restore: this partition's rewind, replay and past-savepoint "
                                       "findings are those)")  # fmt: skip
    assert "still holds it at 100, past the new log: none of the new log's 50 records was read" in findings[1].detail
