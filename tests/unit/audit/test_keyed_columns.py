"""The `keyed` table read a run of entries at a time (`keyed_columns`) is the table read an entry at a time, row
for row and byte for byte: on every snapshot of fixtures/keyed/ and of Flink's own test jars, with every run
of every state read as a run (`RUN_ENTRIES` 1); and on crafted runs at each edge of what a run takes (entries it
leaves to the entry-at-a-time readers inside the run, and the entries a run ends before)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from splitaudit.audit.checks import keyed_columns, tables
from splitaudit.audit.checks.keyed_columns import ColumnRun, run_reader
from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint import keyed
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.keyed import SHORT_RUN, StateCodec
from splitaudit.savepoint.typeserializers import DOUBLE, INT, LIST, LONG, MAP, POJO, STRING
from splitaudit.savepoint_view import plan_keyed_state
from tests.unit.savepoint.test_flink_itcases import JARS, corpus  # noqa: F401  # the jars' snapshots, extracted
from tests.unit.savepoint.test_keyed_layouts import (
    KEY,
    LAYOUT_CASES,
    PROFILE,
    VALUE_STRING,
    _codec,
    _entry,
    _snapshot,
    _string,
)
from tests.unit.savepoint.test_keyed_parts import CASES, snapshot_of


def _table(folder: Path) -> list[Any]:
    """The `keyed` table of every part of the snapshot, as the data source reads it: rows as dicts, each part's
    error (its message) after the rows read before it."""
    files = SavepointFiles(str(folder))
    out: list[Any] = []
    for part in plan_keyed_state(files, (), 1 << 16):
        try:
            for batch in tables.keyed_part_batches(files, part):
                out += batch.to_pylist()
        except InputError as error:
            out.append(str(error))
    return out


def _both_ways(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any], int]:
    """The table read by runs (every run of a state taken, however short), the table read an entry at a time,
    and how many runs were read as runs."""
    runs = 0
    original = keyed_columns._Run.read

    def counting(self: Any, *args: Any) -> Any:
        nonlocal runs
        rows, first = original(self, *args)
        runs += rows is not None
        return rows, first

    with monkeypatch.context() as patch:
        patch.setattr(keyed_columns, "RUN_ENTRIES", 1)
        patch.setattr(keyed_columns._Run, "read", counting)
        by_runs = _table(folder)
    with monkeypatch.context() as patch:
        patch.setattr(keyed_columns, "run_reader", lambda _: None)
        one_at_a_time = _table(folder)
    return by_runs, one_at_a_time, runs


@pytest.mark.parametrize("case", CASES)
def test_every_fixture_reads_the_same_by_runs(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot, _ = snapshot_of(case)
    by_runs, one_at_a_time, _ = _both_ways(snapshot, monkeypatch)
    assert by_runs == one_at_a_time


@pytest.mark.parametrize("case", [c for c in CASES if "canonical" in c])
def test_runs_cut_by_small_windows_read_the_same(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key group read 300 bytes at a time: runs end at each window's end, and the entry across it is read the
    general way, in the loaded window after it."""
    monkeypatch.setattr(keyed, "WINDOW_BYTES", 300)
    snapshot, _ = snapshot_of(case)
    by_runs, one_at_a_time, runs = _both_ways(snapshot, monkeypatch)
    assert by_runs == one_at_a_time
    assert runs > 0


def test_the_fixtures_have_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above means something: the fixtures' canonical savepoints have states read as runs."""
    snapshot, _ = snapshot_of("1.19.3-heap-savepoint-canonical-inline")
    by_runs, _, runs = _both_ways(snapshot, monkeypatch)
    assert runs > 0
    assert len(by_runs) > runs


@pytest.mark.needs_build
@pytest.mark.parametrize("jar", JARS)
def test_flink_s_own_snapshots_read_the_same_by_runs(
    corpus: dict[str, list[Path]],  # noqa: F811  # the fixture imported above
    jar: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for folder in corpus[jar]:
        by_runs, one_at_a_time, _ = _both_ways(folder, monkeypatch)
        assert by_runs == one_at_a_time, folder.name


def _columns(run: ColumnRun) -> list[list[Any]]:
    """A run's rows as the entry-at-a-time path's tuples would make them: (state, key group, the JSON texts,
    status)."""
    count = len(run)
    return [[run.state] * count, [run.key_group] * count, *(c.to_pylist() for c in run.columns())]


def _expected(rows: list[tuple[Any, ...]]) -> list[list[Any]]:
    """The columns the entry-at-a-time path makes of these rows."""
    return [column.to_pylist() for column in tables._row_columns(rows)]


def _read(
    codec: StateCodec, data: DataInput, key_group: int = 5, prefix_bytes: int = 1
) -> tuple[ColumnRun | None, int]:
    reader = run_reader(codec)
    assert reader is not None

    def general(pos: int) -> Any:
        return keyed._entry_at(data, codec, key_group, prefix_bytes, pos)

    return reader(data, key_group, prefix_bytes, general)


@pytest.fixture(autouse=True)
def _every_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Crafted runs are short: each is read as a run."""
    monkeypatch.setattr(keyed_columns, "RUN_ENTRIES", 1)


@pytest.mark.parametrize(("key_group", "prefix_bytes"), [(5, 1), (300, 2)])
def test_a_run_reads_to_the_state_s_last_entry(key_group: int, prefix_bytes: int) -> None:
    entries = [_entry(key_group, _string(f"key-{i}") + b"\0", _string(f"v{i}"), i == 2, prefix_bytes) for i in range(3)]
    after = b"\x00\x01"  # the next state's id
    data = DataInput(b"".join(entries) + after, "f")
    run, first = _read(VALUE_STRING, data, key_group, prefix_bytes)
    assert run is not None
    rows = [("s", key_group, f"key-{i}", None, None, f"v{i}", "read") for i in range(3)]
    assert _columns(run) == _expected(rows)
    assert first == 0x80 | (key_group >> 8 * (prefix_bytes - 1))  # the last entry's first key byte
    assert data.tell() == len(data) - len(after)


@pytest.mark.parametrize(
    ("text", "decoded"),
    [
        ("é", "é"),  # not ASCII: the general path reads it, in the run
        ('say "hi"\\', 'say "hi"\\'),  # escaped in JSON text: the entry-at-a-time reader's value
        ("tab\there", "tab\there"),
        (None, None),  # null
        ("x" * 200, "x" * 200),  # two varint bytes of length
        ("", ""),
    ],
)
def test_entries_a_run_leaves_to_the_entry_at_a_time_readers(text: str | None, decoded: str | None) -> None:
    entries = [
        _entry(5, _string("key-0") + b"\0", _string("v0"), False, 1),
        _entry(5, _string("key-1") + b"\0", _string(text), False, 1),
        _entry(5, _string("key-2") + b"\0", _string("v2"), True, 1),
    ]
    run, first = _read(VALUE_STRING, DataInput(b"".join(entries), "f"))
    assert run is not None
    values = ["v0", decoded, "v2"]
    assert _columns(run) == _expected([("s", 5, f"key-{i}", None, None, values[i], "read") for i in range(3)])
    assert first == 0x85


@pytest.mark.parametrize(
    "value",
    [
        b"\2" + b"\0" + _string("p-1") + b"\0" + struct.pack(">i", 3) + b"\0" + struct.pack(">q", -4),
        b"\2" + b"\1" + b"\0" + struct.pack(">i", 3) + b"\1",  # null fields: the entry-at-a-time reader's
        b"\2" + b"\0" + _string('q"') + b"\0" + struct.pack(">i", -3) + b"\0" + struct.pack(">q", 1 << 62),
    ],
)
def test_pojo_values(value: bytes) -> None:
    codec = _codec("VALUE", PROFILE)
    plain = b"\2" + b"\0" + _string("p-0") + b"\0" + struct.pack(">i", 7) + b"\0" + struct.pack(">q", 8)
    entries = [_entry(5, KEY, plain, False, 1), _entry(5, KEY, value, True, 1)]
    run, _ = _read(codec, DataInput(b"".join(entries), "f"))
    assert run is not None
    rows = [codec.canonical_row(5, DataInput(KEY, "k"), DataInput(v, "v")) for v in (plain, value)]
    assert _columns(run) == _expected(rows)


@pytest.mark.parametrize(
    ("element", "values"),
    [
        (LONG, [struct.pack(">qBqBq", 1, 44, -2, 44, 3), struct.pack(">q", 1 << 62)]),
        (INT, [struct.pack(">iBi", 7, 44, 8), struct.pack(">iBi", 7, 59, 8)]),  # not ',': the general path's
        (LONG, [struct.pack(">q", 5), struct.pack(">qB", 1, 44)]),  # a ',' and nothing after it: its error ends it
    ],
)
def test_list_values(element: str, values: list[bytes]) -> None:
    codec = _codec("LIST", _snapshot(LIST, _snapshot(element)))
    entries = [_entry(5, KEY, value, i == len(values) - 1, 1) for i, value in enumerate(values)]
    data = DataInput(b"".join(entries), "f")
    rows = []
    for value in values:
        try:
            rows.append(codec.canonical_row(5, DataInput(KEY, "k"), DataInput(value, "v")))
        except InputError:
            break
    run, first = _read(codec, data)
    assert run is not None
    assert _columns(run) == _expected(rows)
    assert (first == -1) == (len(rows) < len(values))
    assert data.tell() == sum(map(len, entries[: len(rows)]))


@pytest.mark.parametrize(("codec", "key", "value", "taken"), LAYOUT_CASES)
def test_timers_windows_enums_tuples_and_ttl(codec: StateCodec, key: bytes, value: bytes, taken: bool) -> None:
    """Each entry of test_keyed_layouts.py's cases after one entry like it, as a run: the row the general path
    makes of it, or the run's end before it where the general path refuses it."""
    data = DataInput(_entry(5, key, value, False, 1) + _entry(5, key, value, True, 1), "f")
    try:
        rows = [codec.canonical_row(5, DataInput(key, "k"), DataInput(value, "v"))] * 2
    except InputError:
        assert _read(codec, data) == (None, -1)
        assert not taken
        return
    run, first = _read(codec, data)
    assert run is not None
    assert _columns(run) == _expected(rows)
    assert first == 0x85


def test_map_entries() -> None:
    codec = _codec("MAP", _snapshot(MAP, _snapshot(STRING), _snapshot(LONG)))
    values = [b"\0" + struct.pack(">q", 42), b"\1", b"\0" + struct.pack(">q", -1)]
    entries = [_entry(5, KEY + _string(f"attr-{i}"), v, i == 2, 1) for i, v in enumerate(values)]
    run, _ = _read(codec, DataInput(b"".join(entries), "f"))
    assert run is not None
    assert _columns(run) == _expected(
        [("s", 5, "key-1", None, f"attr-{i}", value, "read") for i, value in enumerate([42, None, -1])]
    )


@pytest.mark.parametrize(
    "second",
    [
        _entry(6, _string("key-1") + b"\0", _string("v"), False, 1),  # another key group's: the general path refuses
        _entry(5, _string("key-1") + b"\0", _string("v") + b"!", False, 1),  # trailing bytes: likewise
        _entry(5, _string("key-1") + b"\0", _string("v"), False, 1)[:-1],  # not loaded whole
    ],
)
def test_a_run_ends_before_an_entry_it_leaves_to_the_general_path(second: bytes) -> None:
    first_entry = _entry(5, _string("key-0") + b"\0", _string("v"), False, 1)
    data = DataInput(first_entry + second, "f")
    run, first = _read(VALUE_STRING, data)
    assert run is not None
    assert _columns(run) == _expected([("s", 5, "key-0", None, None, "v", "read")])
    assert first == -1
    assert data.tell() == len(first_entry)


def test_a_run_that_starts_at_such_an_entry_reads_nothing() -> None:
    data = DataInput(_entry(6, KEY, _string("v"), False, 1), "f")
    assert _read(VALUE_STRING, data) == (None, -1)
    assert data.tell() == 0


def test_a_short_run_is_left_to_the_entry_at_a_time_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyed_columns, "RUN_ENTRIES", 4)
    data = DataInput(b"".join(_entry(5, KEY, _string("v"), i == 2, 1) for i in range(3)), "f")
    assert _read(VALUE_STRING, data) == (None, SHORT_RUN)
    assert data.tell() == 0


def test_layouts_a_run_does_not_take() -> None:
    assert run_reader(_codec("VALUE", _snapshot("com.example.UnknownSerializerSnapshot"))) is None
    assert run_reader(_codec("LIST", _snapshot(LIST, _snapshot(STRING)))) is None  # lists of fixed-width only
    assert run_reader(_codec("VALUE", _snapshot(POJO, _snapshot(STRING), _snapshot(STRING), names=("a", "a")))) is None
    assert run_reader(_codec("VALUE", _snapshot(DOUBLE))) is None  # a float's JSON text is Python's repr
