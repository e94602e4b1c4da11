"""Flink's own savepoints and checkpoints (`flink-tests-<v>-tests.jar`), read whole with `read_keyed_state`: the
keyed state each migration ITCase checks after restoring, decoded, in the canonical and heap layouts (the RocksDB
native ones: rocksdb/test_flink_corpus.py); a job's own serializer stepped over in the meta info and its values
kept as bytes (canonical) or reported unread (heap); and no snapshot of the jars stops the read but the changelog
backend's, which reads too (its log applied). Taken from the jars at test time, never committed."""

from __future__ import annotations

import json
import re
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from splitaudit.cli import main
from splitaudit.errors import InputError
from splitaudit.home import flink_test_corpus
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import IncrementalRemoteKeyedStateHandle
from splitaudit.savepoint.keyed import KeyGroupsReader, Undecoded
from splitaudit.savepoint.metadata import operator_id_from_uid, read_metadata
from splitaudit.savepoint_view import keyed_reader, read_keyed_state
from tests.unit.savepoint.rocksdb import flink_itcases as itcases

pytestmark = pytest.mark.needs_build

JARS = ("flink-tests-1.19.1-tests.jar", "flink-tests-1.20.1-tests.jar", "flink-tests-2.0.0-tests.jar")
TEST_SERIALIZER = "org.apache.flink.test.migration.TypeSerializerSnapshotMigrationITCase$TestSerializerSnapshot"
# The snapshot the changelog backend wrote (`ChangelogStateBackendHandleImpl`, its log inline:
# `InMemoryChangelogStateHandle`), in every jar
CHANGELOG = "new-stateful-udf-migration-itcase-flink1.17-hashmap-checkpoint"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Every snapshot folder (a folder holding `_metadata`) of each jar, extracted."""
    found: dict[str, list[Path]] = {}
    for jar_name in JARS:
        target = tmp_path_factory.mktemp(jar_name.removesuffix(".jar"))
        with zipfile.ZipFile(flink_test_corpus() / jar_name) as archive:
            folders = sorted({n.rsplit("/", 1)[0] for n in archive.namelist() if n.endswith("/_metadata")})
            wanted = tuple(f"{folder}/" for folder in folders)
            archive.extractall(target, [n for n in archive.namelist() if n.startswith(wanted)])
        found[jar_name] = [target / folder for folder in folders]
    return found


@pytest.mark.parametrize("jar", JARS)
def test_stateful_job_snapshot_migration_itcase(corpus: dict[str, list[Path]], jar: str) -> None:
    """`StatefulJobSnapshotMigrationITCase` (flink_itcases.py), decoded: `keyBy(0)` keys `Tuple1<Long>` {f0: i},
    value state `state-name` = i (VoidNamespace in the flat maps, namespace i in the timely operators), event-time
    timers at Long.MIN_VALUE + 10 and processing-time timers in namespace i; every entry read whole, in every
    snapshot of Flink 1.8 to 1.20: heap and RocksDB savepoints, canonical and native, heap and RocksDB checkpoints
    (the RocksDB native ones' bytes per column family: rocksdb/test_flink_corpus.py), and the changelog backend's
    1.17 checkpoint, whose log alone holds the state: there the flat maps' keys are their 8 bytes (the log names no
    key serializer, and those operators have no timer state whose `TimerSerializer` would)."""
    folders = [f for f in corpus[jar] if f.name.startswith("new-stateful-udf-migration-itcase-")]
    uids = {operator_id_from_uid(uid): uid for uid in itcases.STATEFUL_JOB_UIDS}
    read = 0
    native = 0
    refused = []
    for folder in folders:
        found: dict[tuple[str, str], set[tuple[object, object, object]]] = {}
        try:
            rows = list(read_keyed_state(str(folder)))
        except InputError as error:
            refused.append(str(error))
            continue
        for row in rows:
            entry = row.entry
            key = entry.key
            if isinstance(key, Undecoded) and folder.name == CHANGELOG:
                assert entry.status == "raw: unknown: a serializer this reader does not know", entry
                assert key == Undecoded("unknown", itcases.long_bytes(entry.value)), entry
                key = {"f0": entry.value}
            else:
                assert entry.status == "read", (folder.name, entry)
            value = "timer" if entry.state == "_timer_state/processing_timer" else entry.value
            found.setdefault((uids[row.operator_id], entry.state), set()).add((key["f0"], entry.namespace, value))
        flat = {(i, None, i) for i in itcases.ELEMENTS}
        timely = {(i, i, i) for i in itcases.ELEMENTS}
        event = {(i, i, -(2**63) + 10) for i in itcases.ELEMENTS}
        processing = {(i, i, "timer") for i in itcases.ELEMENTS}
        # Flink 1.8 and 1.9's RocksDB backend kept timers on the heap (HEAP timer service, its default until 1.10)
        # and wrote them into the raw keyed state stream, which this reader does not read
        timers = not (re.search(r"-flink1\.[89]-", folder.name) and "rocksdb" in folder.name)
        assert found == {
            ("CheckpointingKeyedStateFlatMap1", "state-name"): flat,
            ("CheckpointingKeyedStateFlatMap2", "state-name"): flat,
            **{
                (uid, state): expected
                for uid in ("CheckpointingTimelyStatefulOperator1", "CheckpointingTimelyStatefulOperator2")
                for state, expected in (
                    ("state-name", timely),
                    ("_timer_state/event_timer", event),
                    ("_timer_state/processing_timer", processing),
                )
                if timers or state == "state-name"
            },
        }, folder.name
        read += 1
        native += is_rocksdb_native(folder)
    # 1.19.1/1.20.1: 44 folders (Flink 1.8-1.19), 8 of them RocksDB native (1.16-1.19, a NATIVE savepoint and a
    # checkpoint each); 2.0.0: 50 (1.8-1.20), 10. In each, the 1.17 heap checkpoint is the changelog backend's
    assert (len(folders), read, native) == ((50, 50, 10) if jar.startswith("flink-tests-2.0") else (44, 44, 8))
    assert refused == []


@pytest.mark.parametrize("jar", JARS)
def test_a_jobs_own_serializer_is_stepped_over(corpus: dict[str, list[Path]], jar: str) -> None:
    """`TypeSerializerSnapshotMigrationITCase`'s `testState` is written by the test's own `TestSerializer` (a Long
    in 8 bytes), whose snapshot body the meta info does not delimit: its end is found (the only one that lets the
    rest of the meta info parse to the first key group), the canonical layouts keep each value as its 8 bytes,
    status `raw`, and a heap checkpoint, whose entries have no lengths, reports the state unread."""
    folders = [f for f in corpus[jar] if f.name.startswith("type-serializer-snapshot-migration-itcase-")]
    assert len(folders) == 6
    for folder in folders:
        rows = [row.entry for row in read_keyed_state(str(folder))]
        if folder.name.endswith(("hashmap-checkpoint", "hashmap-savepoint-native")):
            [unread] = rows
            assert (unread.state, unread.key_group, unread.key, unread.value) == ("testState", 0, None, None)
            assert unread.status == (
                "unread: 4 entries of state 'testState' and the rest of key group 0: serializer "
                f"{TEST_SERIALIZER} is unknown, and heap snapshot entries have no lengths"
            )
            continue
        assert {(e.key["f0"], e.value) for e in rows} == {
            (i, Undecoded(TEST_SERIALIZER, itcases.long_bytes(i))) for i in itcases.ELEMENTS
        }, folder.name
        assert {e.status for e in rows} == {f"raw: {TEST_SERIALIZER}: a serializer this reader does not know"}
    files = SavepointFiles(str(next(f for f in folders if f.name.endswith("hashmap-savepoint"))))
    metadata = read_metadata(files.read_metadata(), files.metadata_path)
    [reader] = [
        keyed_reader(s.managed_keyed_state, files, o.max_parallelism)
        for o in metadata.operators
        for s in o.subtask_states
        if s.managed_keyed_state is not None
    ]
    assert isinstance(reader, KeyGroupsReader)
    assert (reader.header.meta_complete, reader.header.stepped_over) == (True, (TEST_SERIALIZER,))


def is_rocksdb_native(folder: Path) -> bool:
    """Whether a snapshot's keyed state is RocksDB's own files (`IncrementalRemoteKeyedStateHandle`)."""
    files = SavepointFiles(str(folder))
    metadata = read_metadata(files.read_metadata(), files.metadata_path)
    return any(
        isinstance(subtask.managed_keyed_state, IncrementalRemoteKeyedStateHandle)
        for operator in metadata.operators
        for subtask in operator.subtask_states
    )


# The snapshots of each jar by what their keyed state gave (docs/inspect.md's table): none, every entry read, some
# kept as bytes (a job's own serializer, a key the changelog backend's log names no serializer for), some unread (a
# heap state of such a serializer, a change of the changelog backend's log whose key and value cannot be told
# apart); none refused; and the rows by status
ROWS = {
    "flink-tests-1.19.1-tests.jar": {"read": 4289, "raw": 168, "unread": 18},
    "flink-tests-1.20.1-tests.jar": {"read": 4289, "raw": 168, "unread": 18},
    "flink-tests-2.0.0-tests.jar": {"read": 1691, "raw": 24, "unread": 2},
}
SURVEY = {
    "flink-tests-1.19.1-tests.jar": {"none": 57, "read": 126, "raw": 5, "unread": 6},
    "flink-tests-1.20.1-tests.jar": {"none": 57, "read": 126, "raw": 5, "unread": 6},
    "flink-tests-2.0.0-tests.jar": {"none": 64, "read": 63, "raw": 5, "unread": 2},
}


@pytest.mark.parametrize("jar", JARS)
def test_nothing_stops_the_read(corpus: dict[str, list[Path]], jar: str) -> None:
    """Every `_metadata` of the jar reads its keyed state to the end, the changelog backend's too; what cannot be
    decoded is in the entries' status."""
    refused: Counter[str] = Counter()
    survey: Counter[str] = Counter()
    rows: Counter[str] = Counter()
    for folder in corpus[jar]:
        statuses = set()
        try:
            for row in read_keyed_state(str(folder)):
                statuses.add(row.entry.status.split(":")[0])
                rows[row.entry.status.split(":")[0]] += 1
        except InputError as error:
            refused["changelog" if "changelog state backend" in str(error) else str(error)] += 1
            statuses.add("refused")
        worst = next((s for s in ("refused", "unread", "raw", "read") if s in statuses), "none")
        survey[worst] += 1
    assert refused == {}
    assert (survey, rows) == (SURVEY[jar], ROWS[jar])


def test_inspect_keyed_counts_each_state(corpus: dict[str, list[Path]]) -> None:
    """`inspect --keyed`: per operator and state, the entries read, kept as bytes and unread, with why; a subtask
    the changelog backend wrote is counted as unread with its error, not a failure of the command. Each
    operator's read is a step on stderr; stdout stays the JSON document."""
    folders = {f.name: f for f in corpus["flink-tests-2.0.0-tests.jar"]}
    heap = folders["type-serializer-snapshot-migration-itcase-flink1.16-hashmap-checkpoint"]
    result = CliRunner().invoke(main, ["--json", "inspect", "--keyed", str(heap)])
    assert result.exit_code == 0, result.output
    [summary] = json.loads(result.stdout)["keyed"]
    [step] = result.stderr.splitlines()
    assert step.startswith(f"✓ read the keyed state of {summary['operator_id']} (1 subtask) (")
    assert {k: summary[k] for k in ("state", "read", "raw", "unread")} == {
        "state": "testState",
        "read": 0,
        "raw": 0,
        "unread": 1,
    }
    assert summary["reasons"] == [
        "4 entries of state 'testState' and the rest of key group 0: serializer "
        f"{TEST_SERIALIZER} is unknown, and heap snapshot entries have no lengths"
    ]
    stateful = folders["new-stateful-udf-migration-itcase-flink1.20-hashmap-savepoint"]
    result = CliRunner().invoke(main, ["--json", "inspect", "--keyed", str(stateful)])
    keyed = json.loads(result.stdout)["keyed"]
    counted = {(s["operator_id"], s["state"]): (s["read"], s["raw"], s["unread"]) for s in keyed}
    assert counted == {
        **{(operator_id_from_uid(uid), "state-name"): (4, 0, 0) for uid in itcases.STATEFUL_JOB_UIDS},
        **{
            (operator_id_from_uid(uid), timers): (4, 0, 0)
            for uid in ("CheckpointingTimelyStatefulOperator1", "CheckpointingTimelyStatefulOperator2")
            for timers in ("_timer_state/event_timer", "_timer_state/processing_timer")
        },
    }
    changelog = folders[CHANGELOG]
    result = CliRunner().invoke(main, ["--json", "inspect", "--keyed", str(changelog)])
    assert result.exit_code == 0, result.output
    counted = {
        (s["operator_id"], s["state"]): (s["read"], s["raw"], s["unread"]) for s in json.loads(result.stdout)["keyed"]
    }
    assert counted == {
        **{
            (operator_id_from_uid(uid), "state-name"): (0, 4, 0)
            for uid in ("CheckpointingKeyedStateFlatMap1", "CheckpointingKeyedStateFlatMap2")
        },
        **{
            (operator_id_from_uid(uid), state): (4, 0, 0)
            for uid in ("CheckpointingTimelyStatefulOperator1", "CheckpointingTimelyStatefulOperator2")
            for state in ("state-name", "_timer_state/event_timer", "_timer_state/processing_timer")
        },
    }
