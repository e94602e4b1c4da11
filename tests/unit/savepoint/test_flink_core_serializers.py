"""Every `serializer-snapshot` + `test-data` pair of flink-core 1.19.1's test jar (written by Flink 1.7 to 1.19
for the `TypeSerializerUpgradeTestBase` subclasses: `test-data` is one `serialize(createTestData())`, the
snapshot `TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot`), enumerated from the jar itself.

A pair whose serializer this reader decodes must consume both files exactly and, where `EXPECTED` lists the
value its Flink test class's `createTestData()` defines, yield it. Kryo and user `Value`s are kept raw and
counted with the serializer and type named.
"""

from __future__ import annotations

import collections
import random
import re
import zipfile
from pathlib import Path

import pytest

from splitaudit.errors import InputError
from splitaudit.home import flink_test_corpus
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.typeserializers import decoder, raw_reason, read_serializer_snapshot

JAR = "flink-core-1.19.1-tests.jar"
PAIR = re.compile(r"(?P<name>.+)-(?P<version>1\.\d+)/serializer-snapshot$")
# name -> the value `createTestData()` returns, decoded (splitaudit/savepoint/FORMAT.md, "Keyed state").
EXPECTED = {
    "long-serializer": 1234567890,  # LongSerializerUpgradeTest
    "enum-serializer": "EMMA",  # EnumSerializerUpgradeTest: TestEnum.EMMA
    "enum-serializerreconfig": "EMMA",  # EnumSerializerUpgradeTest: EnumSerializerReconfigSetup, EnumBefore.EMMA
    "string-array-serializer": [str(i) for i in range(10)],  # PrimitiveArraySerializerUpgradeTestSpecifications
    "list-serializer": ["Apache", "Flink"],  # ListSerializerUpgradeTest
    "map-serializer": [[0, "0"], [1, "1"], [2, "2"]],  # MapSerializerUpgradeTest
    "null-value-serializer": None,  # ValueSerializerUpgradeTest: NullValue.getInstance()
    "string-value-serializer": "123456789012345678901234567890123456",  # ValueSerializerUpgradeTest
}


def _jar() -> Path:
    path = flink_test_corpus() / JAR
    if not path.exists():
        pytest.skip(f"{path} is fetched by setup (flink-test-corpus)")
    return path


@pytest.mark.needs_build
def test_every_pair_of_the_jar_decodes_or_is_counted() -> None:
    decoded: collections.Counter[str] = collections.Counter()
    unknown: collections.Counter[str] = collections.Counter()
    raw: collections.Counter[str] = collections.Counter()
    with zipfile.ZipFile(_jar()) as jar:
        for member in sorted(jar.namelist()):
            match = PAIR.match(member)
            if match is None:
                continue
            snapshot_path = member
            data_path = member.replace("/serializer-snapshot", "/test-data")
            stream = DataInput(jar.read(snapshot_path), snapshot_path)
            snapshot, complete = read_serializer_snapshot(stream, "")
            value_decoder = decoder(snapshot) if complete else None
            if value_decoder is None and complete and raw_reason(snapshot) is not None:
                stream.expect_end("the serializer snapshot")
                raw[f"{snapshot.snapshot_class} ({snapshot.type_class})"] += 1
                continue
            if value_decoder is None:
                unknown[snapshot.snapshot_class] += 1
                continue
            stream.expect_end("the serializer snapshot")
            data = DataInput(jar.read(data_path), data_path)
            value = value_decoder(data)
            data.expect_end("the test data")
            name = match.group("name")
            if name in EXPECTED:
                assert value == EXPECTED[name], member
            decoded[snapshot.snapshot_class.rsplit(".", 1)[-1]] += 1
    assert sum(decoded.values()) == 517
    runtime = "org.apache.flink.api.java.typeutils.runtime."
    assert unknown == {}
    # Kept as bytes, the serializer and its type named (RAW_REASONS): their layout is not in the snapshot.
    kryo = runtime + "kryo.KryoSerializerSnapshot (" + runtime + "kryo.KryoPojosForMigrationTests$"
    assert raw == {
        kryo + "Animal)": 36,
        runtime
        + "CopyableValueSerializer$CopyableValueSerializerSnapshot ("
        + runtime
        + "CopyableSerializerUpgradeTest$SimpleCopyable)": 9,
        runtime + "ValueSerializer$ValueSerializerSnapshot (" + runtime + "ValueSerializerUpgradeTest$NameValue)": 9,
    }


def _mutate(data: bytes, rng: random.Random) -> bytes:
    """One seeded mutation: a few bytes overwritten (often with extreme ints' bytes), or a cut."""
    if not data or rng.random() < 0.2:
        return data[: rng.randrange(len(data) + 1)]
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(out))
        out[at : at + 4] = rng.choice([b"\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", bytes([rng.randrange(256)])])
    return bytes(out)


def fuzz_pairs(jar: zipfile.ZipFile, members: list[str], cases: int = 40) -> collections.Counter[str]:
    """Each `serializer-snapshot` member's pair mutated `cases` times (seeded; the snapshot in even cases, the data
    in odd ones) and read: `ok` or `input_error` counted; anything else raised fails the caller."""
    rng = random.Random(0)
    outcomes: collections.Counter[str] = collections.Counter()
    for member in members:
        snapshot_bytes = jar.read(member)
        data_bytes = jar.read(member.replace("/serializer-snapshot", "/test-data"))
        for case in range(cases):
            mutate_snapshot = case % 2 == 0
            snapshot_case = _mutate(snapshot_bytes, rng) if mutate_snapshot else snapshot_bytes
            data_case = data_bytes if mutate_snapshot else _mutate(data_bytes, rng)
            try:
                snapshot, complete = read_serializer_snapshot(DataInput(snapshot_case, member), "")
                value_decoder = decoder(snapshot) if complete else None
                if value_decoder is not None:
                    value_decoder(DataInput(data_case, "test-data"))
                outcomes["ok"] += 1
            except InputError:
                outcomes["input_error"] += 1
    return outcomes


@pytest.mark.needs_build
def test_mutated_pairs_fail_only_with_input_error() -> None:
    """Fuzzing of the decoders: every pair's snapshot and data, mutated 20 times each (seeded): reading them
    either succeeds or raises InputError, never anything else."""
    with zipfile.ZipFile(_jar()) as jar:
        outcomes = fuzz_pairs(jar, sorted(name for name in jar.namelist() if PAIR.match(name)))
    assert outcomes["ok"] + outcomes["input_error"] == 571 * 40
    assert outcomes["input_error"] > 0
