"""The audit's `Findings` as one self-contained HTML page, for people to open in a browser or attach to a ticket.

The page holds the summary and notes, a partition x subtask matrix per source operator (partitions held twice or
by nobody highlighted), a per-partition offset-coverage bar (gaps and duplicated ranges drawn over the sink's
first..last offset) and the findings table. It loads nothing: CSS is inline, the bars are inline SVG, there is
no script, and a Content-Security-Policy forbids any fetch. Every value from the data is HTML-escaped. Rows and
cells carry `data-*` attributes (topic, partition, subtask, status, kind) so tests and scripts can find them.
"""

from __future__ import annotations

from html import escape
from itertools import groupby
from pathlib import Path

from splitaudit.audit.checks.findings import (
    DOUBLE_ASSIGNMENT,
    DUPLICATE,
    MISSING,
    REPLAY,
    AssignmentMatrix,
    Finding,
    Findings,
    Holder,
    PartitionAssignment,
    PartitionCoverage,
    offset_range,
)
from splitaudit.errors import UsageError

# Fills of the highlighted matrix rows and of the coverage-bar segments (also what a screenshot test looks for).
DOUBLE_ROW_COLOUR = "#f2a7a7"
MISSING_ROW_COLOUR = "#ffd97a"
COVERED_COLOUR = "#8fcf8f"
SEGMENT_COLOURS = {MISSING: "#c62828", DOUBLE_ASSIGNMENT: "#6a1b9a", REPLAY: "#1565c0", DUPLICATE: "#ad1457"}
SEGMENT_LABELS = {
    MISSING: "missing (gap)",
    DOUBLE_ASSIGNMENT: "double assignment",
    REPLAY: "replay",
    DUPLICATE: "duplicate (unclassified)",
}
BAR_WIDTH = 1000  # SVG user units; the bar stretches to the column's width

_CSS = f"""
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1a1a1a; background: #fff; }}
h1 {{ font-size: 22px; }} h2 {{ font-size: 18px; margin-top: 32px; }} h3 {{ font-size: 15px; }}
table {{ border-collapse: collapse; margin: 8px 0; }}
th, td {{ border: 1px solid #c8c8c8; padding: 3px 8px; text-align: left; vertical-align: top; }}
th {{ background: #eceff1; }}
tr.topic-heading th {{ background: #cfd8dc; text-align: left; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
.verdict-error {{ color: #b71c1c; font-weight: bold; }} .verdict-clean {{ color: #1b5e20; font-weight: bold; }}
tr.status-double td {{ background: {DOUBLE_ROW_COLOUR}; }}
tr.status-missing td {{ background: {MISSING_ROW_COLOUR}; }}
tr.severity-error td.severity {{ color: #b71c1c; font-weight: bold; }}
tr.severity-warning td.severity {{ color: #e65100; }}
.holder {{ white-space: nowrap; }} .muted {{ color: #757575; }}
td.bar {{ width: 480px; }} td.bar svg {{ display: block; width: 100%; height: 16px; }}
.swatch {{ display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; vertical-align: -1px; }}
"""


def check_html_target(path: Path) -> None:
    """Refuse a target that exists (nothing is overwritten) or whose folder does not; called before the audit."""
    if path.exists():
        raise _exists(path)
    if not path.parent.is_dir():
        raise UsageError(f"{path.parent}: no such directory for the HTML report (--html)")


def write_html(path: Path, findings: Findings, title: str) -> None:
    """Write the page to a new file at `path`; UsageError if it exists or its folder does not."""
    check_html_target(path)
    try:
        with path.open("x", encoding="utf-8") as out:  # "x": even a file created since the check is kept
            out.write(render_html(findings, title))
    except FileExistsError:
        raise _exists(path) from None


def _exists(path: Path) -> UsageError:
    return UsageError(f"{path}: already exists; the HTML report never overwrites a file (--html)")


def render_html(findings: Findings, title: str) -> str:
    """The whole page as a string."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
            f"<h1>{escape(title)}</h1>",
            _summary(findings),
            "<h2>Partition assignment</h2>",
            *(_matrix(m) for m in findings.assignment),
            "" if findings.assignment else '<p class="muted" id="no-assignment">No savepoint assignment audited.</p>',
            "<h2>Offset coverage of the sink</h2>",
            _coverage(findings),
            "<h2>Findings</h2>",
            _findings_table(findings.findings),
            "</body></html>",
        ]
    )


def _summary(findings: Findings) -> str:
    verdict = (
        '<p class="verdict-error" id="verdict">Findings of severity error (exit code 1)</p>'
        if findings.exit_code
        else '<p class="verdict-clean" id="verdict">No errors (exit code 0)</p>'
    )
    rows = "".join(
        f'<tr data-summary="{name}"><th>{name.replace("_", " ")}</th><td class="num">{value}</td></tr>'
        for name, value in findings.summary.to_json().items()
    )
    notes = "".join(f"<li>{escape(note)}</li>" for note in findings.notes)
    return f'{verdict}<table id="summary">{rows}</table>' + (f'<ul id="notes">{notes}</ul>' if notes else "")


def _matrix(matrix: AssignmentMatrix) -> str:
    """One operator's partitions (rows) by subtask (columns), plus the enumerator's pending splits."""
    held_by = [h.subtask for p in matrix.partitions for h in p.holders if h.subtask is not None]
    subtasks = range(max([matrix.subtasks, *(s + 1 for s in held_by)]))  # a holder beyond parallelism still shows
    head = "".join(f"<th>subtask {s}</th>" for s in subtasks)
    columns = len(subtasks) + 4
    groups = "".join(
        _topic_group(topic, tuple(rows), subtasks, columns)
        for topic, rows in groupby(matrix.partitions, key=lambda p: p.topic)
    )
    return (
        f"<h3>Operator {escape(matrix.operator)}</h3><p>{matrix.subtasks} subtasks; partitions from "
        f'<span class="partitions-from">{escape(matrix.partitions_from)}</span></p>'
        f'<table class="assignment" data-operator="{escape(matrix.operator)}">'
        f"<thead><tr><th>topic</th><th>partition</th><th>status</th>{head}<th>enumerator (pending)</th></tr></thead>"
        f"{groups}</table>"
    )


def _topic_group(topic: str, rows: tuple[PartitionAssignment, ...], subtasks: range, columns: int) -> str:
    """One topic's rows under a heading row that counts its partitions and the ones held twice or by nobody."""
    double = sum(row.status == "double" for row in rows)
    missing = sum(row.status == "missing" for row in rows)
    heading = (
        f'<tr class="topic-heading"><th colspan="{columns}">topic {escape(topic)}: {len(rows)} partitions, '
        f"{double} held twice, {missing} held by nobody</th></tr>"
    )
    body = "".join(_assignment_row(row, subtasks) for row in rows)
    return f'<tbody data-topic="{escape(topic)}">{heading}{body}</tbody>'


def _assignment_row(row: PartitionAssignment, subtasks: range) -> str:
    label = {"ok": "ok", "double": f"double: {len(row.holders)} holders", "missing": "missing: held by nobody"}
    cells = "".join(_holder_cell(row, s, str(s)) for s in subtasks) + _holder_cell(row, None, "pending")
    return (
        f'<tr class="status-{row.status}" data-topic="{escape(row.topic)}" data-partition="{row.partition}" '
        f'data-status="{row.status}"><td>{escape(row.topic)}</td><td class="num">{row.partition}</td>'
        f'<td class="status">{label[row.status]}</td>{cells}</tr>'
    )


def _holder_cell(row: PartitionAssignment, subtask: int | None, key: str) -> str:
    holders = [h for h in row.holders if h.subtask == subtask]
    return f'<td data-subtask="{key}" data-holders="{len(holders)}">{"<br>".join(map(_holder, holders))}</td>'


def _holder(holder: Holder) -> str:
    offset = "?" if holder.next_offset is None else str(holder.next_offset)
    return (
        f'<span class="holder">split <span class="split-id">{escape(holder.split_id)}</span>, '
        f'next <span class="next-offset">{offset}</span></span>'
    )


def _coverage(findings: Findings) -> str:
    if not findings.coverage:
        return '<p class="muted" id="no-coverage">No sink coverage audited.</p>'
    legend = "".join(
        f'<span class="swatch" style="background:{colour}"></span>{label}'
        for colour, label in [
            (COVERED_COLOUR, "offsets in the sink"),
            *((SEGMENT_COLOURS[k], SEGMENT_LABELS[k]) for k in SEGMENT_COLOURS),
        ]
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("topic", "partition", "first … last offset", "rows", "distinct", "missing", "duplicates")
    )
    rows = "".join(_coverage_row(c, findings.findings) for c in findings.coverage)
    return f'<p id="legend">{legend}</p><table id="coverage"><tr>{head}</tr>{rows}</table>'


def _coverage_row(cov: PartitionCoverage, findings: tuple[Finding, ...]) -> str:
    numbers = "".join(
        f'<td class="num" data-field="{name}">{value}</td>'
        for name, value in (("rows", cov.rows), ("distinct", cov.distinct), ("missing", cov.missing))
    )
    return (
        f'<tr data-topic="{escape(cov.topic)}" data-partition="{cov.partition}"><td>{escape(cov.topic)}</td>'
        f'<td class="num">{cov.partition}</td><td class="bar">{_bar(cov, findings)}'
        f'<span class="span">{cov.first_offset} … {cov.last_offset}</span></td>{numbers}'
        f'<td class="num" data-field="duplicates">{cov.duplicates}</td></tr>'
    )


def _bar(cov: PartitionCoverage, findings: tuple[Finding, ...]) -> str:
    """An SVG bar over first..last offset: the covered span, then the gaps and duplicated ranges on top."""
    span = max(1, cov.last_offset - cov.first_offset + 1)
    segments = []
    for f in findings:
        if f.kind not in SEGMENT_COLOURS or (f.topic, f.partition) != (cov.topic, cov.partition):
            continue
        for first, last in f.offset_ranges:
            low, high = max(first, cov.first_offset), min(last, cov.last_offset)
            if low > high:
                continue
            x = (low - cov.first_offset) * BAR_WIDTH / span
            width = max(2.0, (high - low + 1) * BAR_WIDTH / span)  # a single offset stays visible
            segments.append(
                f'<rect x="{x:.2f}" y="0" width="{width:.2f}" height="16" fill="{SEGMENT_COLOURS[f.kind]}" '
                f'data-kind="{f.kind}" data-from="{low}" data-to="{high}">'
                f"<title>{SEGMENT_LABELS[f.kind]}: {offset_range(low, high)}</title></rect>"
            )
    return (
        f'<svg viewBox="0 0 {BAR_WIDTH} 16" preserveAspectRatio="none" role="img">'
        f'<rect x="0" y="0" width="{BAR_WIDTH}" height="16" fill="{COVERED_COLOUR}"/>{"".join(segments)}</svg>'
    )


def _findings_table(findings: tuple[Finding, ...]) -> str:
    if not findings:
        return '<p class="muted" id="no-findings">No findings.</p>'
    head = "".join(
        f"<th>{h}</th>" for h in ("kind", "severity", "topic", "partition", "count", "offset ranges", "detail")
    )
    rows = "".join(_finding_row(f) for f in findings)
    return f'<table id="findings"><tr>{head}</tr>{rows}</table>'


def _finding_row(f: Finding) -> str:
    ranges = f.ranges_text()
    return (
        f'<tr class="severity-{escape(f.severity)}" data-kind="{escape(f.kind)}" '
        f'data-topic="{escape(f.topic or "")}" data-partition="{"" if f.partition is None else f.partition}">'
        f'<td>{escape(f.kind)}</td><td class="severity">{escape(f.severity)}</td><td>{escape(f.topic or "")}</td>'
        f'<td class="num">{"" if f.partition is None else f.partition}</td><td class="num">{f.count}</td>'
        f'<td class="ranges">{ranges}</td><td>{escape(f.explanation)}</td></tr>'
    )
