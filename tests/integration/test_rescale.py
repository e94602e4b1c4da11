"""Restores at another parallelism: the reference job savepointed at one parallelism and restored at another.

Each run: 4 partitions, 2,000 records before the savepoint and 2,000 after (500 per partition each time), the
first job at parallelism K, the restored one at N. Beam's FlinkSource splits the Kafka source into as many splits
as the job's parallelism (`KafkaUnboundedSource.split` rounds up to a divisor of the partition count: 2 → {0, 2},
{1, 3}; 3 or 4 → one partition each), and Flink hands the old readers' splits to the new subtasks in contiguous
runs (`RoundRobinOperatorStateRepartitioner`): 2 → 1 gives subtask 0 both; 2 → 3 gives subtasks 0 and 1 one each
and subtask 2 none; 4 → 2 gives each subtask two.

- The patched 2.62.0 and Beam 2.70.0 (fixed upstream) restore their splits and never split the source again:
  every offset exactly once in every direction, the audit clean.
- Stock 2.62.0 also splits the source again at the new parallelism, and every fresh split starts at the consumer
  group's committed offsets (500): every partition's second 500 records read by two readers of the restored job.
  The savepoint after shows it where a fresh split and a restored one with different partitions survive in the
  reader's state (it keeps one reader per split index).

`make test` runs the stock 2 → 1 restore; `make rescale` runs it and the others (marker `rescale`): every direction
with every build, Beam 2.70.0's jar from `splitaudit setup --matrix`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.audit.checks.findings import ASSIGNED_TWICE, DOUBLE_ASSIGNMENT
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import ScenarioSettings, pipeline_jar, run_restore_scenario
from splitaudit_lab.scenario.results import ScenarioReport
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration

RECORDS = 2_000  # per batch: 500 per partition before the savepoint, 500 after
PARTITIONS = 4
PER_PARTITION = 2 * RECORDS // PARTITIONS
DIRECTIONS = ((2, 1), (2, 3), (4, 2))
BUILDS = {"stock": ("stock", "2.62.0"), "patched": ("patched", "2.62.0"), "2.70.0": ("stock", "2.70.0")}
# Partitions the stock build's savepoint after the restore holds in two splits: the fresh split of index 0 (all
# four partitions at 2 → 1; {0, 2} at 4 → 2) replaces the restored split 0 in its subtask's reader map, while
# restored splits of other indices with some of the same partitions stay. At 2 → 3 every fresh split replaces
# the restored one of its index, so the state holds each partition once.
MAKE_TEST = ("stock", 2, 1)  # the one restore `make test` runs; `make rescale` runs it and the others
STOCK_HELD_TWICE = {(2, 1): (1, 3), (2, 3): (), (4, 2): (1, 2, 3)}


def _rescale(stack: Stack, run_dir: Path, build: str, before: int, after: int) -> ScenarioReport:
    variant, release = BUILDS[build]
    settings = ScenarioSettings(partitions=PARTITIONS, records=RECORDS, parallelism=before, restore_parallelism=after)
    name = f"{build}-{before}-to-{after}"
    return run_restore_scenario(stack, run_dir / name, pipeline_jar(variant, release), name, Progress(), settings)


def _rows(report: ScenarioReport) -> list[tuple[int, int, int, int, int, int]]:
    return [
        (p.partition, p.expected_records, p.sink_rows, p.double_read_offsets, p.replayed_offsets, p.missing_offsets)
        for p in report.partitions
    ]


def _check(report: ScenarioReport, build: str, before: int, after: int) -> None:
    assert (report.parallelism, report.restore_parallelism) == (before, after)
    findings = [(f.kind, f.partition, f.count, f.offset_ranges) for f in report.audit.findings]
    if build == "stock":
        # The fresh splits start at the group's committed offsets, 500: offsets 500..999 of every partition are
        # read by a restored reader and a fresh one, within the restored job.
        assert _rows(report) == [(p, PER_PARTITION, 1_500, 500, 0, 0) for p in range(PARTITIONS)], _rows(report)
        twice = STOCK_HELD_TWICE[before, after]
        assert findings == [(ASSIGNED_TWICE, p, 2, ()) for p in twice] + [
            (DOUBLE_ASSIGNMENT, p, 500, ((500, 999),)) for p in range(PARTITIONS)
        ], findings
        assert [partition for _, partition in report.double_assigned] == [0, 1, 2, 3]
        assert report.audit.exit_code == 1
    else:
        assert _rows(report) == [(p, PER_PARTITION, PER_PARTITION, 0, 0, 0) for p in range(PARTITIONS)], _rows(report)
        assert findings == [], findings
        assert report.audit.exit_code == 0
    # The savepoint after the restore is of the new parallelism, each partition's next offset at its end.
    (matrix,) = report.audit.assignment
    assert matrix.subtasks == after
    offsets = sorted({(row.partition, h.next_offset) for row in matrix.partitions for h in row.holders})
    assert offsets == [(p, PER_PARTITION) for p in range(PARTITIONS)], offsets


def test_stock_restore_at_lower_parallelism_reads_twice(stack: Stack, tmp_path: Path) -> None:
    _check(_rescale(stack, tmp_path, "stock", 2, 1), "stock", 2, 1)


@pytest.mark.rescale
@pytest.mark.parametrize(
    ("build", "before", "after"),
    [(build, before, after) for before, after in DIRECTIONS for build in BUILDS if (build, before, after) != MAKE_TEST],
    ids=lambda value: str(value),
)
def test_rescale_restore(stack: Stack, tmp_path: Path, build: str, before: int, after: int) -> None:
    _check(_rescale(stack, tmp_path, build, before, after), build, before, after)
