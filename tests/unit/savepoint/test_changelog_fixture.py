"""Checkpoints of our own job on the changelog state backend, read exactly.

fixtures/keyed/1.19.3-changelog-chain/ (fixtures/generate_keyed.py `--cases
changelog-chain,changelog-chain-rocksdb,changelog-chain-snappy`): `KeyedStateChurnJob` on Flink 1.19.3 with
`state.backend.changelog.enabled`, the log on the filesystem (`FsStateChangelogStorage`, files under the job's
`dstl/`), materialized every second while checkpoints come every 300 ms, over the heap backend (`checkpoint/`:
materialized as heap key-group handles), over RocksDB (`checkpoint-rocksdb/`: materialized as incremental native
snapshots, `IncrementalRemoteKeyedStateHandle`, every file inline), and over the heap with the log files Snappy
framed (`checkpoint-snappy/`, `dstl.dfs.compression.enabled`: offsets in the uncompressed stream). Each kept
checkpoint's subtasks hold a materialized snapshot and a log of the rounds after it (values set and cleared, list
appends, map puts and removes, timers added and deleted). `_metadata` names the log files by absolute paths in the
run's folder, so the test puts them back there (`job_dir` of expected.json) while it reads. The State Processor
API cannot read such a checkpoint (its task state manager has no changelog storage: expected.json records its
error), so the reference is the job's own rules (`churn_state`), which the generator checked against every
retained checkpoint of the runs.
"""

from __future__ import annotations

import fcntl
import json
import random
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from fixtures.generate_keyed import canonical, churn_lines, churn_state, splitaudit_lines
from splitaudit.errors import InputError
from splitaudit.savepoint.changelog_handles import ChangelogStateBackendHandleImpl, ChangelogStateHandleStreamImpl
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import IncrementalRemoteKeyedStateHandle, KeyGroupsStateHandle
from splitaudit.savepoint.metadata import operator_id_from_uid, read_metadata
from splitaudit.savepoint.state_change_format import state_changes
from splitaudit.savepoint_view import keyed_reader, read_keyed_state
from tests.fuzz_savepoints import mutate_bytes
from tests.unit.conftest import FIXTURES
from tests.unit.savepoint.test_all_types_fixture import check_all_types_fixture

CHAIN = FIXTURES / "keyed" / "1.19.3-changelog-chain"
LOCK = Path(tempfile.gettempdir()) / "splitaudit-changelog-fixture.lock"
FOLDERS = ("checkpoint", "checkpoint-rocksdb", "checkpoint-snappy")
ALL_TYPES = ("all-types-hashmap", "all-types-rocksdb")
# Per folder: its checkpoint and rounds, each subtask's materialization id and log offsets, and the log's changes by
# operation (0 CLEAR, 1 SET, 3 ADD, 5 ADD_ELEMENT, 6 ADD_OR_UPDATE_ELEMENT, 7 REMOVE_ELEMENT, 8 METADATA)
KEPT: dict[str, dict[str, Any]] = {
    "checkpoint": {
        "checkpoint": 9,
        "rounds": 9,
        "materialized": KeyGroupsStateHandle,
        "materialization_ids": [3, 2],
        "offsets": [[1917], [1718, 0, 0]],
        "operations": {0: 22, 1: 60, 3: 3, 5: 108, 6: 51, 7: 47, 8: 8},
    },
    "checkpoint-rocksdb": {
        "checkpoint": 11,
        "rounds": 11,
        "materialized": IncrementalRemoteKeyedStateHandle,
        "materialization_ids": [3, 3],
        "offsets": [[0, 0], [1628]],
        "operations": {0: 14, 1: 43, 3: 3, 5: 72, 6: 36, 7: 34, 8: 8},
    },
    "checkpoint-snappy": {
        "checkpoint": 11,
        "rounds": 11,
        "materialized": KeyGroupsStateHandle,
        "materialization_ids": [3, 3],
        "offsets": [[0, 3436, 1690], [0, 0]],
        "operations": {0: 26, 1: 73, 3: 4, 5: 128, 6: 61, 7: 57, 8: 8},
    },
}


def expected(folder: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((CHAIN / folder / "expected.json").read_text())
    return document


def snapshot(folder: str) -> Path:
    return CHAIN / folder / str(expected(folder)["snapshot_dir"])


@pytest.fixture(params=FOLDERS)
def folder(request: pytest.FixtureRequest) -> Iterator[str]:
    """A kept checkpoint of the churn job, with its `dstl/` files where `_metadata` names them."""
    with logs_in_place(request.param) as name:
        yield name


@pytest.fixture(params=ALL_TYPES)
def all_types(request: pytest.FixtureRequest) -> Iterator[str]:
    """A kept checkpoint of the all-types job, with its `dstl/` files where `_metadata` names them."""
    with logs_in_place(request.param) as name:
        yield name


@contextmanager
def logs_in_place(name: str) -> Iterator[str]:
    """The `dstl/` files of fixture folder `name` where its `_metadata` names them (the run's job folder), for the
    test's duration; one test process at a time (an exclusive lock on LOCK: another test run on the same machine
    would otherwise remove the folder under this one)."""
    target = Path(expected(name)["job_dir"]) / "dstl"
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = [path for path in (target, *target.parents) if not path.exists()]
        target.mkdir(parents=True, exist_ok=True)
        for log in (CHAIN / name / "dstl").iterdir():
            placed = target / log.name
            if placed.exists():
                assert placed.read_bytes() == log.read_bytes(), f"{placed} is another run's file"
            else:
                shutil.copy2(log, placed)
        try:
            yield name
        finally:
            if missing:
                shutil.rmtree(missing[-1])


def handles(folder: str) -> list[ChangelogStateBackendHandleImpl]:
    files = SavepointFiles(str(snapshot(folder)))
    found = []
    for operator in read_metadata(files.read_metadata(), files.metadata_path).operators:
        for subtask in operator.subtask_states:
            handle = subtask.managed_keyed_state
            if handle is not None:
                assert isinstance(handle, ChangelogStateBackendHandleImpl)
                found.append(handle)
    return found


@pytest.mark.parametrize("name", FOLDERS)
def test_each_subtask_is_a_materialized_snapshot_and_a_log_in_files(name: str) -> None:
    """Tag 14 (`ChangelogStateBackendHandleImpl` with the checkpoint id), one per subtask: the backend's
    materialized handle and one `ChangelogStateHandleStreamImpl` (tag 13) naming change sets in `dstl/` files."""
    kept = KEPT[name]
    found = handles(name)
    assert [(h.tag, h.checkpoint_id, h.start_key_group, h.number_of_key_groups) for h in found] == [
        (14, kept["checkpoint"], 0, 64),
        (14, kept["checkpoint"], 64, 64),
    ]
    assert [h.materialization_id for h in found] == kept["materialization_ids"]
    offsets = []
    for handle in found:
        [materialized] = handle.materialized
        assert isinstance(materialized, kept["materialized"])
        [log] = handle.non_materialized
        assert isinstance(log, ChangelogStateHandleStreamImpl)
        assert log.tag == 13
        offsets.append([offset for _, offset, _ in log.segments])
    assert offsets == kept["offsets"]


def test_the_log_changes_what_was_materialized(folder: str) -> None:
    """The log after the materializations holds every kind of change the job makes (`KEPT`'s counts: CLEAR, SET,
    ADD a list's `addAll`, ADD_ELEMENT list elements and timers, ADD_OR_UPDATE_ELEMENT map puts, REMOVE_ELEMENT map
    removes and timers deleted, and the 4 states' METADATA per subtask); the materialized snapshots alone are not the
    state of the checkpoint."""
    files = SavepointFiles(str(snapshot(folder)), allow_external_state=True)
    operations: Counter[int] = Counter()
    materialized = []
    for handle in handles(folder):
        for log in handle.non_materialized:
            for _, change in state_changes(log, files):
                operations[change.read_unsigned_byte()] += 1
        for part in handle.materialized:
            for e in keyed_reader(part, files, 128).entries():
                named = {"user_key": e.user_key} if e.user_key is not None else {}
                materialized.append(
                    canonical({"key": e.key, "namespace": e.namespace, "state": e.state, "value": e.value, **named})
                )
    assert dict(operations) == KEPT[folder]["operations"]
    assert sorted(materialized) != churn_lines(churn_state(expected(folder)["rounds"]))


def test_every_entry_is_the_one_the_jobs_rules_give(folder: str) -> None:
    """Materialized part and log together: exactly the state after the rounds the source witnessed (computed from
    the job's rules alone), every entry decoded."""
    rounds = expected(folder)["rounds"]
    assert rounds == KEPT[folder]["rounds"]
    state = churn_state(rounds)
    assert expected(folder)["keyed"] == {operator_id_from_uid("churn"): {"uid": "churn", "states": state}}
    assert splitaudit_lines(snapshot(folder), allow_external_state=True) == churn_lines(state)
    rows = list(read_keyed_state(str(snapshot(folder)), uids=["churn"], allow_external_state=True))
    assert {row.entry.status for row in rows} == {"read"}
    assert len(rows) == len(churn_lines(state)) == {9: 376, 11: 424}[rounds]


def test_the_log_files_lie_outside_the_checkpoint(folder: str) -> None:
    """The changelog's files are where `dstl.dfs.base-path` put them, outside `chk-N`: read only when allowed."""
    with pytest.raises(InputError, match="lies outside the savepoint directory; pass --allow-external-state"):
        list(read_keyed_state(str(snapshot(folder))))


def test_a_cut_log_file_is_an_input_error_naming_it(folder: str) -> None:
    """A log file cut short: its change stream is not the size its handle records, an InputError naming the
    file."""
    victim = sorted((Path(expected(folder)["job_dir"]) / "dstl").iterdir())[0]
    original = victim.read_bytes()
    try:
        victim.write_bytes(original[:-10])
        with pytest.raises(InputError, match=victim.name):
            list(read_keyed_state(str(snapshot(folder)), allow_external_state=True))
    finally:
        victim.write_bytes(original)


FUZZ_CASES = 150


def test_fuzzed_log_files_read_or_are_input_errors(folder: str) -> None:
    """The changelog files (`StateChangeFormat`: change sets, METADATA and data changes) mutated by the savepoint
    fuzzer's byte strategies (tests/fuzz_savepoints.py `mutate_bytes`: flipped, cut, a count made absurd), one
    file per seeded case: every case reads or ends in `InputError`, nothing else."""
    logs = sorted((Path(expected(folder)["job_dir"]) / "dstl").iterdir())
    originals = {log: log.read_bytes() for log in logs}
    outcomes: Counter[str] = Counter()
    try:
        for seed in range(FUZZ_CASES):
            rng = random.Random(seed)
            victim = rng.choice(logs)
            mutated = mutate_bytes(originals[victim], rng, rng.choice(("flip", "truncate", "inflate")))
            assert mutated is not None
            victim.write_bytes(mutated[0])
            try:
                sum(1 for _ in read_keyed_state(str(snapshot(folder)), allow_external_state=True))
                outcomes["read"] += 1
            except InputError:
                outcomes["input_error"] += 1
            victim.write_bytes(originals[victim])
    finally:
        for log, data in originals.items():
            log.write_bytes(data)
    assert sum(outcomes.values()) == FUZZ_CASES
    assert outcomes["input_error"], outcomes


def test_every_type_reads_from_the_log_alone(all_types: str) -> None:
    """`AllTypesFixtureJob` on the changelog backend over the heap and over RocksDB, never materialized: its state is
    the log alone (every state's METADATA, a TTL state's `StateTtlConfig` among them, and every change), and reads
    to exactly what `test_all_types_fixture.py` asserts of the job's other snapshots: the POJO, tuple, enum,
    `java.time`, `Date`, array, reducing, aggregating and TTL values, the timers and the window state decoded, the
    Kryo class kept as bytes with its class named."""
    for handle in handles(all_types):
        assert handle.materialized == ()
        [log] = handle.non_materialized
        assert isinstance(log, ChangelogStateHandleStreamImpl)
    check_all_types_fixture(CHAIN / all_types, expected(all_types), allow_external_state=True)
