"""Flink's own RocksDB native snapshots (`flink-tests-<v>-tests.jar`: the migration ITCases' NATIVE savepoints and
RocksDB checkpoints, Flink 1.15 to 1.20), read with the state their ITCases check after restoring
(flink_itcases.py). The snapshots are taken from the jars at test time, never committed."""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from splitaudit.home import flink_test_corpus
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import IncrementalRemoteKeyedStateHandle, RelativeFileStateHandle
from splitaudit.savepoint.metadata import operator_id_from_uid, read_metadata
from splitaudit.savepoint.rocksdb.layout import NativeSnapshotReader
from splitaudit.savepoint.rocksdb.merge import merged
from splitaudit.savepoint.rocksdb.snapshot import NativeSnapshot
from tests.unit.savepoint.rocksdb import flink_itcases as itcases

pytestmark = pytest.mark.needs_build

JARS = ("flink-tests-1.19.1-tests.jar", "flink-tests-1.20.1-tests.jar", "flink-tests-2.0.0-tests.jar")
SUFFIXES = ("-rocksdb-savepoint-native/", "-rocksdb-checkpoint/")


def _snapshot_dirs(jar: Path) -> list[str]:
    with zipfile.ZipFile(jar) as archive:
        return sorted(
            {name.split("/")[0] for name in archive.namelist() if any(s in name for s in SUFFIXES) and "/" in name}
        )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Every RocksDB native snapshot and checkpoint of each jar, extracted to a temporary folder."""
    found: dict[str, list[Path]] = {}
    for jar_name in JARS:
        jar = flink_test_corpus() / jar_name
        target = tmp_path_factory.mktemp(jar_name.removesuffix(".jar"))
        with zipfile.ZipFile(jar) as archive:
            members = [n for n in archive.namelist() if any(s in n for s in SUFFIXES)]
            archive.extractall(target, members)
        found[jar_name] = [target / d for d in _snapshot_dirs(jar)]
    return found


def _native_handles(
    snapshot: Path,
) -> Iterator[tuple[str, int, int, IncrementalRemoteKeyedStateHandle, SavepointFiles]]:
    files = SavepointFiles(str(snapshot))
    metadata = read_metadata(files.read_metadata(), files.metadata_path)
    for operator in metadata.operators:
        for subtask in operator.subtask_states:
            handle = subtask.managed_keyed_state
            if isinstance(handle, IncrementalRemoteKeyedStateHandle):
                yield operator.operator_id, operator.max_parallelism, subtask.subtask, handle, files


def _column_family(snapshot: Path, operator_id: str, name: str) -> list[tuple[int, bytes, bytes]]:
    """(key group, key past the prefix, value) of column family `name` over every subtask of the operator."""
    rows = []
    for found_id, max_parallelism, _, handle, files in _native_handles(snapshot):
        if found_id == operator_id:
            reader = NativeSnapshotReader(handle, files, max_parallelism)
            for key_group, key, value in reader.column_family_entries(name):
                rows.append((key_group, key.read_bytes(key.remaining()), value.read_bytes(len(value))))
    return rows


def test_every_native_snapshot_of_the_jars_reads(corpus: dict[str, list[Path]]) -> None:
    """Every RocksDB snapshot folder of the three jars (1.19.1/1.20.1: four ITCases x Flink 1.15-1.19 x savepoint
    and checkpoint + TypeSerializerSnapshotMigrationITCase's two = 42; 2.0.0: two ITCases x 1.15-1.20 x 2 + 2 =
    26) reads to its last entry. The native ones: all but the 1.15 folders (Flink 1.15 wrote both in the
    canonical format, key-group handles), the 1.16 broadcast ITCase's checkpoint (no keyed state) and, in
    1.19.1/1.20.1, the 1.16 Scala ITCase's checkpoint (the changelog backend's handles): 32, 32 and 21."""
    assert [len(corpus[jar]) for jar in JARS] == [42, 42, 26]
    native_per_jar = []
    for jar in JARS:
        native = set()
        for folder in corpus[jar]:
            for _, max_parallelism, _, handle, files in _native_handles(folder):
                native.add(folder)
                reader = NativeSnapshotReader(handle, files, max_parallelism)
                for entry in reader.entries():
                    assert entry.key_group in reader.key_group_range
        assert not any("flink1.15" in folder.name for folder in native)
        native_per_jar.append(len(native))
    assert native_per_jar == [32, 32, 21]


@pytest.mark.parametrize("jar", JARS)
def test_stateful_job_snapshot_migration_itcase(corpus: dict[str, list[Path]], jar: str) -> None:
    """`StatefulJobSnapshotMigrationITCase`'s keyed state, exactly, in every native snapshot of 1.16 - 1.20."""
    snapshots = [s for s in corpus[jar] if s.name.startswith("new-stateful-udf-migration-itcase-flink1.1")]
    snapshots += [s for s in corpus[jar] if s.name.startswith("new-stateful-udf-migration-itcase-flink1.2")]
    native = [s for s in snapshots if "flink1.15" not in s.name]
    assert len(native) == (10 if jar.startswith("flink-tests-2.0") else 8)
    for snapshot in native:
        for uid, kind in itcases.STATEFUL_JOB_UIDS.items():
            operator_id = operator_id_from_uid(uid)
            state = {(key, value) for _, key, value in _column_family(snapshot, operator_id, "state-name")}
            if kind == "flat_map":
                assert state == itcases.flat_map_state(), (snapshot.name, uid)
                continue
            assert state == itcases.timely_state(), (snapshot.name, uid)
            event = {(k, v) for _, k, v in _column_family(snapshot, operator_id, "_timer_state/event_timer")}
            assert event == itcases.event_timers(), (snapshot.name, uid)
            processing = _column_family(snapshot, operator_id, "_timer_state/processing_timer")
            assert {key[8:] for _, key, _ in processing} == itcases.processing_timer_keys()
            assert len(processing) == 4
            assert all(value == b"" for _, _, value in processing)


@pytest.mark.parametrize("jar", JARS)
def test_type_serializer_snapshot_migration_itcase(corpus: dict[str, list[Path]], jar: str) -> None:
    """`TypeSerializerSnapshotMigrationITCase`: `testState` of its one keyed operator, all in key group 0."""
    snapshots = [s for s in corpus[jar] if s.name.startswith("type-serializer-snapshot-migration-itcase-")]
    assert len(snapshots) == 2
    for snapshot in snapshots:
        operator_ids = {operator_id for operator_id, *_ in _native_handles(snapshot)}
        assert len(operator_ids) == 1
        rows = _column_family(snapshot, operator_ids.pop(), "testState")
        assert {key_group for key_group, _, _ in rows} == {0}
        assert {(key, value) for _, key, value in rows} == itcases.type_serializer_state()


def test_rocksdb_itself_agrees_on_every_column_family(corpus: dict[str, list[Path]], tmp_path: Path) -> None:
    """rocksdict (RocksDB's own engine) opens each native snapshot's files under their RocksDB names, read-only:
    every column family it returns holds exactly what the reader merges (these ITCases keep value states and
    timers only: rocksdict has no merge operator and cannot read Flink's list states)."""
    rocksdict = pytest.importorskip("rocksdict")
    compared = 0
    for folder in corpus["flink-tests-2.0.0-tests.jar"]:
        for operator_id, _, subtask, handle, files in _native_handles(folder):
            database = tmp_path / f"{folder.name}-{operator_id}-{subtask}"
            database.mkdir()
            for name, stream, _ in (*handle.shared, *handle.private):
                assert isinstance(stream, RelativeFileStateHandle)
                shutil.copyfile(folder / stream.relative_path, database / name)
            snapshot = NativeSnapshot(handle, files)
            names = rocksdict.Rdict.list_cf(str(database))
            assert names == [family.name for family in snapshot.manifest.column_families]
            options = {name: rocksdict.Options(raw_mode=True) for name in names}
            db = rocksdict.Rdict(
                str(database),
                rocksdict.Options(raw_mode=True),
                column_families=options,
                access_type=rocksdict.AccessType.read_only(),
            )
            try:
                for name in names:
                    family = snapshot.column_family(name)
                    assert family is not None
                    ours = list(merged(family.tables, family.merge_operator, name))
                    assert ours == list(db.get_column_family(name).items()), (folder.name, name)
                    compared += len(ours)
            finally:
                db.close()
    # StatefulJobSnapshotMigrationITCase, 1.16-1.20 x 2 kinds: 2 x 4 values + 2 x (4 values + 8 timers) each;
    # TypeSerializerSnapshotMigrationITCase: 2 x 4 values
    assert compared == 10 * (8 + 24) + 2 * 4


def test_the_options_files_name_flinks_settings(corpus: dict[str, list[Path]]) -> None:
    """Every native snapshot's newest OPTIONS file: FRocksDB 6.20.3 (Flink 1.16-1.20's), and on each column family
    the bytewise comparator, `StringAppendTESTOperator` (Flink's `stringappendtest`), format_version 5, CRC-32C."""
    versions = set()
    for folder in corpus["flink-tests-2.0.0-tests.jar"]:
        for _, _, _, handle, files in _native_handles(folder):
            options = NativeSnapshot(handle, files).read_options()
            assert options is not None
            versions.add(options.rocksdb_version)
            assert {
                (f.comparator, f.merge_operator, f.format_version, f.checksum) for f in options.column_families
            } == {("leveldb.BytewiseComparator", "StringAppendTESTOperator", "5", "kCRC32c")}
    assert versions == {"6.20.3"}
