"""`AllTypesFixtureJob`'s canonical savepoints (fixtures/keyed/1.19.3-all-types-*, heap and RocksDB) read through
`read_keyed_state`: every state of an ordinary job's value types (POJO with a nested POJO and a null field, Tuple3,
enum, `java.time`, `java.util.Date`, int[] and String[], reducing, aggregating, TTL, event-time timers, a window
operator's `TimeWindow` namespaces) decodes (status `read`) to the value the job's rules give for what its witness
says each key had seen; the Kryo-serialized class is kept as bytes (status `raw`) with its class named."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from splitaudit.savepoint.keyed import READ, Undecoded
from splitaudit.savepoint.metadata import operator_id_from_uid
from splitaudit.savepoint_view import read_keyed_state

KEYED = Path(__file__).resolve().parents[3] / "fixtures" / "keyed"
FOLDERS = sorted(path.parent for path in KEYED.glob("*-all-types-*/expected.json"))
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


def check_all_types_fixture(folder: Path, expected: dict[str, Any]) -> None:
    """Every entry of the snapshot in `folder` against `expected` (its expected.json); also
    tests/unit/test_fixtures.py's check of these folders."""
    seen: dict[str, Any] = expected["keyed"][operator_id_from_uid("all-types")]["keys"]
    assert sum(key["count"] for key in seen.values()) == expected["job"]["records"]
    values: dict[str, dict[str, Any]] = {}
    timers: dict[str, list[int]] = {}
    windows: dict[str, dict[str, int]] = {}
    window_timers: dict[str, list[int]] = {}
    kryo: dict[str, Undecoded] = {}
    ttl: dict[str, int] = {}
    for row in read_keyed_state(str(folder / expected["snapshot_dir"])):
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


def test_both_backends_are_there() -> None:
    assert [folder.name for folder in FOLDERS] == [
        "1.19.3-all-types-heap-savepoint-canonical",
        "1.19.3-all-types-rocksdb-savepoint-canonical",
    ]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda folder: folder.name)
def test_every_state_reads_to_the_witnessed_values(folder: Path) -> None:
    check_all_types_fixture(folder, json.loads((folder / "expected.json").read_text()))
