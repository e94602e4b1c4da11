"""What a sink's columns let the duplicate classification tell apart."""

from __future__ import annotations

from splitaudit.audit.passes.duplicates import Lineage


def test_generations_are_job_and_attempt_when_the_sink_has_job_id() -> None:
    lineage = Lineage.of(["topic", "partition", "offset", "reader_id", "attempt", "job_id", "subtask"])
    assert (lineage.classified, lineage.by_job, lineage.generation) == (True, True, ("job_id", "attempt"))
    assert lineage.generation_name == "(job_id, attempt)"
    assert "one per (job_id, attempt)" in lineage.note


def test_without_job_id_a_generation_is_an_attempt_and_the_note_says_what_that_costs() -> None:
    lineage = Lineage.of(["topic", "partition", "offset", "reader_id", "attempt"])
    assert (lineage.classified, lineage.by_job, lineage.generation) == (True, False, ("attempt",))
    assert lineage.generation_name == "attempt"
    assert "no job_id column" in lineage.note
    assert "count as double assignment, not replay" in lineage.note


def test_without_reader_id_or_attempt_nothing_is_classified() -> None:
    for columns in (
        ["topic", "partition", "offset", "attempt", "job_id"],
        ["topic", "partition", "offset", "reader_id"],
    ):
        lineage = Lineage.of(columns)
        assert (lineage.classified, lineage.generation) == (False, ())
        assert lineage.note == "the sink has no reader_id/attempt columns: duplicates are not classified"
