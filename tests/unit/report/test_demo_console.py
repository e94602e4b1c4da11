"""The demo with partitions added while the job was down: what it calls as expected, and its three-way table.

The reports are built from the per-partition figures of a real run (`tests/integration/test_discovery.py`: 4
partitions grown to 6, 500 records each before the savepoint, 2,000 over six after it).
"""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from splitaudit.audit.checks.findings import (
    DOUBLE_ASSIGNMENT,
    ERROR,
    INFO,
    NEW_PARTITION,
    UNASSIGNED,
    Finding,
    Findings,
    Summary,
)
from splitaudit_lab.report.console import LabConsoleOutput
from splitaudit_lab.scenario.results import DemoReport, PartitionCounts, ScenarioReport

# Each run creates topics of its own.
STOCK, FIXED, PATCHED = "restore-stock-0a1b2c3d", "restore-beam-2.70.0-4e5f6a7b", "restore-patched-8c9d0e1f"
EXPECTED = {0: 833, 1: 833, 2: 834, 3: 834, 4: 333, 5: 333}
AFTER = {0: 333, 1: 333, 2: 334, 3: 334}  # records of 0-3 produced after the savepoint


def _side(variant: str, topic: str, counts: list[PartitionCounts], findings: tuple[Finding, ...]) -> ScenarioReport:
    return ScenarioReport(
        variant=variant,
        restart="savepoint",
        continuous=False,
        parallelism=2,
        restore_parallelism=2,
        jar=f"{variant}.jar",
        run_dir=f"/runs/r/{variant}",
        topics=(topic,),
        job_id_before="j0",
        job_id_after="j1",
        savepoint_before="/sp0",
        savepoint_after="/sp1",
        sink_path=f"/runs/r/{variant}/sink",
        sink_format="json",
        expected_records=4_000,
        records_per_second=1_000.0,
        partitions=tuple(counts),
        steps=(),
        audit=Findings(summary=Summary(), findings=findings),
    )


def _new(topic: str) -> tuple[Finding, ...]:
    return Finding(NEW_PARTITION, INFO, topic, 4, 0), Finding(NEW_PARTITION, INFO, topic, 5, 0)


def _stock() -> ScenarioReport:
    counts = [PartitionCounts(STOCK, p, n, n + AFTER.get(p, 0), AFTER.get(p, 0), 0, AFTER.get(p, 0), 0)
              for p, n in EXPECTED.items()]  # fmt: skip
    twice = tuple(Finding(DOUBLE_ASSIGNMENT, ERROR, STOCK, p, n, ((500, 499 + n),)) for p, n in AFTER.items())
    return _side("stock", STOCK, counts, (*_new(STOCK), *twice))


def _upstream_fix() -> ScenarioReport:
    counts = [PartitionCounts(FIXED, p, n, 0 if p > 3 else n, 0, n if p > 3 else 0, 0, 0) for p, n in EXPECTED.items()]
    unread = (Finding(UNASSIGNED, ERROR, FIXED, 4, 0), Finding(UNASSIGNED, ERROR, FIXED, 5, 0))
    return _side("beam-2.70.0", FIXED, counts, unread)


def _patched() -> ScenarioReport:
    counts = [PartitionCounts(PATCHED, p, n, n, 0, 0, 0, 0) for p, n in EXPECTED.items()]
    return _side("patched", PATCHED, counts, _new(PATCHED))


def _demo(stock: ScenarioReport, upstream: ScenarioReport | None, patched: ScenarioReport) -> DemoReport:
    return DemoReport("/runs/r", 300.0, stock, patched, added_partitions=2, upstream_fix=upstream)


def test_the_three_runs_of_a_real_grown_topic_are_as_expected() -> None:
    demo = _demo(_stock(), _upstream_fix(), _patched())
    assert demo.added(demo.stock) == {(STOCK, 4), (STOCK, 5)}
    assert demo.added(demo.patched) == {(PATCHED, 4), (PATCHED, 5)}
    assert [side.variant for side in demo.sides] == ["stock", "beam-2.70.0", "patched"]
    assert demo.as_expected


def test_a_patched_run_that_left_an_added_partition_unread_is_not_as_expected() -> None:
    patched = _patched()
    counts = list(patched.partitions)
    counts[5] = PartitionCounts(PATCHED, 5, 333, 0, 0, 333, 0, 0)
    unread = (Finding(NEW_PARTITION, INFO, PATCHED, 4, 0), Finding(UNASSIGNED, ERROR, PATCHED, 5, 0))
    broken = replace(patched, partitions=tuple(counts), audit=Findings(summary=Summary(), findings=unread))
    assert not _demo(_stock(), _upstream_fix(), broken).as_expected


def test_an_upstream_fix_that_read_the_added_partitions_is_not_as_expected() -> None:
    clean = replace(_upstream_fix(), audit=Findings(summary=Summary(), findings=()))
    assert not _demo(_stock(), clean, _patched()).as_expected
    assert not _demo(_stock(), None, _patched()).as_expected


def test_a_stock_run_that_read_nothing_twice_is_not_as_expected() -> None:
    assert not _demo(_patched(), _upstream_fix(), _patched()).as_expected


def test_the_console_shows_the_three_runs_side_by_side_in_80_columns() -> None:
    output = LabConsoleOutput()
    output.console = Console(file=io.StringIO(), width=80, markup=False, emoji=False, highlight=False)
    output.demo_report(_demo(_stock(), _upstream_fix(), _patched()))
    text = output.console.file.getvalue()  # type: ignore[attr-defined]
    words = " ".join(text.split())
    assert "2 partitions added while the job was down: stock Beam 2.62.0 vs Beam 2.70.0 (upstream fix) vs" in words
    header = [line for line in text.splitlines() if line.startswith("┃")]
    assert header[0].replace("┃", " ").split() == ["stock", "beam-2.70.0", "patched"]
    assert header[1].replace("┃", " ").split() == ["partition", "expected", *["rows/dup/missing"] * 3]
    rows = [line.replace("│", " ").replace("/", " ").split() for line in text.splitlines() if line.startswith("│ ")]
    # partition, expected, then rows / dup rows / missing of stock, 2.70.0, patched
    assert [[int(n) for n in row] for row in rows] == [
        [0, 833, 1166, 333, 0, 833, 0, 0, 833, 0, 0],
        [1, 833, 1166, 333, 0, 833, 0, 0, 833, 0, 0],
        [2, 834, 1168, 334, 0, 834, 0, 0, 834, 0, 0],
        [3, 834, 1168, 334, 0, 834, 0, 0, 834, 0, 0],
        [4, 333, 333, 0, 0, 0, 0, 333, 333, 0, 0],
        [5, 333, 333, 0, 0, 0, 0, 333, 333, 0, 0],
    ]
    assert "stock, the auditor says: double assignment of partitions 0, 1, 2, 3 (1334 records read twice)" in words
    assert "beam-2.70.0, the auditor says: partitions never read 4, 5 (666 records missing)" in words
    assert "patched, the auditor says: clean: every offset exactly once; for information: partition_new" in words
    assert "as expected: stock Beam reads the old partitions twice, Beam 2.70.0 never reads the new ones" in words
