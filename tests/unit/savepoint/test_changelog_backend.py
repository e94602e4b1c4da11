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

pytestmark = pytest.mark.needs_build

JAR = "flink-tests-1.19.1-tests.jar"
KRYO = "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot"
# The ten value states of the Scala ITCases' keyed operators (`StatefulJobSavepointMigrationITCase.scala`)
SCALA_STATES = (
    "caseClassState",
    "caseClassWithNestingState",
    "collectionState",
    "eitherLeftState",
    "eitherRightState",
    "enumOneState",
    "optionNoneState",
    "optionState",
    "tryFailureState",
    "tryState",
)
SNAPSHOTS = (
    "stateful-scala-udf-migration-itcase-flink1.16-rocksdb-checkpoint",
    "stateful-scala-udf-migration-itcase-flink1.19-hashmap-checkpoint",
    "stateful-scala-with-broadcast-udf-migration-itcase-flink1.16-hashmap-checkpoint",
    "stateful-scala-with-broadcast-udf-migration-itcase-flink1.19-hashmap-checkpoint",
)


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
    """What decodes today (the Scala serializers are another piece of work), in each of the four: 10 states x 4
    keys (one per element; key groups 1-3). The log names no key serializer (the keys are Kryo's: a `Long` by its
    default registration), so a change's key is found as the bytes before the only end that lets the rest of the
    change read: found for `enumOneState`, whose Scala enumeration value decodes (`raw`: the key kept as its bytes,
    the value decoded); for the other nine the value serializer (case class, Option, Either, Try, collection) is not
    decoded either, no end can be told, and each change is one `unread` entry saying so."""
    for name in SNAPSHOTS:
        rows = [row.entry for row in read_keyed_state(str(folders[name]))]
        by_state = Counter((entry.state, entry.status.split(":")[0]) for entry in rows)
        assert by_state == {
            **{(state, "unread"): 4 for state in SCALA_STATES if state != "enumOneState"},
            ("enumOneState", "raw"): 4,
        }, name
        enum = [entry for entry in rows if entry.state == "enumOneState"]
        assert sorted(entry.key_group for entry in enum) == [1, 2, 2, 3], name
        assert {entry.value for entry in enum} <= {"ONE", "TWO", "THREE"}, name
        for entry in enum:
            assert isinstance(entry.key, Undecoded), entry
            assert entry.key.data[:1] == b"\t", entry  # Kryo: the class id of its default-registered Long
        for entry in rows:
            if entry.state != "enumOneState":
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
