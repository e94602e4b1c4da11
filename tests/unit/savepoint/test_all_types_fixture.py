"""`AllTypesFixtureJob`'s snapshots (fixtures/keyed/<version>-all-types-*: Flink 1.19.3, 2.0.0 and 2.3.0, each a
canonical savepoint and a retained checkpoint with the heap and the RocksDB backend, and 2.3.0's Snappy-compressed
heap checkpoint and incremental RocksDB checkpoint) read through
`read_keyed_state`: every state of an ordinary job's value types (POJO with a nested POJO and a null field, Tuple3,
enum, `java.time`, `java.util.Date`, int[] and String[], reducing, aggregating, TTL, event-time timers, a window
operator's `TimeWindow` namespaces) decodes (status `read`) to the value the job's rules give for what its witness
says each key had seen; the Kryo-serialized class is kept as bytes (status `raw`) with its class named, in a heap
checkpoint too, whose entries have no lengths (its values' ends found by `KeyGroupsReader._heap_search`)."""

from __future__ import annotations

import datetime
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from splitaudit.savepoint import keyed
from splitaudit.savepoint.keyed import READ, Undecoded
from splitaudit.savepoint.metadata import operator_id_from_uid
from splitaudit.savepoint_view import read_keyed_state

KEYED = Path(__file__).resolve().parents[3] / "fixtures" / "keyed"
FOLDERS = sorted(path.parent for path in KEYED.glob("*-all-types-*/expected.json"))
VERSIONS = ("1.19.3", "2.0.0", "2.3.0")
CASES = ("heap-checkpoint", "heap-savepoint-canonical", "rocksdb-checkpoint-full", "rocksdb-savepoint-canonical")
# A Snappy-compressed heap checkpoint and an incremental RocksDB one (shared SST files, all inline): the newest
# release only.
NEWEST = ("heap-checkpoint-snappy", "rocksdb-checkpoint-incremental")
CASES_OF = {version: (*CASES, *NEWEST) if version == "2.3.0" else CASES for version in VERSIONS}
KRYO_STATUS = (
    "raw: org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot "
    "(dev.splitaudit.fixtures.AllTypesFixtureJob$Opaque): Kryo's field layout is not in the snapshot"
)
WINDOW_MILLIS = 100  # KeyedStateFixtureJob.WINDOW_MILLIS
COLORS = ("RED", "GREEN", "BLUE")  # AllTypesFixtureJob.Color
# TtlValue.lastAccessTimestamp: wall-clock milliseconds of the run, after 2023-11-14 and before 2100.
TTL_TIMESTAMPS = range(1_700_000_000_000, 4_102_444_800_000)


def expected_values(key: str, seen: dict[str, Any]) -> dict[str, Any]:
    """The value of every value, reducing and aggregating state of `all-types` for `key`, by the job's rules
    (AllTypesFixtureJob's javadoc) from its last value, count and sum."""
    v, count = seen["last"], seen["count"]
    local_date_time = datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=v)
    return {
        "pojo": {"name": f"p{v}", "age": v, "address": {"city": f"c{key}", "zip": 10000 + v}, "nickname": None},
        "tuple": {"f0": key, "f1": v, "f2": count},
        "color": COLORS[v % 3],
        "local-date": (datetime.date(1970, 1, 1) + datetime.timedelta(days=19000 + v)).isoformat(),
        "local-date-time": f"{local_date_time.isoformat()}.{v * 1000:09d}",
        "instant": {"epoch_second": 1_700_000_000 + v, "nano": v * 1000},
        "date": 1_700_000_000_000 + v,
        "ints": [v, count],
        "strings": [f"a{v}", f"b{count}"],
        "sum": seen["sum"],
        "avg": {"f0": seen["sum"], "f1": count},
    }


def check_all_types_fixture(folder: Path, expected: dict[str, Any], allow_external_state: bool = False) -> None:
    """Every entry of the snapshot in `folder` against `expected` (its expected.json); also
    tests/unit/test_fixtures.py's check of these folders, and test_changelog_fixture.py's of the changelog
    backend's (whose log files lie outside the checkpoint: `allow_external_state`)."""
    seen: dict[str, Any] = expected["keyed"][operator_id_from_uid("all-types")]["keys"]
    assert sum(key["count"] for key in seen.values()) == expected["job"]["records"]
    values: dict[str, dict[str, Any]] = {}
    timers: dict[str, list[int]] = {}
    windows: dict[str, dict[str, int]] = {}
    window_timers: dict[str, list[int]] = {}
    kryo: dict[str, Undecoded] = {}
    ttl: dict[str, int] = {}
    for row in read_keyed_state(str(folder / expected["snapshot_dir"]), allow_external_state=allow_external_state):
        entry = row.entry
        if entry.state == "kryo":
            assert entry.status == KRYO_STATUS
            kryo[entry.key] = entry.value
            continue
        assert entry.status == READ, (entry.state, entry.status)
        if row.operator_id == operator_id_from_uid("window-sum"):
            start, end = entry.namespace["start"], entry.namespace["end"]
            assert end == start + WINDOW_MILLIS
            if entry.state == "window-contents":
                windows.setdefault(entry.key, {})[str(start)] = entry.value
            else:
                assert entry.state == "_timer_state/event_window-timers"
                assert entry.value == end - 1
                window_timers.setdefault(entry.key, []).append(start)
            continue
        assert row.operator_id == operator_id_from_uid("all-types")
        assert entry.namespace is None  # VoidNamespace
        if entry.state == "_timer_state/event_user-timers":
            timers.setdefault(entry.key, []).append(entry.value)
        elif entry.state == "ttl-count":
            assert entry.value["last_access_timestamp"] in TTL_TIMESTAMPS
            ttl[entry.key] = entry.value["value"]
        else:
            assert entry.key not in values.get(entry.state, {})
            values.setdefault(entry.state, {})[entry.key] = entry.value
    want = [expected_values(key, state) for key, state in seen.items()]
    assert values == {name: {key: w[name] for key, w in zip(seen, want, strict=True)} for name in want[0]}
    assert {key: sorted(t) for key, t in timers.items()} == {key: s["timers"] for key, s in seen.items()}
    assert windows == {key: s["windows"] for key, s in seen.items()}
    assert {key: sorted(map(str, t)) for key, t in window_timers.items()} == {
        key: sorted(s["windows"]) for key, s in seen.items()
    }
    assert ttl == {key: s["count"] for key, s in seen.items()}
    assert set(kryo) == set(seen)
    assert all(value.data and value.type_class.endswith("$Opaque") for value in kryo.values())


def test_every_version_backend_and_kind_is_there() -> None:
    assert [folder.name for folder in FOLDERS] == sorted(
        f"{v}-all-types-{case}" for v in VERSIONS for case in CASES_OF[v]
    )


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda folder: folder.name)
def test_every_state_reads_to_the_witnessed_values(folder: Path) -> None:
    check_all_types_fixture(folder, json.loads((folder / "expected.json").read_text()))


def kryo_values(folder: Path) -> dict[str, bytes]:
    """The Kryo state's bytes by key in the snapshot of `folder`."""
    snapshot = folder / json.loads((folder / "expected.json").read_text())["snapshot_dir"]
    return {row.entry.key: row.entry.value.data for row in read_keyed_state(str(snapshot)) if row.entry.state == "kryo"}


@pytest.mark.parametrize("version", VERSIONS)
def test_the_kryo_bytes_are_the_same_in_every_snapshot_of_a_release(version: str) -> None:
    """Every snapshot of a release was taken after the job had seen all 120 values, so each key's Kryo value (its
    last value's `Opaque`) is the same bytes in all of them: the ends the heap checkpoint's search found are the ones
    the canonical savepoints' lengths give."""
    kryo = [kryo_values(KEYED / f"{version}-all-types-{case}") for case in CASES_OF[version]]
    assert len(kryo[0]) == 24
    assert all(values == kryo[0] for values in kryo[1:])


# The states each release's heap checkpoint wrote before `kryo` in every key group.
BEFORE_KRYO = {
    "1.19.3": ("avg", "color", "instant", "ints", "local-date-time", "pojo", "strings", "sum", "ttl-count", "tuple"),
    "2.0.0": (
        "_timer_state/event_user-timers",
        *("color", "date", "instant", "ints", "local-date", "local-date-time", "pojo", "sum", "ttl-count", "tuple"),
    ),
    "2.3.0": ("_timer_state/event_user-timers", "date", "instant", "ints", "local-date-time", "tuple"),
}


@pytest.mark.parametrize("version", VERSIONS)
def test_a_heap_checkpoint_without_the_search_reports_the_kryo_state_unread(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the search for the Kryo values' ends (no byte of a key group searched), each key group holding a
    Kryo value is read up to it and one `unread` entry per key group stands for that state's entries and the rest
    of the key group, with the reason; the other key groups, and the window operator, are read whole."""
    monkeypatch.setattr(keyed, "HEAP_SEARCH_BYTES", 0)
    folder = KEYED / f"{version}-all-types-heap-checkpoint"
    expected = json.loads((folder / "expected.json").read_text())
    rows = list(read_keyed_state(str(folder / expected["snapshot_dir"])))
    unread = [row.entry for row in rows if row.entry.status != READ]
    # 24 keys in 21 key groups (three hold two keys; tests/unit/savepoint/test_all_types_fixture.py's witness)
    assert len(unread) == 21
    assert all(entry.state == "kryo" for entry in unread)
    counts = sorted(int(entry.status.split()[1]) for entry in unread)
    assert counts == [1] * 18 + [2] * 3
    assert {entry.status.split(": ", 2)[2] for entry in unread} == {
        "serializer org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot is not decoded "
        "(Kryo's field layout is not in the snapshot), and heap snapshot entries have no lengths"
    }
    window_sum = [row for row in rows if row.operator_id == operator_id_from_uid("window-sum")]
    assert len(window_sum) == 44 * 2
    # HeapSnapshotStrategy writes the states of a key group in its snapshot map's order, the same in every key
    # group of a snapshot and not the same in every run: those before `kryo` are read whole, those after it are not
    # reached in the key groups of the 24 keys (they are in no other).
    all_types = [row.entry for row in rows if row.operator_id == operator_id_from_uid("all-types")]
    read = Counter(entry.state for entry in all_types if entry.status == READ)
    timers = "_timer_state/event_user-timers"  # one per value, 120
    assert read == {state: 120 if state == timers else 24 for state in BEFORE_KRYO[version]}


def test_a_search_past_its_budget_leaves_the_key_group_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    """2.3.0's heap checkpoint needs 185-196 ends tried for a key group with one Kryo value and 2,687-2,876 for one
    with two (splitaudit/savepoint/FORMAT.md): with 300 allowed, the 18 single ones are found and the three double
    ones are each one `unread` entry for their two values and the rest of the key group."""
    monkeypatch.setattr(keyed, "HEAP_SEARCH_TRIALS", 300)
    folder = KEYED / "2.3.0-all-types-heap-checkpoint"
    expected = json.loads((folder / "expected.json").read_text())
    kryo = [row.entry for row in read_keyed_state(str(folder / expected["snapshot_dir"])) if row.entry.state == "kryo"]
    assert Counter(entry.status for entry in kryo)[KRYO_STATUS] == 18
    unread = [entry for entry in kryo if entry.status != KRYO_STATUS]
    assert [entry.status.split(": ")[1] for entry in unread] == [
        f"2 entries of state 'kryo' and the rest of key group {key_group}" for key_group in (59, 71, 97)
    ]
