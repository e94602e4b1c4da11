"""The savepoint checks on the splittable-DoFn read's residuals (fixtures/beam_sdf/): the assignment audit, and
the comparison of the savepoints before and after the restore. No Spark is involved.

The restrictions are the fixtures' expected.json (witnessed by the sink): 500 per partition before the restore,
1000 after. A partition held by two residuals is made from the fixture's own decoded values: one of the stale
`sdf_checkpoint` values of partition 0 named by a timer as well, as two keys or two timers would name them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from splitaudit.audit.checks.assignment import PartitionList, check_assignment
from splitaudit.audit.checks.findings import ASSIGNED_TWICE, ERROR, REWIND, UNASSIGNED
from splitaudit.audit.checks.rewind import check_rewind
from splitaudit.audit.checks.savepoint_tables import savepoint_tables, tables_of
from splitaudit.savepoint_view import ReaderSplit, SourceState, inspect_savepoint
from splitaudit.splits import beam_sdf

SDF = Path(__file__).parents[3] / "fixtures" / "beam_sdf"
[BEFORE] = (str(p) for p in (SDF / "heap_before").glob("savepoint-*"))
[AFTER] = (str(p) for p in (SDF / "heap_after").glob("savepoint-*"))
TOPIC = "py-sdf-p2to2-546894f9"  # fixtures/beam_sdf/*/expected.json
STAGE = "86c03fec004227a66caab6e4b0579673"  # the executable stage running ReadFromKafkaDoFn (no uid)


def _listed(partitions: int) -> PartitionList:
    return PartitionList(frozenset((TOPIC, p) for p in range(partitions)), f"--partitions {partitions}")


def test_each_partition_is_held_once_by_the_residual_its_timer_resumes() -> None:
    check = check_assignment(savepoint_tables(AFTER), _listed(4))
    assert check.findings == ()
    (matrix,) = check.matrices
    assert (matrix.operator, matrix.subtasks) == (STAGE, 2)
    assert [
        (p.partition, p.status, [(h.subtask, h.split_id, h.next_offset) for h in p.holders]) for p in matrix.partitions
    ] == [
        (0, "ok", [(1, "sdf_checkpoint:4:0", 1000)]),
        (1, "ok", [(1, "sdf_checkpoint:3:1", 1000)]),
        (2, "ok", [(0, "sdf_checkpoint:4:0", 1000)]),
        (3, "ok", [(0, "sdf_checkpoint:3:1", 1000)]),
    ]


def test_a_partition_no_residual_holds_is_missing() -> None:
    check = check_assignment(savepoint_tables(BEFORE), _listed(5))
    assert [(f.kind, f.severity, f.topic, f.partition, f.count) for f in check.findings] == [
        (UNASSIGNED, ERROR, TOPIC, 4, 0)
    ]


def test_a_partition_two_residuals_resume_is_held_twice() -> None:
    view = inspect_savepoint(BEFORE)
    [stage] = [operator for operator in view.operators if operator.source is not None]
    assert stage.source is not None
    splits = list(stage.source.reader_splits)
    first = splits[0].state
    assert isinstance(first, beam_sdf.KafkaSdfResidual)
    assert first.resumed is not None
    stale = first.superseded[0]  # sdf_checkpoint:1:1 of partition 0, at 500 too
    checkpoints = [first.resumed, *first.superseded]
    timers = {(TOPIC, 0): {first.resumed.state, stale.state}}
    twice = beam_sdf.kafka_sdf_residuals(checkpoints, timers)
    assert [(r.resumed.state, r.resumed.subtask) for r in twice if r.resumed] == [
        ("sdf_checkpoint:1:1", 1),
        ("sdf_checkpoint:5:1", 1),
    ]
    source = SourceState(tuple(ReaderSplit(1, None, r) for r in twice) + tuple(splits[1:]), None)
    operators = tuple(dataclasses.replace(op, source=source) if op is stage else op for op in view.operators)
    check = check_assignment(tables_of(dataclasses.replace(view, operators=operators)), _listed(4))
    assert [(f.kind, f.severity, f.partition, f.count) for f in check.findings] == [(ASSIGNED_TWICE, ERROR, 0, 2)]


def test_the_restore_moved_every_partition_forward() -> None:
    assert check_rewind(savepoint_tables(BEFORE), savepoint_tables(AFTER)) == ()


def test_the_later_savepoint_given_first_is_a_rewind_of_every_partition() -> None:
    findings = check_rewind(savepoint_tables(AFTER), savepoint_tables(BEFORE))
    assert [(f.kind, f.severity, f.topic, f.partition, f.count) for f in findings] == [
        (REWIND, ERROR, TOPIC, p, 500) for p in range(4)
    ]
    assert all("next offset 1000 in checkpoint 8, 500 in checkpoint 5" in f.detail for f in findings)
