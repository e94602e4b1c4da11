"""Every `serializer-snapshot` + `test-data` pair of flink-scala_2.12 1.19.1's test jar (the Scala API's serializers,
written by Flink 1.11 to 1.19 for the `TypeSerializerUpgradeTestBase` subclasses of flink-scala/src/test), enumerated
from the jar itself, and the Kryo values Kryo's own registrations fix.

Each pair must consume both files exactly and yield the value its Flink test class's `createTestData()` defines
(release-1.19.1 sources, written down below with the class cited).
"""

from __future__ import annotations

import collections
import dataclasses
import re
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from splitaudit.home import flink_test_corpus
from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint import kryo
from splitaudit.savepoint.keyed import StateCodec, Undecoded
from splitaudit.savepoint.metainfo import StateMetaInfoSnapshot
from splitaudit.savepoint.typeserializers import (
    KRYO,
    LONG,
    VOID_NAMESPACE,
    SerializerSnapshot,
    decoder,
    read_serializer_snapshot,
)
from tests.unit.savepoint.test_flink_core_serializers import fuzz_pairs

JAR = "flink-scala_2.12-1.19.1-tests.jar"
PAIR = re.compile(r"(?P<name>.+)-(?P<version>1\.\d+)/serializer-snapshot$")
SCALA_TYPES = "org.apache.flink.api.scala.types."
VERSIONS = [f"1.{minor}" for minor in range(11, 20)]  # every spec has a pair per version, 1.11 to 1.19


def _tuple2(*fields: object) -> dict[str, object]:
    """A `scala.Tuple2` as the case-class decoder shows it: class named, fields positional."""
    return {"@class": "scala.Tuple2", "fields": list(fields)}


# name -> the value `createTestData()` returns, decoded.
EXPECTED: dict[str, object] = {
    # ScalaCaseClassSerializerUpgradeTest: CustomCaseClass("flink", 11) (fields: a String and an Int)
    "scala-case-class-serializer": {
        "@class": "org.apache.flink.api.scala.types.CustomCaseClass",
        "fields": ["flink", 11],
    },
    "scala-either-serializer": {"right": "Hello world"},  # ScalaEitherSerializerUpgradeTest: new Right<>("Hello world")
    "scala-option-serializer": None,  # ScalaOptionSerializerUpgradeTest: Option.empty()
    # ScalaTrySerializerUpgradeTest: Failure(new SpecifiedException("Specified exception for ScalaTry.")), the
    # exception Java-serialized inside Kryo's bytes (the class named by Kryo, then the stream)
    "scala-try-serializer": {
        "failure": {
            "@class": "org.apache.flink.api.scala.typeutils.ScalaTrySerializerUpgradeTest$SpecifiedException",
            "message": "Specified exception for ScalaTry.",
        }
    },
    "scala-enum-serializer": "A",  # EnumValueSerializerUpgradeTest: Letters.A
    # TraversableSerializerUpgradeTest's Setup classes (a BitSet iterates in order; Set(2, 3, 4) in insertion order)
    "traversable-serializer-bitset": [0, 2, 3],  # BitSet(3, 2, 0)
    "traversable-serializer-indexedseq": [1, 2, 3],  # IndexedSeq(1, 2, 3)
    "traversable-serializer-linearseq": [2, 3, 4],  # LinearSeq(2, 3, 4)
    "traversable-serializer-map": [_tuple2("Apache", 0), _tuple2("Flink", 1)],  # Map("Apache" -> 0, "Flink" -> 1)
    "traversable-serializer-mutable-list": [1, 2, 3],  # mutable.MutableList(1, 2, 3)
    "traversable-serializer-seq": [1, 2, 3],  # Seq(1, 2, 3)
    "traversable-serializer-set": [2, 3, 4],  # Set(2, 3, 4)
    "traversable-serializer-with-case-class": [_tuple2(0, "Apache"), _tuple2(1, "Flink")],  # Seq((0, "Apache"), ...)
    # Seq(new Pojo("Apache", 0), new Pojo("Flink", 1)): a PojoSerializer, fields by name
    "traversable-serializer-with-pojo": [{"count": 0, "name": "Apache"}, {"count": 1, "name": "Flink"}],
}


def _jar() -> Path:
    path = flink_test_corpus() / JAR
    if not path.exists():
        pytest.skip(f"{path} is fetched by setup (flink-test-corpus)")
    return path


def _pairs(jar: zipfile.ZipFile) -> list[str]:
    return sorted(name for name in jar.namelist() if PAIR.match(name))


@pytest.mark.needs_build
def test_every_pair_of_the_jar_decodes_to_its_tests_value() -> None:
    decoded: collections.Counter[str] = collections.Counter()
    with zipfile.ZipFile(_jar()) as jar:
        pairs = _pairs(jar)
        for member in pairs:
            match = PAIR.match(member)
            assert match is not None
            name = match.group("name")
            stream = DataInput(jar.read(member), member)
            snapshot, complete = read_serializer_snapshot(stream, "")
            assert complete, member
            stream.expect_end("the serializer snapshot")
            data_path = member.replace("/serializer-snapshot", "/test-data")
            data = DataInput(jar.read(data_path), data_path)
            value_decoder = decoder(snapshot)
            assert value_decoder is not None, member
            value = value_decoder(data)
            data.expect_end("the test data")
            assert value == EXPECTED[name], member
            decoded[name] += 1
    assert len(pairs) == 126
    assert decoded == {name: len(VERSIONS) for name in EXPECTED}


@pytest.mark.needs_build
def test_the_snapshots_name_their_classes_and_collections() -> None:
    """The case class named (field names are not in the snapshot) and the `cbfCode` kept as text, never run."""
    with zipfile.ZipFile(_jar()) as jar:
        case_class, _ = read_serializer_snapshot(
            DataInput(jar.read("scala-case-class-serializer-1.19/serializer-snapshot"), "case class"), ""
        )
        seq, _ = read_serializer_snapshot(
            DataInput(jar.read("traversable-serializer-seq-1.19/serializer-snapshot"), "seq"), ""
        )
    assert case_class.type_class == "org.apache.flink.api.scala.types.CustomCaseClass"
    assert [child.snapshot_class.rsplit(".", 1)[-1] for child in case_class.nested] == [
        "StringSerializer$StringSerializerSnapshot",
        "IntSerializer$IntSerializerSnapshot",
    ]
    assert seq.type_class == "implicitly[scala.collection.generic.CanBuildFrom[Seq[Int], Int, Seq[Int]]]"


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b"\x09\x06", 3),  # Long (registration 7): zigzag varint
        (b"\x09\x05", -3),
        (b"\x09" + b"\xfe" + b"\xff" * 7 + b"\xff", (1 << 63) - 1),  # 9 bytes, the last with 8 bits
        (b"\x02\xac\x02", 150),  # Integer (0)
        (b"\x05\x01", True),  # Boolean (3)
        (b"\x06\xff", -1),  # Byte (4)
        (b"\x07\x00\x41", "A"),  # Character (5)
        (b"\x0a\x3f\xf0\x00\x00\x00\x00\x00\x00", 1.0),  # Double (8)
        (b"\x00", None),  # null
    ],
)
def test_kryo_default_registrations(data: bytes, value: object) -> None:
    inp = DataInput(data, "kryo")
    assert kryo.read_kryo_value(inp) == value
    inp.expect_end("the Kryo value")


@pytest.mark.parametrize(
    ("data", "class_name"),
    [
        (
            b"\x03\x01\x82a",
            "java.lang.String",
        ),  # registered by Kryo, not decoded: the reference marker is Flink's choice
        (b"\x0c\x00", "the class of Kryo registration id 10"),  # registered after Kryo's own
        (b"\x01\x00com.Fo\xef", "com.Foo"),  # by name, ASCII
    ],
)
def test_other_kryo_classes_are_named_not_decoded(data: bytes, class_name: str) -> None:
    with pytest.raises(kryo.KryoClassNotDecodedError) as error:
        kryo.read_kryo_value(DataInput(data, "kryo"))
    assert error.value.class_name == class_name
    assert error.value.offset == 0


@pytest.mark.needs_build
def test_mutated_pairs_fail_only_with_input_error() -> None:
    """Fuzzing: every pair's snapshot and data mutated 40 times each (seeded, as flink-core's pairs are): reading
    them succeeds or raises InputError, never anything else, and memory stays bounded."""
    tracemalloc.start()
    try:
        with zipfile.ZipFile(_jar()) as jar:
            outcomes = fuzz_pairs(jar, _pairs(jar))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcomes["ok"] + outcomes["input_error"] == 126 * 40
    assert outcomes["input_error"] > 0
    assert peak < 16 << 20


def _kryo_codec(value_serializer: SerializerSnapshot) -> StateCodec:
    """A value state keyed by `Object` through Kryo, as the Scala ITCases are, with `VoidNamespace`."""
    state = StateMetaInfoSnapshot(
        "state",
        "KEY_VALUE",
        (("KEYED_STATE_TYPE", "VALUE"),),
        (
            SerializerSnapshot("NAMESPACE_SERIALIZER", VOID_NAMESPACE, 3),
            dataclasses.replace(value_serializer, key="VALUE_SERIALIZER"),
        ),
    )
    return StateCodec(state, SerializerSnapshot("KEY_SERIALIZER", KRYO, 2, type_class="java.lang.Object"), None)


KRYO_BY_NAME = b"\x01\x00com.Fo\xef"  # a class Kryo wrote by name, then its fields (not in the snapshot)
STATUS = "raw: " + KRYO + " (com.Foo): Kryo's field layout is not in the snapshot"


def test_a_canonical_entry_keeps_the_kryo_value_it_cannot_decode_as_bytes() -> None:
    """A canonical entry whose Kryo key or value is of a class outside Kryo's own registrations: that part is kept
    as bytes with the class named, what else decodes is decoded."""
    long_value = SerializerSnapshot("", LONG, 3)
    codec = _kryo_codec(long_value)
    row = codec.canonical_row(1, DataInput(b"\x09\x06\x00", "key"), DataInput(bytes(8), "value"))
    assert row == ("state", 1, 3, None, None, 0, "read")
    key = DataInput(KRYO_BY_NAME + b"\x2a\x00", "key")
    row = codec.canonical_row(1, key, DataInput(bytes(8), "value"))
    assert row == ("state", 1, Undecoded(KRYO, KRYO_BY_NAME + b"\x2a\x00"), None, None, 0, STATUS)
    kryo_value = SerializerSnapshot("", KRYO, 2, type_class="java.io.Serializable")
    row = _kryo_codec(kryo_value).canonical_row(1, DataInput(b"\x09\x06\x00", "key"), DataInput(KRYO_BY_NAME, "v"))
    assert row == ("state", 1, 3, None, None, Undecoded(KRYO, KRYO_BY_NAME, "java.io.Serializable"), STATUS)


def test_a_throwable_kryo_wrote_otherwise_is_named_not_decoded() -> None:
    """A `Try`'s Throwable must be Kryo's name, a reference marker or none, and a Java stream of that class."""
    with pytest.raises(kryo.KryoClassNotDecodedError) as no_stream:
        kryo.read_kryo_throwable(DataInput(KRYO_BY_NAME + b"\x01\x00\x00", "t"))
    assert no_stream.value.class_name == "com.Foo"
    with pytest.raises(kryo.KryoClassNotDecodedError) as registered:
        kryo.read_kryo_throwable(DataInput(b"\x0c\x00", "t"))
    assert registered.value.class_name == "the class of Kryo registration id 10"
    assert kryo.read_kryo_throwable(DataInput(b"\x00", "t")) is None
