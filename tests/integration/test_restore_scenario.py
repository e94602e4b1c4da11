"""beam#31313 end to end: the reference Beam pipeline on real Kafka + Flink, restored from a savepoint.

Stock Beam 2.62.0 reads every partition twice after the restore; the patched build, and the stock jar
after `patch-jar`, read every offset exactly once. Each run: 20,000 records before the savepoint and
20,000 after, 4 partitions, parallelism 2 (the issue's scenario).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow.compute as pc
import pytest

from splitaudit.audit.checks.findings import DOUBLE_ASSIGNMENT, REPLAY
from splitaudit.patch.jar import patch_jar
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import (
    ScenarioSettings,
    pipeline_jar,
    run_restore_scenario,
)
from splitaudit_lab.scenario.results import TASKMANAGER_KILL, ScenarioReport
from splitaudit_lab.scenario.sink import read_sink
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration

SETTINGS = ScenarioSettings(partitions=4, records=20_000, parallelism=2)
PER_PARTITION = 2 * SETTINGS.records // SETTINGS.partitions  # offsets 0..9,999 in each partition


def _run(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory, jar: Path, variant: str, restore_jar: Path | None = None
) -> ScenarioReport:
    run_dir = tmp_path_factory.mktemp(variant) / "run"
    return run_restore_scenario(stack, run_dir, jar, variant, Progress(), SETTINGS, restore_jar)


@pytest.fixture(scope="module")
def stock(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> ScenarioReport:
    return _run(stack, tmp_path_factory, pipeline_jar("stock"), "stock")


@pytest.fixture(scope="module")
def patched(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> ScenarioReport:
    return _run(stack, tmp_path_factory, pipeline_jar("patched"), "patched")


@pytest.fixture(scope="module")
def patched_by_tool(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> ScenarioReport:
    jar = tmp_path_factory.mktemp("patch-jar") / "splitaudit-pipeline-stock-patched.jar"
    patch_jar(pipeline_jar("stock"), jar, force=False)
    return _run(stack, tmp_path_factory, jar, "patch-jar")


def test_stock_reads_every_partition_twice_after_the_restore(stock: ScenarioReport) -> None:
    # The restored split and its fresh twin both read the second 20,000 records: 5,000 per partition.
    assert [(p.partition, p.expected_records) for p in stock.partitions] == [(p, PER_PARTITION) for p in range(4)]
    assert [p.sink_rows for p in stock.partitions] == [15_000] * 4
    assert [p.duplicate_rows for p in stock.partitions] == [5_000] * 4
    assert [p.double_read_offsets for p in stock.partitions] == [5_000] * 4
    assert stock.missing_offsets == 0
    # The auditor's verdict: offsets 10,000..19,999 of the topic (5,000..9,999 of each partition) read by two
    # readers of the restored job; the savepoints themselves hold every partition once and never go backwards.
    assert [(f.kind, f.partition, f.count, f.offset_ranges) for f in stock.audit.findings] == [
        (DOUBLE_ASSIGNMENT, p, 5_000, ((5_000, 9_999),)) for p in range(4)
    ]
    assert stock.double_assigned == tuple((stock.topics[0], p) for p in range(4))
    assert stock.audit.exit_code == 1
    rows = read_sink(Path(stock.sink_path))
    after = rows.filter(pc.equal(rows["job_id"], stock.job_id_after))
    # Two different readers emit the same offset within one attempt of the restored job: double assignment.
    assert pc.unique(after["attempt"]).to_pylist() == [0]
    readers = after.group_by(["partition"]).aggregate([("reader_id", "count_distinct")]).sort_by("partition")
    assert readers["reader_id_count_distinct"].to_pylist() == [2, 2, 2, 2]


def _exactly_once(report: ScenarioReport) -> None:
    for counts in report.partitions:
        assert (counts.expected_records, counts.sink_rows) == (PER_PARTITION, PER_PARTITION), counts
        assert (counts.duplicate_rows, counts.missing_offsets, counts.double_read_offsets) == (0, 0, 0), counts
    assert report.audit.findings == ()
    (matrix,) = report.audit.assignment
    assert [(p.partition, p.status, [h.next_offset for h in p.holders]) for p in matrix.partitions] == [
        (p, "ok", [PER_PARTITION]) for p in range(4)
    ]
    rows = read_sink(Path(report.sink_path))
    assert sorted(pc.unique(rows["job_id"]).to_pylist()) == sorted([report.job_id_before, report.job_id_after])
    assert sorted(pc.unique(rows["subtask"]).to_pylist()) == [0, 1]
    before = rows.filter(pc.equal(rows["job_id"], report.job_id_before))
    assert before.num_rows == SETTINGS.records  # everything before the savepoint came from the first job


def test_patched_reads_every_offset_exactly_once(patched: ScenarioReport) -> None:
    _exactly_once(patched)


def test_stock_jar_after_patch_jar_reads_every_offset_exactly_once(patched_by_tool: ScenarioReport) -> None:
    _exactly_once(patched_by_tool)


def test_a_stock_savepoint_restored_into_the_patched_jar_reads_every_offset_once(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The upgrade path: a job running stock Beam is savepointed and restarted from it with the patched jar.
    _exactly_once(_run(stack, tmp_path_factory, pipeline_jar("stock"), "stock-to-patched", pipeline_jar("patched")))


def test_a_patched_savepoint_restores_into_the_stock_jar(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The way back restores too (same serializers); stock then re-splits on restore and reads twice again.
    report = _run(stack, tmp_path_factory, pipeline_jar("patched"), "patched-to-stock", pipeline_jar("stock"))
    assert [(p.sink_rows, p.duplicate_rows, p.double_read_offsets) for p in report.partitions] == [
        (15_000, 5_000, 5_000)
    ] * 4


def test_patched_after_a_taskmanager_kill_only_replays(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> None:
    # kill -9 the TaskManager while the job reads; Flink restarts it from the latest checkpoint (attempt 1).
    run_dir = tmp_path_factory.mktemp("failover") / "run"
    settings = replace(SETTINGS, fault=TASKMANAGER_KILL)
    report = run_restore_scenario(stack, run_dir, pipeline_jar("patched"), "patched", Progress(), settings)
    assert report.job_id_before == report.job_id_after
    assert "/chk-" in report.savepoint_before  # restarted from a checkpoint, not a savepoint
    for counts in report.partitions:
        assert (counts.expected_records, counts.missing_offsets, counts.double_read_offsets) == (PER_PARTITION, 0, 0)
        # Any duplicate is a replay: the same offset once in attempt 0 and once in attempt 1.
        assert counts.replayed_offsets == counts.duplicate_rows, counts
    assert {f.kind for f in report.audit.findings} <= {REPLAY}  # warnings at most: at-least-once replays
    assert report.audit.exit_code == 0
    rows = read_sink(Path(report.sink_path))
    assert sorted(pc.unique(rows["attempt"]).to_pylist()) == [0, 1]
    assert pc.unique(rows["job_id"]).to_pylist() == [report.job_id_before]
