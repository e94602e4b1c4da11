"""The Scala migration ITCases' snapshots in flink-tests 1.19.1 / 1.20.1 (`stateful-scala-udf-migration-itcase-*`,
`stateful-scala-with-broadcast-udf-migration-itcase-*`, written by Flink 1.8 to 1.19 with the heap and RocksDB
backends: canonical savepoints, heap checkpoints, RocksDB native savepoints and checkpoints), read through
`read_keyed_state` and compared with the state the ITCases' `StatefulFlatMapper` writes (apache/flink release-1.19.1,
flink-tests/src/test/scala/org/apache/flink/api/scala/migration/StatefulJobSavepointMigrationITCase.scala and
StatefulJobWBroadcastStateMigrationITCase.scala): parallelism and max parallelism 4, `CheckpointedSource` emits
`(i, i)` for i in 0..3, keyed by `_._1`, a `Long` the Scala API serializes with Kryo (the key's type is `Object`).
For each element the mapper updates, for its key i:

- `caseClassState`: `CustomCaseClass(i.toString, i * 2)`; `caseClassWithNestingState`:
  `CustomCaseClassWithNesting(i, CustomCaseClass(i.toString, i * 2))`; `collectionState`: `List(CustomCaseClass(...))`;
- `tryState`: `Try(CustomCaseClass(i.toString, i * 5))`, a Success; `tryFailureState`: `Failure(new
  RuntimeException)`: its Throwable is Kryo's, the class by name then Java serialization (no message);
- `optionState`: `Some(CustomCaseClass(i.toString, i * 2))`; `optionNoneState`: `None`;
- `eitherLeftState`: `Left(CustomCaseClass(i.toString, i * 2))`; `eitherRightState`: `Right((i * 3).toString)`;
- `enumOneState`: `CustomEnum.ONE` then `CustomEnum.THREE`; `enumThreeState` is never updated (no entry).
"""

from __future__ import annotations

import collections
import random
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from splitaudit.errors import InputError
from splitaudit.home import flink_test_corpus
from splitaudit.savepoint.keygroups import key_group_of
from splitaudit.savepoint.typeserializers import LONG
from splitaudit.savepoint_view import read_keyed_state
from tests.unit.savepoint.test_flink_itcases import is_rocksdb_native

pytestmark = pytest.mark.needs_build

JARS = ("flink-tests-1.19.1-tests.jar", "flink-tests-1.20.1-tests.jar")
PREFIX = "stateful-scala-"
MIGRATION = "org.apache.flink.api.scala.migration."
KEYS = range(4)
# Their checkpoints the changelog backend wrote: a log whose keys name no serializer (test_changelog_backend.py)
CHANGELOG = (
    "stateful-scala-udf-migration-itcase-flink1.16-rocksdb-checkpoint",
    "stateful-scala-udf-migration-itcase-flink1.19-hashmap-checkpoint",
    "stateful-scala-with-broadcast-udf-migration-itcase-flink1.16-hashmap-checkpoint",
    "stateful-scala-with-broadcast-udf-migration-itcase-flink1.19-hashmap-checkpoint",
)


def _case_class(i: int, factor: int) -> dict[str, Any]:
    return {"@class": MIGRATION + "CustomCaseClass", "fields": [str(i), i * factor]}


def expected(i: int) -> dict[str, Any]:
    """The decoded value of each state the mapper updates, for key i."""
    return {
        "caseClassState": _case_class(i, 2),
        "caseClassWithNestingState": {
            "@class": MIGRATION + "CustomCaseClassWithNesting",
            "fields": [i, _case_class(i, 2)],
        },
        "collectionState": [_case_class(i, 2)],
        "tryState": {"success": _case_class(i, 5)},
        "optionState": {"some": _case_class(i, 2)},
        "optionNoneState": None,
        "eitherLeftState": {"left": _case_class(i, 2)},
        "eitherRightState": {"right": str(i * 3)},
        "enumOneState": "THREE",
        "tryFailureState": {"failure": {"@class": "java.lang.RuntimeException", "message": None}},
    }


@pytest.fixture(scope="module", params=JARS)
def snapshots(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The Scala ITCases' snapshot folders of one jar, extracted."""
    target = tmp_path_factory.mktemp(request.param.removesuffix(".jar"))
    with zipfile.ZipFile(flink_test_corpus() / request.param) as archive:
        names = [name for name in archive.namelist() if name.startswith(PREFIX)]
        archive.extractall(target, names)
        folders = sorted({name.rsplit("/", 1)[0] for name in names if name.endswith("/_metadata")})
    return [target / folder for folder in folders]


def _is_heap(folder: Path) -> bool:
    """A snapshot in the heap backend's own layout (entries without lengths): its checkpoints and native
    savepoints, and its savepoints before Flink 1.13's canonical format."""
    match = re.search(r"-flink1\.(\d+)-(\w+)-(.+)$", folder.name)
    assert match is not None, folder.name
    minor, backend, kind = int(match.group(1)), match.group(2), match.group(3)
    return backend != "rocksdb" and (kind != "savepoint" or minor < 13)


def test_every_entry_is_the_state_the_itcase_wrote(snapshots: list[Path]) -> None:
    """Every entry is decoded and equals what the mapper wrote for its key, in the key group Flink assigns that key:
    all 40 entries (4 keys x 10 states) of every snapshot, heap, canonical or RocksDB native (the changelog
    backend's four, whose log names no key serializer, are test_changelog_backend.py's)."""
    kinds: collections.Counter[str] = collections.Counter()
    for folder in snapshots:
        if folder.name in CHANGELOG:
            kinds["changelog"] += 1
            continue
        entries = [row.entry for row in read_keyed_state(str(folder))]
        seen: set[tuple[str, int]] = set()
        for entry in entries:
            assert entry.key_group == key_group_of(entry.key, LONG, 4), (folder.name, entry)
            assert entry.namespace is None  # VoidNamespace
            seen.add((entry.state, entry.key))
            assert (entry.status, entry.value) == ("read", expected(entry.key)[entry.state]), (folder.name, entry)
        assert len(entries) == len(seen) == 40, folder.name
        assert seen == {(state, key) for key in KEYS for state in expected(0)}
        kinds["heap" if _is_heap(folder) else "canonical or RocksDB"] += 1
        kinds["of which RocksDB native"] += is_rocksdb_native(folder)
    assert kinds == {"canonical or RocksDB": 43, "of which RocksDB native": 15, "heap": 27, "changelog": 4}


def test_mutated_scala_snapshots_fail_only_with_input_error(snapshots: list[Path], tmp_path: Path) -> None:
    """Fuzzing of the Kryo and Scala decoders and the heap search on these snapshots: a heap checkpoint's and a
    canonical savepoint's state files and `_metadata`, a few bytes flipped or cut (seeded), 24 cases: each reads
    or raises InputError, nothing else (a longer run, 600 cases, ended the same way: 432 InputError, 168 read)."""
    rng = random.Random(1)
    outcomes: collections.Counter[str] = collections.Counter()
    udf = "stateful-scala-udf-migration-itcase-flink"
    chosen = [f for f in snapshots if f.name in (udf + "1.18-hashmap-savepoint-native", udf + "1.19-hashmap-savepoint")]
    assert len(chosen) == 2
    for case in range(24):
        copy = tmp_path / f"case-{case}"
        shutil.copytree(chosen[case % 2], copy)
        target = rng.choice(sorted(copy.iterdir()))
        data = bytearray(target.read_bytes())
        if rng.random() < 0.2:
            del data[rng.randrange(len(data) + 1) :]
        else:
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] ^= rng.randrange(1, 256)
        target.write_bytes(bytes(data))
        try:
            for _ in read_keyed_state(str(copy)):
                pass
            outcomes["read"] += 1
        except InputError:
            outcomes["input_error"] += 1
        shutil.rmtree(copy)
    assert outcomes["read"] + outcomes["input_error"] == 24
