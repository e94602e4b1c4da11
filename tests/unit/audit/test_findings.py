"""How a finding's offset ranges read to people (console table, pytest assertion messages)."""

from __future__ import annotations

from splitaudit.audit.checks.findings import ERROR, MISSING, Finding


def test_ranges_text_compresses_single_offsets_and_marks_what_is_cut() -> None:
    finding = Finding(MISSING, ERROR, "t", 0, 7, ((5, 5), (7, 9), (20, 21)))
    assert finding.ranges_text(3) == "5, 7..9, 20..21"
    assert finding.ranges_text(2) == "5, 7..9, …"
    truncated = Finding(MISSING, ERROR, "t", 0, 7, ((5, 5),), ranges_truncated=True)
    assert truncated.ranges_text(6) == "5, …"
    assert Finding(MISSING, ERROR, "t", 0, 0).ranges_text(6) == ""
