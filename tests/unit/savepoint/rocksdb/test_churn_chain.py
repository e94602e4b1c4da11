"""An incremental RocksDB checkpoint chain of our own job, read checkpoint by checkpoint.

fixtures/keyed/1.19.3-rocksdb-incremental-chain/checkpoints/ (made by fixtures/generate_keyed.py, `--cases
rocksdb-incremental-chain`): three retained checkpoints of `KeyedStateChurnJob` on Flink 1.19.3's RocksDB backend,
holding 2, 4 and 7 rounds of churn (values overwritten and cleared, list appends, replacements and clears, map
puts and removes, timers registered and deleted), each later one sharing SST files with earlier ones. Every entry
splitaudit reads must be the one the job's rules give for the rounds the source witnessed; the State Processor API
must read the same, entry for entry (the `needs_build` test here; the generator checked it on every retained
checkpoint of the run before keeping three).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from fixtures.generate_keyed import (
    CHAIN_CONF,
    CHAIN_VERSION,
    PROCESSING_TIMERS,
    chain_files,
    churn_lines,
    churn_state,
    flink_classpath,
    run_chain,
    splitaudit_lines,
    state_processor_lines,
)
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import IncrementalRemoteKeyedStateHandle
from splitaudit.savepoint.metadata import operator_id_from_uid, read_metadata
from splitaudit.savepoint_view import read_keyed_state
from tests.unit.conftest import FIXTURES

CHAIN = FIXTURES / "keyed" / "1.19.3-rocksdb-incremental-chain" / "checkpoints"
EXPECTED = json.loads((CHAIN / "expected.json").read_text())
NAMES = sorted(EXPECTED["checkpoints"], key=lambda name: int(name.removeprefix("chk-")))


def test_the_chain_holds_2_4_and_7_rounds() -> None:
    assert [EXPECTED["checkpoints"][name]["rounds"] for name in NAMES] == [2, 4, 7]
    assert (EXPECTED["job"]["rounds"], EXPECTED["job"]["keys"], EXPECTED["job"]["parallelism"]) == (7, 40, 2)


@pytest.mark.parametrize("name", NAMES)
def test_every_entry_is_the_one_the_jobs_rules_give(name: str) -> None:
    checkpoint = EXPECTED["checkpoints"][name]
    state = churn_state(checkpoint["rounds"])
    assert checkpoint["keyed"] == {operator_id_from_uid("churn"): {"uid": "churn", "states": state}}
    assert splitaudit_lines(CHAIN / name) == churn_lines(state)


# Rows per state after 2, 4 and 7 rounds of 40 keys, from the job's rules alone (churn_state): value-state values,
# lists, their elements, map entries, processing-time timers. By hand for the timers of 2 rounds: each round
# touches the 30 keys with (i + r) % 4 != 3; round 1 deletes round 0's timer of the keys it touches with
# (7 i + 3) % 10 >= 7 that round 0 touched too (i = 5, 8, 12, 25, 28, 32): 60 - 6 = 54.
COUNTS = {2: (34, 38, 56, 50, 54), 4: (34, 38, 94, 64, 102), 7: (34, 38, 122, 78, 174)}


@pytest.mark.parametrize("name", NAMES)
def test_exact_counts(name: str) -> None:
    latest, lists, elements, entries, timers = COUNTS[EXPECTED["checkpoints"][name]["rounds"]]
    rows = [row.entry for row in read_keyed_state(str(CHAIN / name), uids=["churn"])]
    assert Counter(entry.state for entry in rows) == {
        "latest": latest,
        "history": lists,
        "seen": entries,
        PROCESSING_TIMERS: timers,
    }
    assert sum(len(entry.value) for entry in rows if entry.state == "history") == elements
    assert {entry.status for entry in rows} == {"read"}


def test_later_checkpoints_share_sst_files_with_earlier_ones() -> None:
    files = {name: chain_files(CHAIN / name) for name in NAMES}
    for name in NAMES:
        recorded = EXPECTED["checkpoints"][name]["subtasks"]
        assert set(files[name]) == set(recorded) == {"0", "1"}
        for subtask, got in files[name].items():
            assert got == {part: recorded[subtask][part] for part in ("sst", "column_families", "entries")}
    first, middle, last = NAMES
    for subtask in ("0", "1"):
        # The same upload (its shared/ file) listed again by the next kept checkpoint: shared, not copied.
        uploads = {name: set(files[name][subtask]["sst"].values()) for name in NAMES}
        assert uploads[first] & uploads[middle]
        assert uploads[middle] & uploads[last]
        for name in NAMES:
            # Older versions hidden by newer ones: deletes, and user keys in more than one table.
            assert files[name][subtask]["entries"]["Delete"] > 0
            assert files[name][subtask]["entries"]["user keys in several tables"] > 0
        # Two flushes, no compaction yet: every column family in two level-0 tables, list appends as merge operands.
        assert {len(tables) for tables in files[first][subtask]["column_families"].values()} == {2}
        assert {level for tables in files[first][subtask]["column_families"].values() for _, level in tables} == {0}
        assert files[first][subtask]["entries"]["Merge"] > 0
        # After compactions (RocksDB's own, level 0 → 1): every column family one level-1 table under three
        # level-0 ones, merge operands over the compacted lists' Puts; most tables uploaded by earlier checkpoints.
        for tables in files[last][subtask]["column_families"].values():
            assert sorted(level for _, level in tables) == [0, 0, 0, 1]
        assert files[last][subtask]["entries"]["Merge"] > 0
        assert len(EXPECTED["checkpoints"][last]["subtasks"][subtask]["reused"]) == 12


@pytest.mark.needs_build
@pytest.mark.parametrize("name", NAMES)
def test_the_state_processor_api_reads_the_same_entries(name: str, tmp_path: Path) -> None:
    # Flink 1.19.3's distribution and flink-state-processor-api 1.19.1 (setup downloads it: `state-processor-api`),
    # the state restored into the RocksDB backend: a fresh JVM per checkpoint, 13-23 s each.
    assert state_processor_lines(CHAIN / name, tmp_path) == splitaudit_lines(CHAIN / name)


@pytest.mark.needs_build
def test_a_chain_with_its_sst_files_in_shared_reads_as_computed(tmp_path: Path) -> None:
    # The same job with every file written out (memory threshold 0), as production checkpoints are: each chk-N's
    # handles name its SST files by absolute paths in the job's shared/ folder, read from there (and only there).
    conf = {
        **CHAIN_CONF,
        "state.storage.fs.memory-threshold": "0",
        "execution.checkpointing.data-inline-threshold": "0",
    }
    job_dir, rounds_at = run_chain(CHAIN_VERSION, flink_classpath(CHAIN_VERSION), tmp_path, conf)
    retained = sorted(int(c.name.removeprefix("chk-")) for c in job_dir.glob("chk-*") if (c / "_metadata").exists())
    assert rounds_at[retained[-1]] == 7
    uploaded: set[str] = set()
    reusing = 0
    for checkpoint_id in retained:
        snapshot = job_dir / f"chk-{checkpoint_id}"
        assert splitaudit_lines(snapshot) == churn_lines(churn_state(rounds_at[checkpoint_id]))
        ssts = {path for subtask in chain_files(snapshot).values() for path in subtask["sst"].values()}
        assert all(path.startswith("shared/") and (job_dir / path).is_file() for path in ssts)
        reusing += bool(ssts & uploaded)
        uploaded |= ssts
    # Checkpoints list files earlier ones uploaded (not every one need: a compaction of every column family
    # between two checkpoints leaves the later one only new files).
    assert reusing > 0
    last = job_dir / f"chk-{retained[-1]}"
    assert state_processor_lines(last, tmp_path / "state-processor") == splitaudit_lines(last)


RESCALED = FIXTURES / "keyed" / "1.19.3-rocksdb-incremental-chain" / "rescaled"
SAVEPOINTS = json.loads((RESCALED / "expected.json").read_text())["savepoints"]


def test_the_first_and_last_checkpoints_were_restored_at_parallelism_3() -> None:
    assert [(s["restored_from"], s["rounds"], s["parallelism"]) for s in SAVEPOINTS] == [
        (f"../checkpoints/{NAMES[0]}", 2, [2, 3]),
        (f"../checkpoints/{NAMES[-1]}", 7, [2, 3]),
    ]


@pytest.mark.parametrize("index", [0, 1], ids=["first", "last"])
def test_a_checkpoint_restored_at_parallelism_3_and_saved_reads_the_same(index: int) -> None:
    # Restored from a checkpoint of the chain (parallelism 2) at parallelism 3, nothing added, saved NATIVE.
    expected = SAVEPOINTS[index]
    savepoint = RESCALED / expected["snapshot_dir"]
    source = CHAIN / expected["restored_from"].removeprefix("../checkpoints/")
    state = churn_state(expected["rounds"])
    assert expected["keyed"] == {operator_id_from_uid("churn"): {"uid": "churn", "states": state}}
    assert splitaudit_lines(savepoint) == splitaudit_lines(source) == churn_lines(state)
    files = SavepointFiles(str(savepoint))
    metadata = read_metadata(files.read_metadata(), files.metadata_path)
    [churn] = [op for op in metadata.operators if op.operator_id == operator_id_from_uid("churn")]
    ranges = []
    for subtask in churn.subtask_states:
        handle = subtask.managed_keyed_state
        assert isinstance(handle, IncrementalRemoteKeyedStateHandle)
        ranges.append((handle.start_key_group, handle.number_of_key_groups))
    assert (churn.parallelism, ranges) == (3, [(0, 43), (43, 43), (86, 42)])
    got = chain_files(savepoint)
    assert got == expected["subtasks"]
    # Each subtask's database is one of the old ones with the key groups it no longer owns cut off by a range
    # deletion per column family, the other's keys added: restored from the first checkpoint (two level-0 tables
    # per column family, nothing compacted since), the old tables are still there, the keys cut off in them too.
    if index == 0:
        for subtask in got.values():
            assert subtask["entries"]["RangeDeletion"] == 5
            assert subtask["entries"]["Merge"] > 0
        # Subtask 0 (key groups 0-42) is old subtask 0's database (0-63) as it was, 21 key groups cut off.
        assert got["0"]["entries"] == {
            **EXPECTED["checkpoints"][NAMES[0]]["subtasks"]["0"]["entries"],
            "RangeDeletion": 5,
        }
        assert sum(subtask["entries"]["Put"] for subtask in got.values()) > sum(
            subtask["entries"]["Put"] for subtask in EXPECTED["checkpoints"][NAMES[0]]["subtasks"].values()
        )
    else:
        assert all(subtask["entries"]["RangeDeletion"] > 0 for subtask in got.values())


@pytest.mark.needs_build
@pytest.mark.parametrize("index", [0, 1], ids=["first", "last"])
def test_the_state_processor_api_reads_the_rescaled_savepoints_the_same(index: int, tmp_path: Path) -> None:
    savepoint = RESCALED / SAVEPOINTS[index]["snapshot_dir"]
    assert state_processor_lines(savepoint, tmp_path, parallelism=3) == splitaudit_lines(savepoint)
