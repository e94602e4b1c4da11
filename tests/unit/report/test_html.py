"""The HTML report on a hand-built Findings: exact values in the page, escaping, self-containment, no overwrite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from splitaudit.audit.checks.findings import (
    DOUBLE_ASSIGNMENT,
    ERROR,
    INVALID,
    MISSING,
    REPLAY,
    WARNING,
    AssignmentMatrix,
    Finding,
    Findings,
    Holder,
    PartitionAssignment,
    PartitionCoverage,
    Summary,
)
from splitaudit.cli import main
from splitaudit.errors import UsageError
from splitaudit.report.html import render_html, write_html
from tests.htmldom import Element, elements, find, one

HOSTILE = '<script>alert("x")</script>&'

FINDINGS = Findings(
    summary=Summary(duplicate_records=150, missing_records=50, double_assigned_partitions=1, missing_partitions=1),
    findings=(
        Finding(DOUBLE_ASSIGNMENT, ERROR, "t", 1, 100, ((100, 199),), detail="two readers in attempt 0"),
        Finding(REPLAY, WARNING, "t", 1, 50, ((9_000, 9_049),)),
        Finding(MISSING, ERROR, "t", 2, 51, ((5_000, 5_049), (7_000, 7_000)), ranges_truncated=True),
        Finding(INVALID, ERROR, None, None, 2, detail=HOSTILE),
    ),
    coverage=(
        PartitionCoverage("t", 1, rows=10_150, distinct=10_000, first_offset=0, last_offset=9_999, missing=0),
        PartitionCoverage("t", 2, rows=9_949, distinct=9_949, first_offset=0, last_offset=9_999, missing=51),
    ),
    notes=("dense offsets assumed", HOSTILE),
    assignment=(
        AssignmentMatrix(
            operator="source<&>",
            subtasks=2,
            partitions_from="--partitions 4",
            partitions=(
                PartitionAssignment("t", 0, (Holder(0, "0", 10_000),)),
                PartitionAssignment("t", 1, (Holder(1, "1", 500), Holder(None, "7", 300))),
                PartitionAssignment("t", 2, ()),
                PartitionAssignment("t", 3, (Holder(1, HOSTILE, None),)),
            ),
        ),
    ),
)


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(FINDINGS, f"audit of {HOSTILE}")


def test_summary_and_notes(page: str) -> None:
    dom = elements(page)
    summary = {e.attrs["data-summary"]: e.text for e in find(dom, "tr") if "data-summary" in e.attrs}
    assert summary == {
        "duplicate_records": "duplicate records150",
        "missing_records": "missing records50",
        "double_assigned_partitions": "double assigned partitions1",
        "missing_partitions": "missing partitions1",
        "rewound_partitions": "rewound partitions0",
    }
    assert one(dom, "p", id="verdict").text == "Findings of severity error (exit code 1)"
    assert [li.text for li in find(dom, "li")] == ["dense offsets assumed", HOSTILE]


def _cells(row: Element) -> list[tuple[str, str, str]]:
    return [(c.attrs["data-subtask"], c.attrs["data-holders"], c.text) for c in find(row, "td", data_subtask="*")]


def test_assignment_matrix_cells_and_highlighted_rows(page: str) -> None:
    matrix = one(elements(page), "table", data_operator="source<&>")
    assert one(elements(page), "span", class_="partitions-from").text == "--partitions 4"
    rows = find(matrix, "tr", data_topic="t")
    assert [(r.attrs["data-partition"], r.attrs["data-status"], r.attrs["class"]) for r in rows] == [
        ("0", "ok", "status-ok"),
        ("1", "double", "status-double"),
        ("2", "missing", "status-missing"),
        ("3", "ok", "status-ok"),
    ]
    assert [one(r, "td", class_="status").text for r in rows] == [
        "ok",
        "double: 2 holders",
        "missing: held by nobody",
        "ok",
    ]
    assert _cells(rows[0]) == [("0", "1", "split 0, next 10000"), ("1", "0", ""), ("pending", "0", "")]
    assert _cells(rows[1]) == [("0", "0", ""), ("1", "1", "split 1, next 500"), ("pending", "1", "split 7, next 300")]
    assert _cells(rows[2]) == [("0", "0", ""), ("1", "0", ""), ("pending", "0", "")]
    assert _cells(rows[3]) == [("0", "0", ""), ("1", "1", f"split {HOSTILE}, next ?"), ("pending", "0", "")]


def test_a_holder_beyond_the_parallelism_gets_its_column() -> None:
    matrix = AssignmentMatrix("op", 1, "the savepoint", (PartitionAssignment("t", 0, (Holder(2, "s", 1),)),))
    page = render_html(Findings(Summary(), (), assignment=(matrix,)), "x")
    row = one(elements(page), "tr", data_partition="0")
    assert _cells(row) == [("0", "0", ""), ("1", "0", ""), ("2", "1", "split s, next 1"), ("pending", "0", "")]


def test_coverage_bars_place_gaps_and_duplicates(page: str) -> None:
    coverage = one(elements(page), "table", id="coverage")
    segments = {
        (r.attrs["data-kind"], r.attrs["data-from"], r.attrs["data-to"]): (r.attrs["x"], r.attrs["width"], r.text)
        for r in find(coverage, "rect", data_kind="*")
    }
    # a bar of 1000 units over offsets 0..9999: 10 offsets a unit; a single offset is drawn 2 units wide
    assert segments == {
        (DOUBLE_ASSIGNMENT, "100", "199"): ("10.00", "10.00", "double assignment: 100..199"),
        (REPLAY, "9000", "9049"): ("900.00", "5.00", "replay: 9000..9049"),
        (MISSING, "5000", "5049"): ("500.00", "5.00", "missing (gap): 5000..5049"),
        (MISSING, "7000", "7000"): ("700.00", "2.00", "missing (gap): 7000"),
    }
    numbers = {
        (row.attrs["data-partition"], cell.attrs["data-field"]): cell.text
        for row in find(coverage, "tr", data_topic="t")
        for cell in find(row, "td", data_field="*")
    }
    assert numbers == {
        ("1", "rows"): "10150",
        ("1", "distinct"): "10000",
        ("1", "missing"): "0",
        ("1", "duplicates"): "150",
        ("2", "rows"): "9949",
        ("2", "distinct"): "9949",
        ("2", "missing"): "51",
        ("2", "duplicates"): "0",
    }
    assert [one(row, "span", class_="span").text for row in find(coverage, "tr", data_topic="t")] == [
        "0 … 9999",
        "0 … 9999",
    ]


def test_findings_table(page: str) -> None:
    table = one(elements(page), "table", id="findings")
    rows = [[c.text for c in find(row, "td")] for row in find(table, "tr", data_kind="*")]
    assert rows == [
        [DOUBLE_ASSIGNMENT, ERROR, "t", "1", "100", "100..199", "two readers in attempt 0"],
        [REPLAY, WARNING, "t", "1", "50", "9000..9049", ""],
        [MISSING, ERROR, "t", "2", "51", "5000..5049, 7000, …", ""],
        [INVALID, ERROR, "", "", "2", "", HOSTILE],
    ]


def test_data_is_escaped_and_nothing_is_loaded(page: str) -> None:
    assert "<script" not in page
    assert page.count("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;") == 5  # title, h1, note, holder, detail
    assert find(elements(page), "title")[0].text == f"audit of {HOSTILE}"  # the others are SVG tooltips
    assert not re.search(r"https?:|src=|href=|url\(|@import", page)
    assert "default-src 'none'" in page


def test_an_empty_audit_renders() -> None:
    dom = elements(render_html(Findings(Summary(), ()), "empty"))
    assert one(dom, "p", id="verdict").text == "No errors (exit code 0)"
    assert one(dom, "p", id="no-assignment").text == "No savepoint assignment audited."
    assert one(dom, "p", id="no-coverage").text == "No sink coverage audited."
    assert one(dom, "p", id="no-findings").text == "No findings."
    assert not find(dom, "table", class_="assignment")


def test_write_html_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    write_html(target, FINDINGS, "first")
    assert "<title>first</title>" in target.read_text(encoding="utf-8")
    with pytest.raises(UsageError, match="already exists"):
        write_html(target, FINDINGS, "second")
    assert "<title>first</title>" in target.read_text(encoding="utf-8")
    with pytest.raises(UsageError, match="no such directory"):
        write_html(tmp_path / "absent" / "report.html", FINDINGS, "x")


@pytest.mark.parametrize("target", ["exists.html", "absent/report.html"])
def test_audit_refuses_the_html_target_before_auditing(tmp_path: Path, target: str) -> None:
    (tmp_path / "exists.html").write_text("keep me")
    # The sink does not exist either: the --html check comes first, before any Spark start.
    result = CliRunner().invoke(main, ["audit", "--sink", str(tmp_path / "no-sink"), "--html", str(tmp_path / target)])
    assert result.exit_code == 2
    assert "(--html)" in result.stderr
    assert (tmp_path / "exists.html").read_text() == "keep me"


def test_assignment_matrix_groups_several_topics() -> None:
    matrix = AssignmentMatrix(
        operator="Read",
        subtasks=2,
        partitions_from="--partitions orders=3, payments=2",
        partitions=(
            PartitionAssignment("orders", 0, (Holder(0, "0", 7),)),
            PartitionAssignment("orders", 1, (Holder(1, "1", 8),)),
            PartitionAssignment("orders", 2, (Holder(0, "0", 9), Holder(1, "1", 9))),
            PartitionAssignment("payments", 0, (Holder(1, "1", 3),)),
            PartitionAssignment("payments", 1, ()),
        ),
    )
    page = render_html(Findings(summary=Summary(), findings=(), assignment=(matrix,)), "two topics")
    groups = find(one(elements(page), "table", data_operator="Read"), "tbody", data_topic="*")
    assert [g.attrs["data-topic"] for g in groups] == ["orders", "payments"]
    assert [one(g, "tr", class_="topic-heading").text for g in groups] == [
        "topic orders: 3 partitions, 1 held twice, 0 held by nobody",
        "topic payments: 2 partitions, 0 held twice, 1 held by nobody",
    ]
    assert [[r.attrs["data-partition"] for r in find(g, "tr", data_topic="*")] for g in groups] == [
        ["0", "1", "2"],
        ["0", "1"],
    ]
