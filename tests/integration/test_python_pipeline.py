"""The Python Beam pipeline (beam_pipelines/python) on Flink's portable runner, savepointed, restored, audited.

Each run: 4 partitions, 2,000 records before the savepoint and 2,000 after (1,000 offsets per partition in
all), the first job at parallelism 2, the restored one at another. The Python sink has no reader_id/attempt
columns, so the audit counts duplicates without classifying them. The restore to a lower parallelism with
the deprecated read (UnboundedSourceWrapper, beam#25975's path) is in the default suite; the other restores and
the splittable-DoFn read carry the `python_portable` marker (`make python-portable`): the splittable-DoFn read
restores at the same parallelism and at a higher one (as the guard predicts from the savepoint), and Flink refuses
its restore at a lower one (it cannot map the first job's Impulse to the restored job's).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

from splitaudit.audit.checks.assignment import PartitionList, check_assignment
from splitaudit.audit.checks.findings import ERROR, INFO, UNASSIGNED
from splitaudit.audit.checks.rewind import check_rewind
from splitaudit.audit.checks.savepoint_tables import savepoint_tables
from splitaudit.errors import ExternalError
from splitaudit.guard.predict import RESCALE, RESTORE_REFUSED_IMPULSE, run_guard
from splitaudit.guard.results import GuardReport
from splitaudit.home import portable_jars
from splitaudit.progress import Progress
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import IncrementalRemoteKeyedStateHandle
from splitaudit.savepoint.metadata import read_metadata
from splitaudit.savepoint_view import inspect_savepoint
from splitaudit_lab.scenario import portable
from splitaudit_lab.scenario.portable import (
    RETAINED_CHECKPOINT,
    PortableServices,
    PortableSettings,
    run_portable_scenario,
)
from splitaudit_lab.scenario.restore import ScenarioRun, ScenarioSettings
from splitaudit_lab.scenario.results import ScenarioReport
from splitaudit_lab.scenario.sink import read_sink
from splitaudit_lab.stack.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.needs_build]

SETTINGS_RECORDS = 2_000


def _run(stack: Stack, tmp_path: Path, read: str, restore_parallelism: int) -> ScenarioReport:
    settings = ScenarioSettings(
        partitions=4, records=SETTINGS_RECORDS, parallelism=2, restore_parallelism=restore_parallelism
    )
    return run_portable_scenario(stack, tmp_path / "run", Progress(), settings, PortableSettings(read=read))


def _counts(report: ScenarioReport) -> list[tuple[int, int, int, int, int]]:
    return [
        (p.partition, p.expected_records, p.sink_rows, p.duplicate_rows, p.missing_offsets) for p in report.partitions
    ]


def _wrapper_splits(savepoint: str) -> list[tuple[int, int, int]]:
    """(subtask, partition, next offset) of every Kafka partition the savepoint's UnboundedSourceWrapper holds."""
    document: dict[str, Any] = inspect_savepoint(savepoint).to_json()
    held = []
    for operator in document["operators"]:
        for split in (operator.get("source") or {}).get("reader_splits", []):
            assert split["type"] == "beam_unbounded_wrapper"
            for position in split["split"]["checkpoint"]["partitions"]:
                held.append((split["subtask"], position["partition"], position["next_offset"]))
    return sorted(held)


CLEAN = [(partition, 1_000, 1_000, 0, 0) for partition in range(4)]


def test_deprecated_read_restored_at_lower_parallelism(stack: Stack, tmp_path: Path) -> None:
    report = _run(stack, tmp_path, "deprecated", 1)
    # Parallelism 2: subtask 0 holds partitions 0 and 2, subtask 1 partitions 1 and 3, each at offset 500.
    assert _wrapper_splits(report.savepoint_before) == [(0, 0, 500), (0, 2, 500), (1, 1, 500), (1, 3, 500)]
    # Judged from the first savepoint alone, before the restore, with the job server jar as the job jar: every
    # split kept (list state Flink hands out whole), nothing dropped at parallelism 1.
    guard = run_guard(report.savepoint_before, portable_jars()["job-server"], None, 1, Progress())
    assert [(f.kind, f.severity, f.count) for f in guard.findings] == [(RESCALE, INFO, 4)]
    assert guard.safe
    # The one subtask of the restored job took all four: nothing lost, nothing read twice.
    assert _wrapper_splits(report.savepoint_after) == [(0, 0, 1_000), (0, 1, 1_000), (0, 2, 1_000), (0, 3, 1_000)]
    assert _counts(report) == CLEAN


@pytest.mark.python_portable
@pytest.mark.parametrize("restore_parallelism", [2, 3])
def test_deprecated_read_restored_at_same_and_higher_parallelism(
    stack: Stack, tmp_path: Path, restore_parallelism: int
) -> None:
    report = _run(stack, tmp_path, "deprecated", restore_parallelism)
    assert _counts(report) == CLEAN
    # The readers keep their subtasks; at parallelism 3 the third subtask holds no split at all.
    assert _wrapper_splits(report.savepoint_after) == [(0, 0, 1_000), (0, 2, 1_000), (1, 1, 1_000), (1, 3, 1_000)]


def _sdf_restrictions(savepoint: str) -> list[tuple[int, int, int]]:
    """(partition, from, to) of the residual each partition's pending timer resumes, from the savepoint's keyed
    state (the splittable DoFn's `sdf_checkpoint` values; splitaudit/splits/beam_sdf.py)."""
    document: dict[str, Any] = inspect_savepoint(savepoint).to_json()
    held = []
    for operator in document["operators"]:
        for split in (operator.get("source") or {}).get("reader_splits", []):
            assert split["type"] == "beam_kafka_sdf"
            restriction = split["split"]["restriction"]
            held.append((split["split"]["partition"], restriction["from"], restriction["to"]))
    return sorted(held)


LONG_MAX = (1 << 63) - 1  # ReadFromKafkaDoFn's restriction end without a stop


def _before_each_restore(monkeypatch: pytest.MonkeyPatch, judge: Callable[[str, int], None]) -> None:
    """Have `judge(restart point, parallelism)` run just before the scenario submits a restore from it."""
    submit = portable._submit

    def judged_submit(
        run: ScenarioRun, services: PortableServices, settings: PortableSettings, label: str, parallelism: int,
        savepoint: str | None,
    ) -> str:  # fmt: skip
        if savepoint is not None:
            judge(savepoint, parallelism)
        return submit(run, services, settings, label, parallelism, savepoint)

    monkeypatch.setattr(portable, "_submit", judged_submit)


def _restored_reads(report: ScenarioReport) -> dict[int, tuple[int, int, int]]:
    """What the restored job wrote, per partition: (first offset, rows, distinct offsets)."""
    rows = read_sink(Path(report.sink_path)).filter(pc.equal(pc.field("job_id"), "restored"))
    restored = {}
    for partition in range(4):
        offsets = rows.filter(pc.equal(pc.field("partition"), partition)).column("offset").to_pylist()
        restored[partition] = (min(offsets), len(offsets), len(set(offsets)))
    return restored


@pytest.mark.python_portable
def test_sdf_read_restored_at_same_parallelism(stack: Stack, tmp_path: Path) -> None:
    report = _run(stack, tmp_path, "sdf", 2)
    assert _counts(report) == CLEAN
    # The splittable DoFn keeps its Kafka positions as residuals in the keyed state of the stage that runs it:
    # each partition's next offset is what the job had read, 500 before the restore and 1,000 after.
    assert _sdf_restrictions(report.savepoint_before) == [(partition, 500, LONG_MAX) for partition in range(4)]
    assert _sdf_restrictions(report.savepoint_after) == [(partition, 1_000, LONG_MAX) for partition in range(4)]
    listed = PartitionList(frozenset((report.topics[0], p) for p in range(4)), "--partitions 4")
    assert check_assignment(savepoint_tables(report.savepoint_after), listed).findings == ()
    assert check_rewind(savepoint_tables(report.savepoint_before), savepoint_tables(report.savepoint_after)) == ()


@pytest.mark.python_portable
def test_sdf_read_never_reads_partitions_added_while_the_job_was_down(stack: Stack, tmp_path: Path) -> None:
    # KafkaIO's splittable DoFn (no dynamic read) lists the topic's partitions once, from the Impulse's one
    # element; the restored Impulse does not emit again (its `impulse-emitted` state), so partitions added while
    # the job was down get no descriptor: no residual holds them and nothing reads them.
    settings = ScenarioSettings(
        partitions=4, records=SETTINGS_RECORDS, parallelism=2, restore_parallelism=2, added_partitions=2
    )
    report = run_portable_scenario(stack, tmp_path / "run", Progress(), settings, PortableSettings(read="sdf"))
    produced = {p.partition: p.expected_records for p in report.partitions}
    assert sorted(produced) == list(range(6))
    # The four old partitions resume at what was produced to them; the two new ones hold nothing.
    assert _sdf_restrictions(report.savepoint_after) == [(p, produced[p], LONG_MAX) for p in range(4)]
    assert [(p.partition, p.sink_rows, p.missing_offsets) for p in report.partitions if p.partition >= 4] == [
        (4, 0, produced[4]),
        (5, 0, produced[5]),
    ]
    listed = PartitionList(frozenset((report.topics[0], p) for p in range(6)), "--partitions 6")
    findings = check_assignment(savepoint_tables(report.savepoint_after), listed).findings
    assert [(f.kind, f.partition) for f in findings] == [(UNASSIGNED, 4), (UNASSIGNED, 5)]


@pytest.mark.python_portable
def test_sdf_read_restore_at_lower_parallelism_is_refused(stack: Stack, tmp_path: Path) -> None:
    # Beam's portable translator gives its executable stages uids but not the Impulse the splittable DoFn starts
    # from (FlinkStreamingPortablePipelineTranslator.translateImpulse): Flink derives that operator's id from the
    # job graph, and at parallelism 1 the Impulse (parallelism 1, state `impulse-emitted`) chains with the stages
    # after it, so its id changes: the first job's state has no operator to go to, and Flink refuses the restore.
    with pytest.raises(ExternalError, match="Cannot map checkpoint/savepoint state for operator") as refused:
        _run(stack, tmp_path, "sdf", 1)
    # The guard, given the first job's savepoint and the job server jar, said so before the restore was tried,
    # naming the operator Flink could not map.
    [savepoint] = (tmp_path / "run" / "savepoints").glob("savepoint-*")
    guard = run_guard(str(savepoint), portable_jars()["job-server"], None, 1, Progress())
    assert [(f.kind, f.severity, f.count) for f in guard.findings] == [(RESTORE_REFUSED_IMPULSE, ERROR, 4)]
    [impulse] = [op.operator_id for op in inspect_savepoint(str(savepoint)).operators if op.parallelism == 1]
    assert f"Impulse without a uid ({impulse}" in guard.findings[0].detail
    assert impulse in str(refused.value)
    assert not guard.safe


@pytest.mark.python_portable
def test_sdf_read_restored_at_higher_parallelism_as_the_guard_predicted(
    stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2 -> 3: the Impulse runs at parallelism 1 beside stages at 2 and then 3, chained with neither, so its id
    # stays and the guard predicts a rescale: the residuals move with their key groups and every partition resumes
    # where the savepoint holds it. The guard judges the first job's savepoint just before the restore is
    # submitted; the restored job's own rows in the sink then say what it did.
    predictions: list[GuardReport] = []

    def judge(savepoint: str, parallelism: int) -> None:
        predictions.append(run_guard(savepoint, portable_jars()["job-server"], None, parallelism, Progress()))

    _before_each_restore(monkeypatch, judge)
    report = _run(stack, tmp_path, "sdf", 3)
    [guard] = predictions
    assert [(f.kind, f.severity, f.count) for f in guard.findings] == [(RESCALE, INFO, 4)]
    assert "every partition resumes where the savepoint holds it" in guard.findings[0].detail
    assert guard.safe
    predicted = {held.partition: held.next_offset for source in guard.sources for held in source.partitions}
    assert predicted == {partition: 500 for partition in range(4)}
    # What the restored job read: from the held offset to the end of the 1,000, each offset once.
    assert _restored_reads(report) == {partition: (predicted[partition], 500, 500) for partition in range(4)}
    assert _counts(report) == CLEAN
    assert _sdf_restrictions(report.savepoint_after) == [(partition, 1_000, LONG_MAX) for partition in range(4)]


@pytest.mark.python_portable
def test_sdf_read_restored_from_a_retained_incremental_rocksdb_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After a failure users restore from the latest retained checkpoint, and a job with large state runs RocksDB
    # with incremental checkpoints: the splittable DoFn's positions are then in RocksDB's own files (SST tables
    # under the job's shared/ folder, read by splitaudit/savepoint/rocksdb/). The first job (parallelism 2) is
    # cancelled once its 2,000 records are in the sink and a checkpoint covers them; the guard and inspect read
    # that retained chk-N just before the restore at the same parallelism; the restored job's rows then say what
    # it did.
    predictions: list[GuardReport] = []
    held: list[list[tuple[int, int, int]]] = []
    checkpoints: list[str] = []

    def judge(checkpoint: str, parallelism: int) -> None:
        checkpoints.append(checkpoint)
        predictions.append(run_guard(checkpoint, portable_jars()["job-server"], None, parallelism, Progress()))
        held.append(_sdf_restrictions(checkpoint))

    _before_each_restore(monkeypatch, judge)
    settings = ScenarioSettings(partitions=4, records=SETTINGS_RECORDS, parallelism=2, restore_parallelism=2)
    with Stack(tmp_path / "stack", state_backend="rocksdb").running(Progress()) as stack:
        report = run_portable_scenario(
            stack,
            tmp_path / "run",
            Progress(),
            settings,
            PortableSettings(read="sdf", restore_from=RETAINED_CHECKPOINT),
        )
    [checkpoint] = checkpoints
    assert Path(checkpoint.removeprefix("file:")).name.startswith("chk-")
    files = SavepointFiles(checkpoint)
    keyed = [
        subtask.managed_keyed_state
        for operator in read_metadata(files.read_metadata(), files.metadata_path).operators
        for subtask in operator.subtask_states
        if subtask.managed_keyed_state is not None
    ]
    assert keyed
    assert all(isinstance(handle, IncrementalRemoteKeyedStateHandle) for handle in keyed)
    # inspect: every partition's residual, from the 500 offsets each partition held of the first 2,000
    assert held == [[(partition, 500, LONG_MAX) for partition in range(4)]]
    [guard] = predictions
    assert guard.safe
    predicted = {p.partition: p.next_offset for source in guard.sources for p in source.partitions}
    assert predicted == {partition: 500 for partition in range(4)}
    assert _restored_reads(report) == {partition: (predicted[partition], 500, 500) for partition in range(4)}
    assert _counts(report) == CLEAN
