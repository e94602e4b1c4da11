"""Findings on the console read at any width: a table when it fits the terminal, else one block per finding (its
severity, kind, topic/partition, count and offsets on one line, its detail below as whole words), never a detail
column cut into fragments of a word or two (audit, diff, guard and watch show findings the same way)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from splitaudit.audit.checks.findings import Finding, Findings, Summary
from splitaudit.report.console import ConsoleOutput

DOUBLE = Finding(
    "double_assignment", "error", "weather", 3, 5, ((100, 104), (110, 110)), detail="two readers: 1f3a, 9c2e"
)
OTHER_TOPIC = Finding("not_a_source_topic", "info", "audit-log", None, 12, detail="not read by any source")
LONG = (
    "offsets read by two readers in one generation (reader_id 1f3a and 9c2e, attempt 0), a twin reader after "
    "the restore of s3://bucket/savepoints/savepoint-4f2a1b-0123456789ab"
)


def _shown(width: int, *findings: Finding) -> str:
    output = ConsoleOutput()
    output.console = Console(file=io.StringIO(), width=width, markup=False, emoji=False, highlight=False)
    output.findings(Findings(Summary(duplicate_records=5, double_assigned_partitions=1), findings))
    text = output.console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(text, str)
    # What follows the summary table, each line without the spaces rich pads it with (the title is centred).
    lines = [line.rstrip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.strip() == "findings")
    return "\n".join([lines[start].strip(), *lines[start + 1 :]]) + "\n"


def test_at_120_columns_the_findings_table_fits() -> None:
    assert _shown(120, DOUBLE, OTHER_TOPIC) == (
        "findings\n"
        "┏━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━━┳━━━━━━━┳━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━┓\n"
        "┃ severity ┃ kind               ┃ topic     ┃ partition ┃ count ┃ offsets       ┃ detail                  ┃\n"
        "┡━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━┩\n"
        "│ error    │ double_assignment  │ weather   │ 3         │ 5     │ 100..104, 110 │ two readers: 1f3a, 9c2e │\n"
        "│ info     │ not_a_source_topic │ audit-log │ -         │ 12    │               │ not read by any source  │\n"
        "└──────────┴────────────────────┴───────────┴───────────┴───────┴───────────────┴─────────────────────────┘\n"
    )


def test_at_80_columns_each_finding_is_a_block() -> None:
    assert _shown(80, DOUBLE, OTHER_TOPIC) == (
        "findings\n"
        "error  double_assignment  weather/3  count 5  offsets 100..104, 110\n"
        "    two readers: 1f3a, 9c2e\n"
        "\n"
        "info  not_a_source_topic  audit-log  count 12\n"
        "    not read by any source\n"
        "\n"
    )


@pytest.mark.parametrize("width", [80, 120])
def test_a_long_detail_wraps_at_words_below_its_finding(width: int) -> None:
    shown = _shown(width, DOUBLE, Finding("replay", "warning", "weather", 1, 3, ((7, 9),), detail=LONG))
    lines = shown.splitlines()
    head = lines.index("warning  replay  weather/1  count 3  offsets 7..9")
    detail = lines[head + 1 : -1]
    assert lines[-1] == ""
    assert all(line.startswith("    ") and len(line) <= width for line in detail)
    assert " ".join(line.strip() for line in detail) == LONG
    if width == 80:
        assert detail == [
            "    offsets read by two readers in one generation (reader_id 1f3a and 9c2e,",
            "    attempt 0), a twin reader after the restore of",
            "    s3://bucket/savepoints/savepoint-4f2a1b-0123456789ab",
        ]


def test_a_finding_without_detail_is_its_head_line() -> None:
    bare = Finding("partition_new", "info", "weather", 4, 0)
    assert _shown(80, DOUBLE, bare).endswith("\n\ninfo  partition_new  weather/4  count 0\n\n")


def test_text_from_a_file_stays_escaped_in_a_block() -> None:
    # A topic and a detail quoting a file's bytes: control characters shown escaped, markup shown as text.
    hostile = Finding("rewind", "error", "t\x1b[2J[red]", 0, 1, ((5, 5),), detail="uid [bold]x\ny\x07 " + "z " * 40)
    lines = _shown(80, DOUBLE, hostile).splitlines()
    head = lines.index("error  rewind  t\\x1b[2J[red]/0  count 1  offsets 5")
    assert lines[head + 1].startswith("    uid [bold]x\\ny\\x07 z z")
    assert all(len(line) <= 80 for line in lines[head + 1 :])
