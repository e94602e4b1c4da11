"""The API reference's examples (docs/api/), run: each page includes its example from a section of this module
(`--8<-- [start:NAME]` … `[end:NAME]`), so what the docs show is what this test runs, and the values it asserts
are those of the fixtures' expected.json (fixtures/README.md), not the reader's output copied back.

The examples name fixtures by paths relative to a checkout's root, as a reader pasting them there would: each test
runs from the root. These need no Spark; tests/integration/test_api_examples.py has the ones that do.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _from_the_checkout_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


# --8<-- [start:inspect_savepoint]
def test_inspect_savepoint() -> None:
    from splitaudit.savepoint_view import inspect_savepoint

    view = inspect_savepoint("fixtures/beam_flink_source/restore_stock_after")
    assert (view.kind, view.savepoint_format, len(view.operators)) == ("savepoint", "CANONICAL", 4)
    held = sorted(
        (split.subtask, row.topic, row.partition, row.next_offset)
        for operator in view.operators
        if operator.source is not None
        for split in operator.source.reader_splits
        for row in split.state.partition_rows()
    )
    assert held == [
        (0, "restore-stock-3b5fcb84", 0, 10000),
        (0, "restore-stock-3b5fcb84", 2, 10000),
        (1, "restore-stock-3b5fcb84", 1, 10000),
        (1, "restore-stock-3b5fcb84", 3, 10000),
    ]
    assert view.to_json()["operators"][0]["source"]["enumerator"]["state"] == {"pending": []}


# --8<-- [end:inspect_savepoint]


# --8<-- [start:read_keyed_state]
def test_read_keyed_state() -> None:
    from splitaudit.savepoint_view import read_keyed_state

    snapshot = "fixtures/keyed/1.19.3-heap-savepoint-canonical-inline/savepoint-aa688c-f3cac33821d0"
    # Flink 1.x metadata keeps operator ids only: `uids` names the operators to read (and keeps only those).
    counts = {
        row.entry.key: row.entry.value
        for row in read_keyed_state(snapshot, uids=["tally"])
        if row.entry.state == "count"
    }
    assert len(counts) == 24  # 600 values fed to 24 keys, `key-<value % 24>`
    assert counts["key-0"] == counts["key-23"] == 25
    # a window's contents: the namespace is the window (TimeWindow), the value the reduced sum of its values
    sums = {
        (row.entry.namespace["start"], row.entry.namespace["end"]): row.entry.value
        for row in read_keyed_state(snapshot, uids=["window-sum"])
        if row.entry.state == "window-contents" and row.entry.key == "key-1"
    }
    assert sums == {
        (0, 100): 245,
        (100, 200): 628,
        (200, 300): 1012,
        (300, 400): 1396,
        (400, 500): 1780,
        (500, 600): 2164,
    }


# --8<-- [end:read_keyed_state]


# --8<-- [start:run_audit]
def test_run_audit() -> None:
    from splitaudit.audit.request import AuditRequest
    from splitaudit.audit.run import run_audit
    from splitaudit.progress import Progress

    request = AuditRequest(
        savepoint="fixtures/beam_flink_source/restore_stock_after",
        before="fixtures/beam_flink_source/restore_stock_before",
        partitions=((None, 6),),  # say the one source topic has 6 partitions: the savepoint holds 4
    )
    findings = run_audit(request, Progress())  # a savepoint-only audit: no Spark is started
    assert [(f.kind, f.topic, f.partition) for f in findings.findings] == [
        ("partition_unassigned", "restore-stock-3b5fcb84", 4),
        ("partition_unassigned", "restore-stock-3b5fcb84", 5),
    ]
    assert findings.summary.missing_partitions == 2
    assert findings.exit_code == 1  # an error among the findings: `splitaudit audit` would exit 1


# --8<-- [end:run_audit]


def test_a_request_that_does_not_combine_is_refused_when_made() -> None:
    from splitaudit.audit.request import AuditRequest
    from splitaudit.errors import UsageError

    # --8<-- [start:request_refused]
    with pytest.raises(UsageError, match="--before needs --savepoint"):
        AuditRequest(before="fixtures/beam_flink_source/restore_stock_before", sink="fixtures/beam_sink")
    # --8<-- [end:request_refused]


# --8<-- [start:findings]
def test_findings() -> None:
    from splitaudit.audit.checks.findings import ERROR, SAVEPOINT_ASSIGNMENT_KINDS
    from splitaudit.audit.request import AuditRequest
    from splitaudit.audit.run import run_audit
    from splitaudit.progress import Progress

    request = AuditRequest(savepoint="fixtures/beam_flink_source/restore_stock_after", partitions=((None, 6),))
    findings = run_audit(request, Progress())
    [first, _] = findings.findings
    assert (first.kind, first.severity, first.count) == ("partition_unassigned", ERROR, 0)
    assert first.kind in SAVEPOINT_ASSIGNMENT_KINDS
    assert first.detail.startswith("source badafca9cf4780dedc3db9bfa19c38b8: in the topic but held by no reader")
    [matrix] = findings.assignment  # who holds each partition, from where the partition list came
    assert matrix.partitions_from == "--partitions 6 (topic restore-stock-3b5fcb84)"
    assert [(p.partition, p.status) for p in matrix.partitions] == [
        (0, "ok"),
        (1, "ok"),
        (2, "ok"),
        (3, "ok"),
        (4, "missing"),
        (5, "missing"),
    ]
    document = findings.to_json()  # what `splitaudit --json audit` prints
    assert document["summary"]["missing_partitions"] == 2
    assert list(document) == ["summary", "findings", "coverage", "notes", "assignment", "ledger"]


# --8<-- [end:findings]


# --8<-- [start:assert_no_double_assignment]
def test_the_restored_savepoint_holds_each_partition_once() -> None:
    from splitaudit.pytest_plugin import assert_no_double_assignment

    assert_no_double_assignment("fixtures/beam_flink_source/restore_patched_after", partitions=4)


# --8<-- [end:assert_no_double_assignment]


def test_a_failed_assertion_lists_each_finding() -> None:
    from splitaudit.pytest_plugin import assert_no_double_assignment

    # --8<-- [start:assertion_message]
    with pytest.raises(AssertionError) as failed:
        assert_no_double_assignment("fixtures/beam_flink_source/restore_patched_after", partitions=6)
    assert str(failed.value).splitlines() == [
        "splitaudit: 2 finding(s) in savepoint fixtures/beam_flink_source/restore_patched_after:",
        "  - partition_unassigned (error) restore-patched-155adc53/4: 0 — source badafca9cf4780dedc3db9bfa19c38b8: "
        "in the topic but held by no reader and not pending: nothing will read it",
        "  - partition_unassigned (error) restore-patched-155adc53/5: 0 — source badafca9cf4780dedc3db9bfa19c38b8: "
        "in the topic but held by no reader and not pending: nothing will read it",
    ]
    # --8<-- [end:assertion_message]
