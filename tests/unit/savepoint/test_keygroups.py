"""`keygroups.key_group_of` against Flink's own `KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism)`:
the expected key groups were printed by flink-runtime 2.3.0 (a throwaway `main` calling it for each key and max
parallelism below, on the jars of `beam_pipelines/java/fixture-jobs/all-types-flink2`'s dependencies), and every key
of a real snapshot lies in the key group it is read from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splitaudit.savepoint.keygroups import key_group_of, key_groups_of, murmur_hash
from splitaudit.savepoint.typeserializers import INT, KRYO, LONG, STRING
from splitaudit.savepoint_view import read_keyed_state

KEYED = Path(__file__).resolve().parents[3] / "fixtures" / "keyed"

# (key, its serializer's snapshot class, key group at max parallelism 128, 32768 and 7)
FLINK = [
    (42, LONG, (29, 28189, 3)),
    (-1, LONG, (94, 31198, 0)),
    (1 << 32, LONG, (86, 16342, 2)),
    (-(2**63), LONG, (108, 10348, 3)),
    (7, INT, (113, 4337, 4)),
    (-123456, INT, (117, 30965, 6)),
    (-(2**31), INT, (108, 10348, 3)),
    ("key-15", STRING, (12, 10380, 2)),
    ("", STRING, (94, 31198, 0)),
    ("ü€\U0001d11e", STRING, (95, 3807, 0)),  # a surrogate pair: hashCode() is over UTF-16 units
]


@pytest.mark.parametrize(("key", "serializer", "groups"), FLINK)
def test_key_groups_are_flinks(key: object, serializer: str, groups: tuple[int, int, int]) -> None:
    assert tuple(key_group_of(key, serializer, max_parallelism) for max_parallelism in (128, 32768, 7)) == groups


def test_a_key_whose_hash_code_is_not_known_has_no_key_group() -> None:
    assert key_group_of({"f0": 1}, "org.apache.flink.api.java.typeutils.runtime.PojoSerializerSnapshot", 128) is None
    assert key_group_of(None, STRING, 128) is None


def test_every_key_of_a_snapshot_lies_in_its_key_group() -> None:
    folder = KEYED / "2.3.0-all-types-heap-checkpoint"
    snapshot = folder / json.loads((folder / "expected.json").read_text())["snapshot_dir"]
    rows = [row.entry for row in read_keyed_state(str(snapshot))]
    assert len(rows) == 24 * 13 + 120 + 44 * 2
    assert {entry.key_group for entry in rows} == {key_group_of(entry.key, STRING, 128) for entry in rows}
    assert all(key_group_of(entry.key, STRING, 128) == entry.key_group for entry in rows)


def test_a_kryo_keys_candidate_key_groups() -> None:
    """A key Kryo decoded from one of its own registrations may be of more than one wrapper class: its candidate key
    groups are those of every hash code the value has in one of them (`Integer.hashCode` the value, `Long.hashCode`
    `(int) (v ^ (v >>> 32))`, `Float.hashCode` `floatToIntBits`, `Double.hashCode` the bits' halves XORed,
    `Boolean.hashCode` 1231 / 1237, `Character.hashCode` the char); keys of an exact serializer get one."""
    # Integer, Long, Short or Byte 42: each hashes to 42 (FLINK above); Long -1 hashes to 0, Integer -1 to -1
    assert key_groups_of(42, KRYO, 128) == frozenset({29})
    assert key_groups_of(-1, KRYO, 128) == frozenset({94, murmur_hash(0xFFFFFFFF) % 128})
    assert key_groups_of(1 << 32, KRYO, 128) == frozenset({86})  # only a Long
    assert key_groups_of(1.5, KRYO, 128) == frozenset({murmur_hash(0x3FC00000) % 128, murmur_hash(0x3FF80000) % 128})
    assert key_groups_of(0.1, KRYO, 128) == frozenset({murmur_hash(0xA6200003) % 128})  # not a float's value: a Double
    assert key_groups_of(True, KRYO, 128) == frozenset({murmur_hash(1231) % 128})
    assert key_groups_of("a", KRYO, 128) == frozenset({murmur_hash(97) % 128})
    assert key_groups_of({"f0": 1}, KRYO, 128) is None
    assert key_groups_of(42, LONG, 128) == frozenset({29})
    assert key_groups_of({"f0": 1}, "org.apache.flink.api.java.typeutils.runtime.PojoSerializerSnapshot", 128) is None
