"""The changelog state backend's keyed state (savepoint/changelog_backend.py) on the snapshots Flink's own
migration ITCases wrote with it (`flink-tests-1.19.1-tests.jar`): the Scala `StatefulJobSavepointMigrationITCase`
and `StatefulJobWBroadcastStateMigrationITCase` checkpoints of Flink 1.16 and 1.19, whose whole state is the log
(`InMemoryChangelogStateHandle`); and their bytes fuzzed. Taken from the jar at test time, never committed."""

from __future__ import annotations

import random
import shutil
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from splitaudit.errors import InputError
from splitaudit.home import flink_test_corpus
from splitaudit.savepoint.changelog_handles import ChangelogStateBackendHandleImpl, InMemoryChangelogStateHandle
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.keyed import Undecoded
from splitaudit.savepoint.metadata import read_metadata
from splitaudit.savepoint_view import read_keyed_state
from tests.fuzz_savepoints import mutate
from tests.unit.savepoint.test_flink_scala_itcases import CHANGELOG as SNAPSHOTS
from tests.unit.savepoint.test_flink_scala_itcases import expected

pytestmark = pytest.mark.needs_build

JAR = "flink-tests-1.19.1-tests.jar"
KRYO = "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot"


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    target = tmp_path_factory.mktemp("changelog")
    with zipfile.ZipFile(flink_test_corpus() / JAR) as archive:
        wanted = (*SNAPSHOTS, "new-stateful-udf-migration-itcase-flink1.17-hashmap-checkpoint")
        archive.extractall(target, [n for n in archive.namelist() if n.startswith(tuple(f"{w}/" for w in wanted))])
    return {name: target / name for name in wanted}


def test_the_handles_are_the_changelog_backends(folders: dict[str, Path]) -> None:
    """Every keyed handle of these snapshots is a `ChangelogStateBackendHandleImpl` with no materialized part and
    its log inline: one subtask per key group (max parallelism 4, key groups 1-3)."""
    for name in SNAPSHOTS:
        files = SavepointFiles(str(folders[name]))
        handles = [
            subtask.managed_keyed_state
            for operator in read_metadata(files.read_metadata(), files.metadata_path).operators
            for subtask in operator.subtask_states
            if subtask.managed_keyed_state is not None
        ]
        assert handles, name
        for handle in handles:
            assert isinstance(handle, ChangelogStateBackendHandleImpl)
            assert handle.materialized == ()
            assert [type(log) for log in handle.non_materialized] == [InMemoryChangelogStateHandle]
            assert handle.number_of_key_groups == 1
            assert handle.start_key_group in (1, 2, 3)


def test_scala_checkpoints_read_what_decodes(folders: dict[str, Path]) -> None:
    """Each of the four holds 10 states x 4 keys (one per element; key groups 1-3). The log names no key serializer
    (the keys are Kryo's: a `Long` by its default registration, class id 9 then a zigzag varint), so a change's key
    is found as the bytes before the only end that lets the rest of the change read, and kept as bytes (`raw`), its
    value decoded (the Scala serializers, `scalaserializers.py`) and equal to what the ITCase's `StatefulFlatMapper`
    writes for that key (`test_flink_scala_itcases.expected`). In key group 2, which holds keys 0 and 1, key 0's
    change of four states (a case class inside a collection, `Try`, `Option`, `Left`) has more than one such end
    (the key's bytes could run on into the value's): one `unread` entry each says so, the other 36 are decoded."""
    ambiguous = {(state, 2) for state in ("collectionState", "eitherLeftState", "optionState", "tryState")}
    for name in SNAPSHOTS:
        rows = [row.entry for row in read_keyed_state(str(folders[name]))]
        unread = {(entry.state, entry.key_group) for entry in rows if entry.status.startswith("unread")}
        assert unread == ambiguous, name
        decoded = [entry for entry in rows if not entry.status.startswith("unread")]
        assert len(decoded) == 36, name
        for entry in decoded:
            assert entry.status.startswith("raw"), entry  # the key, not the value
            assert isinstance(entry.key, Undecoded), entry
            class_id, key = entry.key.data  # Kryo: id 9 (a Long), a one-byte zigzag varint (the keys are 0..3)
            assert class_id == 9, entry
            key >>= 1
            assert entry.value == expected(key)[entry.state], entry
        for entry in rows:
            if entry.status.startswith("unread"):
                assert entry.status == (
                    f"unread: a SET change of state {entry.state!r} in key group {entry.key_group}: the log names "
                    "no key serializer and the key's end is ambiguous"
                ), entry


FUZZ_CASES = 400


def test_fuzzed_changelog_metadata_reads_or_is_an_input_error(folders: dict[str, Path], tmp_path: Path) -> None:
    """`_metadata` of the changelog snapshots (mostly the inline log: METADATA and data changes) mutated by the
    savepoint fuzzer's byte strategies (flipped, cut, a count made absurd), seeded: every case reads or ends in
    `InputError`, nothing else."""
    outcomes: Counter[str] = Counter()
    names = ("new-stateful-udf-migration-itcase-flink1.17-hashmap-checkpoint", *SNAPSHOTS)
    for seed in range(FUZZ_CASES):
        rng = random.Random(seed)
        case = tmp_path / f"case-{seed}"
        shutil.copytree(folders[names[seed % len(names)]], case)
        mutate(case, rng, rng.choice(("flip", "truncate", "inflate")))
        try:
            sum(1 for _ in read_keyed_state(str(case)))
            outcomes["read"] += 1
        except InputError:
            outcomes["input_error"] += 1
        shutil.rmtree(case)
    assert sum(outcomes.values()) == FUZZ_CASES
    assert outcomes["read"], outcomes
    assert outcomes["input_error"], outcomes
