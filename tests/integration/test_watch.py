"""`splitaudit watch` on real restored jobs: it stops stock Beam 2.62.0 re-reading every partition, and stays
silent over the patched jar's restore."""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.guard.watch import READ_MORE_THAN_ADVANCED, READ_MORE_THAN_AVAILABLE, READ_TWICE
from splitaudit_lab.scenario.restore import ScenarioSettings, pipeline_jar
from splitaudit_lab.scenario.watched import WatchedCase, run_guarded_restore, run_watched_restore
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration

SETTINGS = ScenarioSettings(records=2_000)  # 500 per partition before the savepoint, 500 more while down
# Each subtask reads 200 records/s: the restored backlog takes seconds, as for a job doing work per record.
PACED = ScenarioSettings(records=2_000, records_per_second=200)


def test_watch_stops_the_stock_restored_job_before_its_backlog_is_read(stack: Stack, tmp_path: Path) -> None:
    jar = pipeline_jar("stock")
    result = run_watched_restore(WatchedCase(stack, tmp_path / "run", jar, "stock", PACED), "cancel", probe=10.0)
    findings = [event.finding for event in result.watch.events if event.finding.kind != READ_TWICE]
    # Twin readers: by a poll they had read more of a partition than a checkpoint after it had advanced it, or (when
    # the probe's checkpoints complete later than the readers cross the backlog's end, a race seen once in CI)
    # more than the partition holds past the restored offset. Either proves two readers; which fires first is timing.
    assert findings
    assert {f.kind for f in findings} <= {READ_MORE_THAN_ADVANCED, READ_MORE_THAN_AVAILABLE}
    assert {f.partition for f in findings} <= {0, 1, 2, 3}
    # Cancelled while its readers read: the final tally of every partition is a lower bound, and says why.
    assert [t.partition for t in result.watch.tally] == [0, 1, 2, 3]
    assert all(not t.exact and t.why and "counts changed" in t.why for t in result.watch.tally)
    assert (result.watch.action, result.watch.job_state, result.watch.exit_code) == ("cancel", "CANCELED", 1)
    # Seconds from submitting the restore: listed, every vertex running, first records read, finding, cancelled.
    stages = [v for v in result.since_restore.values() if v is not None]
    assert len(stages) == 5
    assert stages == sorted(stages)
    assert stages[0] > 0
    # Stopped before the two readers of each partition had both read its 500 backlog records; what they read, both
    # read.
    assert 0 < result.read_twice <= result.restored_offsets < 2_000


def test_watch_is_silent_over_the_patched_restore(stack: Stack, tmp_path: Path) -> None:
    jar = pipeline_jar("patched")
    # Checkpoints triggered after every poll of the first 10 s of reading prove one reader each time.
    result = run_watched_restore(
        WatchedCase(stack, tmp_path / "run", jar, "patched", PACED), watch_seconds=20.0, probe=10.0
    )
    assert (result.watch.events, result.watch.action, result.watch.exit_code) == ((), "none", 0)
    assert [(t.partition, t.read_twice) for t in result.watch.tally] == [(p, 0) for p in range(4)]
    assert result.watch.polls >= 40
    assert (result.restored_offsets, result.read_twice) == (2_000, 0)


def test_scenario_guard_refuses_the_stock_restore(stack: Stack, tmp_path: Path) -> None:
    jar = pipeline_jar("stock")
    result = run_guarded_restore(WatchedCase(stack, tmp_path / "run", jar, "stock", SETTINGS), force=False)
    assert (result.restore, result.exit_code, result.guard.safe) == (None, 1, False)
    rereads = [(f.kind, f.partition, f.count, f.offset_ranges) for f in result.guard.errors]
    assert rereads == [("restore_rereads_partition", p, 500, ((500, 999),)) for p in range(4)]
