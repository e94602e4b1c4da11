"""Flink's own FileSource (flink-connector-files 1.19.3, `FileLineageJob` of beam_pipelines/java/flink-jobs) on the
stack's Flink 1.19.3: restores from a savepoint taken mid-read, clean, rescaled and with an input file removed,
measured from the lineage sink (a row per line: its file and line number) and asserted against the savepoint
checks and the audit.

Each run: 3 files of 2000 lines, the job at parallelism 2 with each reader paced to 200 lines a second, stopped
with a savepoint SP0 once the sink holds 400 rows (two files held mid-read, the third pending), then restored
unpaced (`splitaudit_lab.scenario.flink_file`).

- Clean, continuous monitoring, same parallelism: every line exactly once; SP0's assignment check is clean with
  each held file's next line equal to the rows the sink had of it; `guard` calls the restore safe; the audit
  finds each file finished in SP1.
- Rescaled to 1 and to 3: the FileSource redistributes the readers' splits (its reader state is a list state)
  and hands the pending file out on request: every line once, no file read by two subtasks after the restore.
- Bounded (no monitoring), restored at the same parallelism: every line once; the job finishes, and the audit of
  the sink against SP0 shows the lines read after it as `past_savepoint`.
- A file removed between SP0 and the restore, one a reader held or the pending one: `guard` names it
  (`split_file_missing`, an error) before the restore; the restored job fails opening it
  (`FileNotFoundException`) until its restart strategy (3 attempts) gives up, before any checkpoint: nothing read
  after the savepoint reaches the sink.

`make test` runs the clean restore; `make file-source` (marker `flink_file`) all of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.audit.checks.findings import ERROR, FINISHED_PARTITION, INFO, PAST_SAVEPOINT, WARNING
from splitaudit.guard.split_files import SPLIT_FILE_MISSING
from splitaudit.progress import Progress
from splitaudit_lab.scenario.flink_file import (
    REMOVE_HELD,
    REMOVE_PENDING,
    FileSourceRestore,
    FileSourceSettings,
    run_file_source_restore,
)
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration

LINES = 2000


def _truth(result: FileSourceRestore) -> list[tuple[str, int, int, int]]:
    """Per file: sink rows, lines read twice, lines missing (the sink against the files written)."""
    return [(t.path, t.rows, t.read_twice, t.missing) for t in result.truth]


def _assert_every_line_once(result: FileSourceRestore) -> None:
    assert _truth(result) == [(path, LINES, 0, 0) for path in result.input_paths]


def _assert_sp0_matches_the_sink(result: FileSourceRestore) -> None:
    """SP0's assignment: every file of the folder held once; the two files read before the savepoint held by the
    two readers, each resuming at the line after the last one the sink has; the third pending, not started."""
    assert result.assignment_before.findings == ()
    (matrix,) = result.assignment_before.matrices
    held = {
        row.topic: [(h.subtask is None, h.next_offset) for h in row.holders] for row in matrix.partitions
    }  # fmt: skip
    before = {t.path: t.rows_before for t in result.truth}
    started = sorted(path for path, rows in before.items() if rows)
    assert len(started) == 2, before
    assert held == {path: [(False, before[path])] if path in started else [(True, None)] for path in before}
    assert sorted(h.subtask for row in matrix.partitions for h in row.holders if h.subtask is not None) == [0, 1]


def _assert_audit_finished(result: FileSourceRestore) -> None:
    assert result.audit is not None
    assert [(f.kind, f.severity, f.topic, f.partition) for f in result.audit.findings] == [
        (FINISHED_PARTITION, INFO, path, 0) for path in result.input_paths
    ]
    assert result.audit.exit_code == 0
    assert [(c.topic, c.rows, c.distinct, c.missing, c.duplicates) for c in result.audit.coverage] == [
        (path, LINES, LINES, 0, 0) for path in result.input_paths
    ]


def test_a_clean_restore_reads_every_line_once_and_audits_clean(stack: Stack, tmp_path: Path) -> None:
    result = run_file_source_restore(stack, tmp_path / "clean", Progress(), FileSourceSettings())
    _assert_every_line_once(result)
    _assert_sp0_matches_the_sink(result)
    assert (result.guard.safe, result.guard.findings) == (True, ())
    _assert_audit_finished(result)


@pytest.mark.flink_file
@pytest.mark.parametrize("parallelism", [1, 3])
def test_a_rescaled_restore_redistributes_the_splits_without_twins(
    stack: Stack, tmp_path: Path, parallelism: int
) -> None:
    settings = FileSourceSettings(restore_parallelism=parallelism)
    result = run_file_source_restore(stack, tmp_path / f"rescale-{parallelism}", Progress(), settings)
    _assert_every_line_once(result)
    _assert_sp0_matches_the_sink(result)
    # After the restore each file was read on by one subtask of the new job.
    assert all(len(t.restored_subtasks) == 1 for t in result.truth), result.truth
    assert {s for t in result.truth for s in t.restored_subtasks} <= set(range(parallelism))
    _assert_audit_finished(result)


@pytest.mark.flink_file
def test_a_bounded_restore_reads_every_line_once(stack: Stack, tmp_path: Path) -> None:
    settings = FileSourceSettings(monitor_interval_ms=0)
    result = run_file_source_restore(stack, tmp_path / "bounded", Progress(), settings)
    _assert_every_line_once(result)
    _assert_sp0_matches_the_sink(result)
    assert result.restored_state == "FINISHED"
    # No SP1: the sink is judged against SP0 alone, so the lines the restore read of each file a reader held are
    # past SP0's position (a warning: what a restore from SP0 reads again); the pending file has no position.
    assert result.audit is not None
    assert [(f.kind, f.severity, f.topic, f.count, f.offset_ranges) for f in result.audit.findings] == [
        (PAST_SAVEPOINT, WARNING, t.path, LINES - t.rows_before, ((t.rows_before, LINES - 1),))
        for t in result.truth
        if t.rows_before
    ]
    assert result.audit.exit_code == 0


@pytest.mark.flink_file
@pytest.mark.parametrize("remove", [REMOVE_HELD, REMOVE_PENDING])
def test_a_removed_file_is_named_before_the_restore_and_fails_it(stack: Stack, tmp_path: Path, remove: str) -> None:
    settings = FileSourceSettings(remove=remove)
    result = run_file_source_restore(stack, tmp_path / f"removed-{remove}", Progress(), settings)
    _assert_sp0_matches_the_sink(result)
    assert result.removed is not None
    holder = "held by subtask" if remove == REMOVE_HELD else "pending in the enumerator"
    assert not result.guard.safe
    assert [(f.kind, f.severity, f.topic, f.detail.startswith(holder)) for f in result.guard.findings] == [
        (SPLIT_FILE_MISSING, ERROR, result.removed, True)
    ]
    assert result.restored_state == "FAILED"
    assert f"java.io.FileNotFoundException: File {result.removed} does not exist" in result.restored_exception
    # The restored job failed before its first checkpoint, every time: nothing of any file read after the savepoint
    # is in the sink (the job is down, the lines of the other files wait for a restore that works).
    assert [(t.path, t.rows, t.restored_subtasks) for t in result.truth] == [
        (t.path, t.rows_before, ()) for t in result.truth
    ]
