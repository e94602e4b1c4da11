"""Duplicates of a sink without lineage, classified by where their runs start and end (`audit.inference`)."""

from __future__ import annotations

from splitaudit.audit.checks.findings import (
    DOUBLE_ASSIGNMENT,
    DUPLICATE,
    ERROR,
    INFERRED,
    MISSING,
    REPLAY,
    WARNING,
    Finding,
    PartitionCoverage,
)
from splitaudit.audit.checks.inference import RestoreEvidence, infer_classes

# The job was restored from a savepoint whose next offset is 1000 in each partition; the sink holds 0..2999.
RESUMED = {("t", 0): 1000, ("t", 1): 1000}
COVERAGE = (PartitionCoverage("t", 0, 4000, 3000, 0, 2999, 0), PartitionCoverage("t", 1, 4000, 3000, 0, 2999, 0))
NO_JAR = RestoreEvidence(RESUMED, "sp0")
STOCK = RestoreEvidence(RESUMED, "sp0", "Beam 2.62.0 with beam-runners-flink-1.19, unpatched", True)
PATCHED = RestoreEvidence(RESUMED, "sp0", "Beam 2.62.0 with beam-runners-flink-1.19, patched by splitaudit", False)


def _duplicates(first: int, last: int, count: int | None = None, partition: int = 0) -> Finding:
    extra = last - first + 1 if count is None else count
    return Finding(DUPLICATE, ERROR, "t", partition, extra, ((first, last),), detail="emitted more than once")


def _one(finding: Finding, evidence: RestoreEvidence, exactly_once: bool = False) -> Finding:
    (inferred,) = infer_classes([finding], COVERAGE, evidence, exactly_once)
    return inferred


def test_a_run_to_the_end_starting_above_the_savepoint_is_a_twin_at_the_log_end() -> None:
    # auto.offset.reset=latest: the twin started at the log end at the restore (2000) and read on to the end
    found = _one(_duplicates(2000, 2999), NO_JAR)
    assert (found.kind, found.severity, found.classified_by, found.count) == (DOUBLE_ASSIGNMENT, ERROR, INFERRED, 1000)
    assert found.offset_ranges == ((2000, 2999),)
    assert "every offset 2000..2999 is in the sink at least twice (1000 extra rows)" in found.evidence
    assert "up to the last offset the sink holds (2999)" in found.evidence
    assert "is 1000, the run starts above it" in found.evidence


def test_a_run_to_the_end_starting_below_the_savepoint_is_a_twin_at_the_log_start() -> None:
    found = _one(_duplicates(0, 2999), NO_JAR)
    assert (found.kind, found.classified_by) == (DOUBLE_ASSIGNMENT, INFERRED)
    assert "the run starts below it" in found.evidence


def test_a_run_to_the_end_from_the_savepoint_needs_the_jar_to_tell_a_twin_from_a_replay() -> None:
    # a twin at the group's committed offset starts where a replay would: only the jar tells them apart
    assert _one(_duplicates(1000, 2999), NO_JAR) == _duplicates(1000, 2999)
    assert _one(_duplicates(1000, 2999), PATCHED) == _duplicates(1000, 2999)
    found = _one(_duplicates(1000, 2999), STOCK)
    assert (found.kind, found.classified_by) == (DOUBLE_ASSIGNMENT, INFERRED)
    assert "Beam 2.62.0 with beam-runners-flink-1.19, unpatched re-initialises restored splits" in found.evidence


def test_a_bounded_run_from_the_savepoint_is_a_replay_whatever_the_jar() -> None:
    for evidence in (NO_JAR, STOCK, PATCHED):
        found = _one(_duplicates(1000, 1499), evidence)
        assert (found.kind, found.severity, found.classified_by) == (REPLAY, WARNING, INFERRED)
        assert "ending before the last offset the sink holds (2999)" in found.evidence
    assert _one(_duplicates(1000, 1499), NO_JAR, exactly_once=True).severity == ERROR


def test_what_the_evidence_does_not_explain_stays_unclassified() -> None:
    unexplained = [
        _duplicates(1200, 1499),  # bounded, not from the savepoint
        Finding(DUPLICATE, ERROR, "t", 0, 20, ((1000, 1009), (2990, 2999))),  # two runs
        Finding(DUPLICATE, ERROR, "t", 0, 10, ((2000, 2009),), ranges_truncated=True),  # runs not all known
        _duplicates(2000, 2999, partition=7),  # a partition the savepoint does not resume
    ]
    assert infer_classes(unexplained, COVERAGE, STOCK, False) == tuple(unexplained)


def test_only_unclassified_duplicates_are_inferred() -> None:
    by_lineage = Finding(DUPLICATE, ERROR, "t", 0, 1000, ((2000, 2999),), classified_by="lineage")
    missing = Finding(MISSING, ERROR, "t", 1, 1000, ((2000, 2999),))
    assert infer_classes([by_lineage, missing], COVERAGE, STOCK, False) == (by_lineage, missing)
