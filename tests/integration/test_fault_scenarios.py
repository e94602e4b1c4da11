"""Records arriving all along, and faults on the real stack, with the reference Beam pipeline.

- Continuous production: a producer thread writes records from the job's start until the restored job runs;
  the first job is cancelled 2 s after its savepoint while records keep arriving, so the restored job reads
  again what the first job read in between. Patched: those re-read offsets are replay, nothing else; stock:
  double assignment on every partition, as with a quiet topic.
- The Kafka broker stopped and started again while the job reads: the same job goes on, nothing lost, no
  restore, so no double assignment with either jar.
- The JobManager killed while the job reads, the cluster started again and the job resubmitted from its latest
  retained checkpoint: a restore, so stock re-initialises its splits and reads every partition twice; patched
  loses nothing and only replays what it read after that checkpoint.

Each run: 4 partitions, parallelism 2, 20,000 records before the interruption (10,000 per partition in all
for the faults). The cases beyond the default suite carry the `faults` marker (`make faults`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from splitaudit.audit.checks.findings import DOUBLE_ASSIGNMENT, REPLAY
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import (
    ScenarioSettings,
    pipeline_jar,
    run_restore_scenario,
)
from splitaudit_lab.scenario.results import BROKER_RESTART, JOBMANAGER_KILL, ScenarioReport
from splitaudit_lab.scenario.sink import read_sink
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration

SETTINGS = ScenarioSettings(partitions=4, records=20_000, parallelism=2)
CONTINUOUS = ScenarioSettings(partitions=4, records=20_000, parallelism=2, continuous=True)
FIRST_PER_PARTITION = SETTINGS.records // SETTINGS.partitions  # offsets 0..4,999 before the interruption


def _continuous(stack: Stack, tmp_path_factory: pytest.TempPathFactory, variant: str) -> ScenarioReport:
    run_dir = tmp_path_factory.mktemp(f"continuous-{variant}") / "run"
    return run_restore_scenario(stack, run_dir, pipeline_jar(variant), variant, Progress(), CONTINUOUS)


def _fault(stack: Stack, tmp_path_factory: pytest.TempPathFactory, variant: str, fault: str) -> ScenarioReport:
    run_dir = tmp_path_factory.mktemp(f"{fault}-{variant}") / "run"
    settings = replace(SETTINGS, fault=fault)
    return run_restore_scenario(stack, run_dir, pipeline_jar(variant), variant, Progress(), settings)


def _duplicated(rows: pa.Table) -> pa.Table:
    """(partition, offset, copies, jobs, readers) of every offset the sink holds more than once."""
    keys = rows.group_by(["partition", "offset"]).aggregate(
        [("job_id", "count"), ("job_id", "count_distinct"), ("reader_id", "count_distinct")]
    )
    return keys.filter(pc.greater(keys["job_id_count"], 1))


def _readers_per_job(rows: pa.Table, duplicated: pa.Table) -> set[int]:
    """How many readers emitted the duplicated offsets of one partition within one job: 1 means no twin."""
    dup_rows = rows.join(duplicated.select(["partition", "offset"]), ["partition", "offset"], join_type="inner")
    per_job = dup_rows.group_by(["job_id", "attempt", "partition"]).aggregate([("reader_id", "count_distinct")])
    return set(per_job["reader_id_count_distinct"].to_pylist())


def _replayed_after_restore(report: ScenarioReport) -> dict[int, int]:
    """Per partition, the offsets the first job emitted at or past the point the restored job started from
    (its lowest offset there): exactly what a correct restore reads twice."""
    rows = read_sink(Path(report.sink_path))
    before = rows.filter(pc.equal(rows["job_id"], report.job_id_before))
    after = rows.filter(pc.equal(rows["job_id"], report.job_id_after))
    replayed = {}
    for p in range(SETTINGS.partitions):
        start = pc.min(after.filter(pc.equal(after["partition"], p))["offset"]).as_py()
        mine = before.filter(pc.and_(pc.equal(before["partition"], p), pc.greater_equal(before["offset"], start)))
        replayed[p] = len(set(mine["offset"].to_pylist()))
    return replayed


def _no_loss_only_replay(report: ScenarioReport, per_partition: int | None) -> None:
    """Every produced offset in the sink, every duplicate a replay (a warning), no double assignment."""
    expected = [p.expected_records for p in report.partitions]
    if per_partition is not None:
        assert expected == [per_partition] * 4
    for counts in report.partitions:
        assert (counts.missing_offsets, counts.double_read_offsets) == (0, 0), counts
        assert counts.sink_rows == counts.expected_records + counts.duplicate_rows, counts
        assert counts.replayed_offsets == counts.duplicate_rows, counts
    assert {f.kind for f in report.audit.findings} <= {REPLAY}
    assert report.audit.exit_code == 0


def test_patched_with_records_arriving_all_along_only_replays(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    report = _continuous(stack, tmp_path_factory, "patched")
    assert report.continuous
    assert report.job_id_before != report.job_id_after
    # 5,000 records per partition first, then the stream (batches of a multiple of 4: the same in each).
    expected = {p.expected_records for p in report.partitions}
    assert len(expected) == 1
    assert expected.pop() > FIRST_PER_PARTITION
    _no_loss_only_replay(report, None)
    # The replays are exactly the offsets the first job read after its savepoint, on every partition.
    replayed = _replayed_after_restore(report)
    assert [p.replayed_offsets for p in report.partitions] == [replayed[p] for p in range(4)]
    assert all(n > 0 for n in replayed.values()), replayed
    rows = read_sink(Path(report.sink_path))
    duplicated = _duplicated(rows)
    # Each re-read offset: twice, once from each job, one reader in each.
    assert set(duplicated["job_id_count"].to_pylist()) == {2}
    assert set(duplicated["job_id_count_distinct"].to_pylist()) == {2}
    assert _readers_per_job(rows, duplicated) == {1}


def test_stock_with_records_arriving_all_along_double_assigns_every_partition(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    report = _continuous(stack, tmp_path_factory, "stock")
    assert report.missing_offsets == 0
    assert report.double_assigned == tuple((report.topics[0], p) for p in range(4))
    assert {f.partition for f in report.audit.findings if f.kind == DOUBLE_ASSIGNMENT} == {0, 1, 2, 3}
    assert all(p.double_read_offsets > 0 for p in report.partitions)
    assert report.audit.exit_code == 1
    rows = read_sink(Path(report.sink_path))
    after = rows.filter(pc.equal(rows["job_id"], report.job_id_after))
    readers = after.group_by(["partition"]).aggregate([("reader_id", "count_distinct")]).sort_by("partition")
    assert readers["reader_id_count_distinct"].to_pylist() == [2, 2, 2, 2]  # the restored split and its twin


def test_patched_after_a_jobmanager_kill_loses_nothing_and_only_replays(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    report = _fault(stack, tmp_path_factory, "patched", JOBMANAGER_KILL)
    assert report.job_id_before != report.job_id_after  # resubmitted: a new job
    assert "/chk-" in report.savepoint_before
    assert report.job_id_before in report.savepoint_before
    _no_loss_only_replay(report, 2 * FIRST_PER_PARTITION)
    rows = read_sink(Path(report.sink_path))
    assert sorted(pc.unique(rows["job_id"]).to_pylist()) == sorted([report.job_id_before, report.job_id_after])
    duplicated = _duplicated(rows)
    assert set(duplicated["job_id_count_distinct"].to_pylist()) <= {2}  # any re-read comes from the new job
    assert _readers_per_job(rows, duplicated) <= {1}
    assert [p.replayed_offsets for p in report.partitions] == [_replayed_after_restore(report)[p] for p in range(4)]


@pytest.mark.faults
def test_stock_after_a_jobmanager_kill_double_assigns_every_partition(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The resubmission from a retained checkpoint is a restore: stock Beam splits again and twins every split.
    report = _fault(stack, tmp_path_factory, "stock", JOBMANAGER_KILL)
    assert [p.expected_records for p in report.partitions] == [2 * FIRST_PER_PARTITION] * 4
    assert report.missing_offsets == 0
    assert report.double_assigned == tuple((report.topics[0], p) for p in range(4))
    assert all(p.double_read_offsets > 0 for p in report.partitions)
    assert report.audit.exit_code == 1


@pytest.mark.faults
@pytest.mark.parametrize("variant", ["patched", "stock"])
def test_a_broker_restart_loses_nothing_and_reads_no_partition_twice(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory, variant: str
) -> None:
    # No restore: the job's Kafka consumers reconnect to the restarted broker and go on from where they were.
    report = _fault(stack, tmp_path_factory, variant, BROKER_RESTART)
    assert report.job_id_before == report.job_id_after
    _no_loss_only_replay(report, 2 * FIRST_PER_PARTITION)
    rows = read_sink(Path(report.sink_path))
    assert pc.unique(rows["job_id"]).to_pylist() == [report.job_id_before]
