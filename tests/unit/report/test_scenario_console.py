"""The scenario's console report of a job reading several topics: one row per (topic, partition), labelled with a
short topic label the title explains, and the verdict naming topic/partition."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from splitaudit.audit.checks.findings import Finding, Findings, PartitionCoverage, Summary
from splitaudit_lab.report.console import LabConsoleOutput
from splitaudit_lab.scenario.results import PartitionCounts, ScenarioReport

ORDERS, PAYMENTS = "run-0a1b2c3d-t0", "run-0a1b2c3d-t1"


def _report(parallelism: int = 2, restore_parallelism: int = 2) -> ScenarioReport:
    findings = Findings(
        summary=Summary(duplicate_records=50, double_assigned_partitions=1),
        findings=(Finding("double_assignment", "error", PAYMENTS, 1, 50, ((50, 99),)),),
        coverage=(
            PartitionCoverage(ORDERS, 0, 100, 100, 0, 99, 0),
            PartitionCoverage(PAYMENTS, 0, 100, 100, 0, 99, 0),
            PartitionCoverage(PAYMENTS, 1, 150, 100, 0, 99, 50),
        ),
    )
    return ScenarioReport(
        variant="stock",
        restart="savepoint",
        continuous=False,
        parallelism=parallelism,
        restore_parallelism=restore_parallelism,
        jar="stock.jar",
        run_dir="/runs/r",
        topics=(ORDERS, PAYMENTS),
        job_id_before="j0",
        job_id_after="j1",
        savepoint_before="/sp0",
        savepoint_after="/sp1",
        sink_path="/runs/r/sink",
        sink_format="json",
        expected_records=300,
        records_per_second=100.0,
        partitions=(
            PartitionCounts(ORDERS, 0, 100, 100, 0, 0, 0, 0),
            PartitionCounts(PAYMENTS, 0, 100, 100, 0, 0, 0, 0),
            PartitionCounts(PAYMENTS, 1, 100, 150, 50, 0, 50, 0),
        ),
        steps=(),
        audit=findings,
    )


def test_rows_carry_short_topic_labels_and_the_verdict_names_topic_and_partition() -> None:
    output = LabConsoleOutput()
    output.console = Console(file=io.StringIO(), width=200, markup=False, emoji=False, highlight=False)
    report = _report()
    assert report.double_assigned == ((PAYMENTS, 1),)
    output.scenario_report(report)
    text = output.console.file.getvalue()  # type: ignore[attr-defined]
    assert f"topics t0 = {ORDERS}, t1 = {PAYMENTS}" in text
    rows = [line.split() for line in text.splitlines() if line.startswith("│ t")]
    assert [row[1:10:2] for row in rows] == [
        ["t0", "0", "100", "100", "0"],
        ["t1", "0", "100", "100", "0"],
        ["t1", "1", "100", "150", "50"],
    ]
    assert f"double assignment of partitions {PAYMENTS}/1 (50 records read twice)" in text


@pytest.mark.parametrize(
    ("before", "after", "shown"), [(2, 2, "parallelism 2:"), (2, 3, "parallelism 2 → 3 on restore:")]
)
def test_the_title_names_both_parallelisms_when_the_restore_changes_it(before: int, after: int, shown: str) -> None:
    output = LabConsoleOutput()
    output.console = Console(file=io.StringIO(), width=300, markup=False, emoji=False, highlight=False)
    output.scenario_report(_report(before, after))
    text = " ".join(output.console.file.getvalue().split())  # type: ignore[attr-defined]
    assert f"savepoint scenario, stock, {shown} stock.jar" in text  # the title, however the table wraps it
