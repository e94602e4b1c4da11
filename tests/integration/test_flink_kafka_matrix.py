"""The KafkaSource matrix: the Flink-native DataStream and SQL jobs of beam_pipelines/java/flink-jobs built for each
flink-connector-kafka release (3.3.0-1.19, 3.4.0-1.20, 4.0.1-2.0, 5.0.0-2.1, 5.0.0-2.2;
`splitaudit_lab.stack.kafka_matrix`) and run on a stack of the matching Flink (the stack's own 1.19.3; 1.20.3, 2.0.1,
2.1.1, 2.2.1, each from `splitaudit setup --matrix`), with `guard`'s prediction, the audit's findings and the
watch's verdict (its findings and its final tally in positions) asserted per partition and offset range against the
truth the sink measures. tests/integration/test_flink_kafka_source.py has the other restores of the stack's pair.

Per release, on one stack of its Flink (a topic of 2 partitions, 200 records, parallelism 2, as there), each job
followed by `splitaudit watch` (`--on-error report`, `--bootstrap`): the restored one from its submission, the one
that grows while running (not restored: `--job` alone) from once it runs, both to their end:

- a clean restore from a savepoint SP0, the DataStream and the SQL job: every offset once, guard `lag` only, the
  audit clean;
- 2 partitions added while the job runs with periodic discovery off: never read (50 offsets missing from each),
  the audit's `partition_unassigned`, the guard on SP1 `partition_discovered_on_restore` (a restart reads them);
  SP1's enumerator state is the release's serializer version, 3 on connector 5.0.0 with every assigned
  partition's split in it (FLINK-38453);
- a restore from parallelism 2 to 3 (4 partitions): which reader holds what after it, and the guard's `rescale`
  naming the jar fact that decided (FLINK-39980's split reassignment on recovery, Flink 2.2).

`make flink-matrix` runs it (marker `flink_kafka`); none of it is in `make test`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from splitaudit.audit.checks.findings import ERROR, INFO, LAG, UNASSIGNED
from splitaudit.guard.positions import NOT_READ, READ
from splitaudit.guard.predict import DISCOVERED_ON_RESTORE, RESCALE
from splitaudit.guard.watch.kafka_source import PARTITION_NOT_READ
from splitaudit.home import flink_home
from splitaudit.progress import Progress
from splitaudit.savepoint_view import inspect_savepoint
from splitaudit.splits.kafka import KafkaEnumeratorState, KafkaPartitionSplit
from splitaudit_lab.scenario.flink_kafka import (
    DISCOVERY_DISABLED,
    KafkaSourceRestore,
    run_kafka_source_grown_while_running,
    run_kafka_source_restore,
)
from splitaudit_lab.scenario.restore import ScenarioSettings
from splitaudit_lab.stack.kafka_matrix import KAFKA_SOURCE_MATRIX, ConnectorRelease
from splitaudit_lab.stack.stack import Stack
from tests.integration.kafka_source_rows import FindingRow, assert_clean_restore, finding_rows, truth

pytestmark = [pytest.mark.integration, pytest.mark.needs_build, pytest.mark.flink_kafka]

RELEASES = KAFKA_SOURCE_MATRIX
CLEAN = ScenarioSettings(partitions=2, records=200, parallelism=2)
GROWN = ScenarioSettings(partitions=2, records=200, parallelism=2, added_partitions=2)
RESCALED = ScenarioSettings(partitions=4, records=400, parallelism=2, restore_parallelism=3)
# KafkaSourceEnumStateSerializer.CURRENT_VERSION of each connector release (splitaudit/splits/FORMAT.md)
ENUM_STATE_VERSION = {"3.3.0": 2, "3.4.0": 2, "4.0.1": 2, "5.0.0": 3}
EARLIEST_OFFSET = -2  # KafkaPartitionSplit.EARLIEST_OFFSET: OffsetsInitializer.earliest() leaves it to the reader
NO_STOPPING_OFFSET = -(2**63)
PositionRow = tuple[int, int | None, int | None, tuple[int, int] | None, tuple[int, int] | None, str]


@dataclass(frozen=True)
class MatrixStack:
    """One release of the matrix and the running stack of its Flink."""

    release: ConnectorRelease
    stack: Stack


@pytest.fixture(scope="module", params=RELEASES, ids=[release.label for release in RELEASES])
def matrix(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MatrixStack]:
    """A Kafka broker and a cluster of the release's Flink, shared by the release's tests."""
    release: ConnectorRelease = request.param
    missing = [
        str(path)
        for path in (flink_home(release.flink) / "bin" / "jobmanager.sh", release.datastream_job, release.sql_job)
        if not path.is_file()
    ]
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: run `splitaudit setup --matrix`")
    workdir = tmp_path_factory.mktemp(f"stack-{release.flink}")
    with Stack(workdir, flink_version=release.flink).running(Progress()) as stack:
        yield MatrixStack(release, stack)


def _watch(result: KafkaSourceRestore) -> tuple[list[FindingRow], int, list[PositionRow]]:
    """The watch's verdict: its findings' final figures, its exit code, and its final tally in positions, per
    partition (partition, restored, last read, range read, expected range, verdict)."""
    watch = result.watch
    assert watch is not None
    assert watch.tally == ()  # a KafkaSource reports positions, not Beam's counts
    positions = [(p.partition, p.restored, p.last_read, p.read, p.expected, p.verdict) for p in watch.positions]
    return finding_rows(watch.findings), watch.exit_code, positions


def _enumerator(savepoint: str) -> KafkaEnumeratorState:
    """The KafkaSource enumerator state of a savepoint's one source operator."""
    (source,) = [op.source for op in inspect_savepoint(savepoint).operators if op.source is not None]
    assert source.enumerator is not None
    state = source.enumerator.state
    assert isinstance(state, KafkaEnumeratorState)
    return state


def _holders(savepoint: str) -> list[tuple[int, int, int]]:
    """(partition, subtask, starting offset) of every reader split a savepoint holds."""
    (source,) = [op.source for op in inspect_savepoint(savepoint).operators if op.source is not None]
    splits = [(split.subtask, split.state) for split in source.reader_splits]
    return sorted(
        (state.partition, subtask, state.starting_offset)
        for subtask, state in splits
        if isinstance(state, KafkaPartitionSplit)
    )


@pytest.mark.parametrize("sql", [False, True], ids=["datastream", "sql"])
def test_a_clean_restore_is_clean_to_guard_and_audit(matrix: MatrixStack, tmp_path: Path, sql: bool) -> None:
    release = matrix.release
    jar = release.sql_job if sql else release.datastream_job
    result = run_kafka_source_restore(
        matrix.stack, tmp_path / "clean", Progress(), CLEAN, DISCOVERY_DISABLED, jar, watched=True
    )
    assert_clean_restore(result)
    # The watch: silent; the restored job read each partition from SP0's 100 to its end once, as its positions say.
    assert result.rows == ((0, 100, 100, 199), (1, 100, 100, 199))
    assert _watch(result) == ([], 0, [(p, 100, 199, (100, 199), (100, 199), READ) for p in (0, 1)])


@pytest.mark.parametrize("sql", [False, True], ids=["datastream", "sql"])
def test_partitions_added_while_running_with_discovery_disabled_are_never_read(
    matrix: MatrixStack, tmp_path: Path, sql: bool
) -> None:
    release = matrix.release
    jar = release.sql_job if sql else release.datastream_job
    result = run_kafka_source_grown_while_running(
        matrix.stack, tmp_path / "grown-running", Progress(), GROWN, DISCOVERY_DISABLED, jar, watched=True
    )
    assert truth(result) == [(0, 150, 150, 0, 0), (1, 150, 150, 0, 0), (2, 50, 0, 0, 50), (3, 50, 0, 0, 50)]
    # The watch of the running job (no savepoint: from earliest, the log start): p0, p1 read 0..149, the added
    # p2 and p3 never held, their 50 records each never read.
    assert result.rows == ((0, 150, 0, 149), (1, 150, 0, 149))
    assert _watch(result) == (
        [(PARTITION_NOT_READ, ERROR, p, 50, ((0, 49),)) for p in (2, 3)],
        1,
        [(p, None, 149, (0, 149), (0, 149), READ) for p in (0, 1)]
        + [(p, None, None, None, (0, 49), NOT_READ) for p in (2, 3)],
    )
    assert finding_rows(result.run.audit.findings) == [(UNASSIGNED, ERROR, p, 0, ()) for p in (2, 3)]
    assert result.run.audit.exit_code == 1
    assert finding_rows(result.guard.findings) == [
        (DISCOVERED_ON_RESTORE, INFO, 2, 50, ((0, 49),)),
        (DISCOVERED_ON_RESTORE, INFO, 3, 50, ((0, 49),)),
    ]
    # SP1's enumerator: the release's serializer version; 5.0.0 (FLINK-38453) keeps each assigned partition's split
    # as it was assigned (from earliest: the reader resolves it), the older releases the partition alone.
    state = _enumerator(result.run.savepoint_after)
    version = ENUM_STATE_VERSION[release.connector.split("-")[0]]
    split = (EARLIEST_OFFSET, NO_STOPPING_OFFSET) if version == 3 else None
    assert (state.version, state.initial_discovery_finished) == (version, True)
    assert [
        (a.partition, a.status, None if a.split is None else (a.split.starting_offset, a.split.stopping_offset))
        for a in state.partitions
    ] == [(0, "ASSIGNED", split), (1, "ASSIGNED", split)]


def test_a_restore_at_another_parallelism_reads_every_split_once(matrix: MatrixStack, tmp_path: Path) -> None:
    """4 partitions read at parallelism 2, restored at 3 (FLINK-39980 on 2.2: who hands the restored splits out)."""
    release = matrix.release
    result = run_kafka_source_restore(
        matrix.stack, tmp_path / "rescaled", Progress(), RESCALED, DISCOVERY_DISABLED, release.datastream_job, True
    )
    assert truth(result) == [(p, 200, 200, 0, 0) for p in range(4)], truth(result)
    # The watch of the restored job at 3: silent, each partition read from SP0's 100 to its end.
    assert result.rows == tuple((p, 100, 100, 199) for p in range(4))
    assert _watch(result) == ([], 0, [(p, 100, 199, (100, 199), (100, 199), READ) for p in range(4)])
    # SP0: two splits per reader, at 100 (the owner rule of KafkaSourceEnumerator depends on the topic's hash).
    before = {p: (subtask, offset) for p, subtask, offset in _holders(result.run.savepoint_before)}
    kept, moved = (sorted(p for p, (subtask, _) in before.items() if subtask == s) for s in (0, 1))
    assert (len(kept), len(moved), {offset for _, offset in before.values()}) == (2, 2, {100})
    # SP1 at 3: Flink cut the readers' split list (subtask 0's, then 1's) into 2, 1, 1 (its round-robin operator
    # state repartitioning): subtask 0 kept both, subtasks 1 and 2 one each of subtask 1's, in the order subtask 1's
    # state listed them (p0 before p2 on 1.20.3 and 2.0.1, p2 before p0 with connector 5.0.0 on 2.1.1).
    after = {p: (subtask, offset) for p, subtask, offset in _holders(result.run.savepoint_after)}
    assert {p: after[p] for p in kept} == {p: (0, 200) for p in kept}
    assert sorted(after[p] for p in moved) == [(1, 200), (2, 200)]
    assert result.guard.safe
    rescale, *lag = result.guard.findings
    assert finding_rows((rescale,)) == [(RESCALE, INFO, None, 4, ())]
    decided = "decided by the jar: its org/apache/flink/connector/kafka/source/KafkaSource.class does not implement"
    assert f"{decided} SupportsSplitReassignmentOnRecovery" in rescale.detail
    assert finding_rows(tuple(lag)) == [(LAG, INFO, p, 100, ((100, 199),)) for p in range(4)]
    assert result.run.audit.findings == ()
