"""Partitions added while the job was down: the topic grows from 4 to 6 partitions between the savepoint and
the restore, and each build's restored job is judged from its sink and its savepoints.

Each run: 2,000 records before the savepoint (500 per partition) and 2,000 after, over the 6 partitions the topic
has then: record i goes to partition i % 6, so records 2,000..3,999 put 334 in partitions 2 and 3 and 333 in
each other one.

- splitaudit's patch (partition discovery on restore): the restored enumerator finds 4 and 5 covered by no split
  and assigns them from earliest: every offset of partitions 0-5 exactly once; the audit sees 4 and 5 held after
  the restore (`partition_new`, info) and nothing else.
- Beam 2.70.0 (the upstream fix) keeps its restored splits and never looks at the topic again: 4 and 5 are never
  read (`partition_unassigned`, error).
- Stock 2.62.0 splits the source again on restore (beam#31313): its fresh splits read all six partitions from the
  group's committed offsets, so 0-3's new records are read twice and 4 and 5 once.

`make test` runs the patched build; `make discovery` all three (marker `discovery`; Beam 2.70.0's jar from
`splitaudit setup --matrix`), the stock jar put through `splitaudit patch-jar`, and `splitaudit demo
--add-partitions 2` showing the three builds side by side.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from splitaudit.audit.checks.findings import DOUBLE_ASSIGNMENT, NEW_PARTITION, UNASSIGNED
from splitaudit.patch.jar import patch_jar
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import ScenarioSettings, pipeline_jar, run_restore_scenario
from splitaudit_lab.scenario.results import ScenarioReport
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration

SETTINGS = ScenarioSettings(partitions=4, records=2_000, parallelism=2, added_partitions=2)
# Per partition: records before the savepoint, after it.
BEFORE = {0: 500, 1: 500, 2: 500, 3: 500, 4: 0, 5: 0}
AFTER = {0: 333, 1: 333, 2: 334, 3: 334, 4: 333, 5: 333}


def _grown(stack: Stack, run_dir: Path, variant: str, release: str) -> ScenarioReport:
    name = f"grown-{variant}-{release}"
    return run_restore_scenario(stack, run_dir / name, pipeline_jar(variant, release), name, Progress(), SETTINGS)


def _rows(report: ScenarioReport) -> list[tuple[int, int, int, int, int]]:
    return [
        (p.partition, p.expected_records, p.sink_rows, p.double_read_offsets, p.missing_offsets)
        for p in report.partitions
    ]


def _assert_reads_added_partitions_exactly_once(report: ScenarioReport) -> None:
    assert _rows(report) == [(p, BEFORE[p] + AFTER[p], BEFORE[p] + AFTER[p], 0, 0) for p in range(6)], _rows(report)
    findings = [(f.kind, f.partition, f.count) for f in report.audit.findings]
    assert findings == [(NEW_PARTITION, 4, 0), (NEW_PARTITION, 5, 0)], findings
    assert report.audit.exit_code == 0
    # The savepoint after the restore holds every partition once, at its end.
    (matrix,) = report.audit.assignment
    offsets = sorted((row.partition, h.next_offset) for row in matrix.partitions for h in row.holders)
    assert offsets == [(p, BEFORE[p] + AFTER[p]) for p in range(6)], offsets


def test_patched_restore_reads_added_partitions_exactly_once(stack: Stack, tmp_path: Path) -> None:
    _assert_reads_added_partitions_exactly_once(_grown(stack, tmp_path, "patched", "2.62.0"))


@pytest.mark.discovery
def test_patch_jar_of_the_stock_jar_reads_added_partitions_exactly_once(stack: Stack, tmp_path: Path) -> None:
    # The same discovery through `splitaudit patch-jar`: four classes replaced in the released job jar, three added.
    jar = tmp_path / "stock-patch-jar.jar"
    report = patch_jar(pipeline_jar("stock", "2.62.0"), jar, force=False)
    assert (len(report.replaced), len(report.added)) == (4, 3)
    run = run_restore_scenario(stack, tmp_path / "grown-patch-jar", jar, "patch-jar", Progress(), SETTINGS)
    _assert_reads_added_partitions_exactly_once(run)


@pytest.mark.discovery
def test_upstream_fix_never_reads_added_partitions(stack: Stack, tmp_path: Path) -> None:
    report = _grown(stack, tmp_path, "stock", "2.70.0")
    expected = [(p, BEFORE[p] + AFTER[p], BEFORE[p] + AFTER[p], 0, 0) for p in range(4)]
    assert _rows(report) == [*expected, (4, 333, 0, 0, 333), (5, 333, 0, 0, 333)], _rows(report)
    findings = [(f.kind, f.partition) for f in report.audit.findings]
    assert findings == [(UNASSIGNED, 4), (UNASSIGNED, 5)], findings
    assert report.audit.exit_code == 1


@pytest.mark.discovery
def test_stock_restore_reads_old_partitions_twice_and_added_ones_once(stack: Stack, tmp_path: Path) -> None:
    report = _grown(stack, tmp_path, "stock", "2.62.0")
    twice = [(p, BEFORE[p] + AFTER[p], BEFORE[p] + 2 * AFTER[p], AFTER[p], 0) for p in range(4)]
    assert _rows(report) == [*twice, (4, 333, 333, 0, 0), (5, 333, 333, 0, 0)], _rows(report)
    double = [(f.partition, f.offset_ranges) for f in report.audit.findings if f.kind == DOUBLE_ASSIGNMENT]
    assert double == [(p, ((500, 500 + AFTER[p] - 1),)) for p in range(4)], double
    assert report.audit.exit_code == 1


@pytest.mark.discovery
def test_demo_shows_the_three_builds_side_by_side(tmp_path: Path) -> None:
    run_dir = tmp_path / "demo"
    command = ["demo", "--workdir", str(run_dir), "--records", "2000", "--add-partitions", "2"]
    result = subprocess.run(
        [sys.executable, "-m", "splitaudit", "--json", *command], capture_output=True, text=True, timeout=1800
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["as_expected"], report["added_partitions"]) == (True, 2)

    def rows(side: str) -> list[tuple[int, int, int, int, int]]:
        return [
            (p["partition"], p["expected_records"], p["sink_rows"], p["double_read_offsets"], p["missing_offsets"])
            for p in report[side]["partitions"]
        ]

    once = [(p, BEFORE[p] + AFTER[p], BEFORE[p] + AFTER[p], 0, 0) for p in range(6)]
    assert rows("stock") == [
        *((p, BEFORE[p] + AFTER[p], BEFORE[p] + 2 * AFTER[p], AFTER[p], 0) for p in range(4)),
        *once[4:],
    ]
    assert rows("upstream_fix") == [*once[:4], (4, 333, 0, 0, 333), (5, 333, 0, 0, 333)]
    assert rows("patched") == once
    assert report["upstream_fix"]["run_dir"] == str(run_dir / "beam-2.70.0")
    findings = {
        side: [(f["kind"], f["partition"]) for f in report[side]["audit"]["findings"]]
        for side in ("stock", "upstream_fix", "patched")
    }
    assert findings == {
        # Stock's fresh splits also hold 4 and 5 after the restore.
        "stock": [(NEW_PARTITION, 4), (NEW_PARTITION, 5), *((DOUBLE_ASSIGNMENT, p) for p in range(4))],
        "upstream_fix": [(UNASSIGNED, 4), (UNASSIGNED, 5)],
        "patched": [(NEW_PARTITION, 4), (NEW_PARTITION, 5)],
    }
