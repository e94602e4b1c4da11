"""Rewinds between two savepoints of a file source: a file held in the earlier savepoint and held by nobody in
the later one is finished, an info, when the later enumerator names it processed (`FINISHED`), and dropped, an
error, when it does not. The earlier savepoint is the real one of fixtures/flink_file/; the later ones are its
tables with the splits taken out (pure logic: the rule, on states the real run did not reach)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from splitaudit.audit.checks.findings import DROPPED_PARTITION, ERROR, FINISHED_PARTITION, INFO
from splitaudit.audit.checks.rewind import check_rewind
from splitaudit.audit.checks.savepoint_tables import tables_of
from splitaudit.savepoint_view import inspect_savepoint
from splitaudit.splits.model import FINISHED, PENDING
from tests.unit.conftest import FIXTURES

CASE = FIXTURES / "flink_file" / "1.19.3-savepoint-continuous"
EXPECTED: dict[str, Any] = json.loads((CASE / "expected.json").read_text())
PATHS = {f["name"]: "file:" + f["path"] for f in EXPECTED["job"]["input"]}


def test_held_files_a_later_savepoint_names_finished_are_finished_not_dropped() -> None:
    before = tables_of(inspect_savepoint(str(CASE / EXPECTED["snapshot_dir"])))
    finished = [r for r in before.enumerator if r["status"] == FINISHED]
    assert sorted(r["topic"] for r in finished) == sorted(PATHS[h["file"]] for h in EXPECTED["held"])
    # Later: the readers' files done (no split), the pending ones still pending.
    after = dataclasses.replace(before, splits=())
    findings = check_rewind(before, after)
    assert sorted((f.kind, f.severity, f.topic, f.partition) for f in findings) == sorted(
        (FINISHED_PARTITION, INFO, PATHS[h["file"]], 0) for h in EXPECTED["held"]
    )
    # Without the processed paths (an enumerator that forgot them) the same files are dropped.
    forgotten = dataclasses.replace(after, enumerator=tuple(r for r in before.enumerator if r["status"] == PENDING))
    assert sorted((f.kind, f.severity, f.topic) for f in check_rewind(before, forgotten)) == sorted(
        (DROPPED_PARTITION, ERROR, PATHS[h["file"]]) for h in EXPECTED["held"]
    )
