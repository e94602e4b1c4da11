"""`TypeSerializerSnapshot`s as Flink writes them, and the values of the serializers this reader can decode.

A snapshot in a meta-info section is `TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot`:
`int 2` (the proxy version), then `TypeSerializerSnapshot.writeVersionedSnapshot`: `UTF snapshotClass, int
snapshotVersion` and a body that is *not* length-prefixed. Bodies read here: the empty one of every
`SimpleTypeSerializerSnapshot` (Flink's basic types, `VoidNamespaceSerializer`, `TimeWindow.Serializer`), and
`CompositeTypeSerializerSnapshot`'s (`ListSerializerSnapshot`, `MapSerializerSnapshot`, `TimerSerializerSnapshot`:
`int 911108, int outerVersion, outer snapshot, NestedSerializersSnapshotDelegate` = `int 1333245, int 1, int n, n
x writeVersionedSnapshot`; the Scala API's: `scalaserializers`). Any other body stops the walk: nothing after it is
guessed at here. Where the body of such a snapshot ends is only known when the whole section around it parses to
its end with no other choice of that end (`keyed.read_keyed_backend_header` searches for it); the walk is then
given that end (`Skips`) and steps over the body, kept as the snapshot's payload.

Values: `decoder(snapshot)` gives the function that reads one value the way the snapshot's serializer writes it
(`StringValue.writeString`, `DataOutput.writeLong`, `ListSerializer`, `MapSerializer`, `TimerSerializer`, ...), or
None for a serializer this reader does not know; its values are then kept as bytes with the snapshot class.
Layouts: splitaudit/savepoint/FORMAT.md, "Keyed state".
"""

from __future__ import annotations

import decimal
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import STRING_VALUE_VARINT_BYTES, DataInput
from splitaudit.savepoint import kryo, scalaserializers

SERIALIZER_SNAPSHOT_PROXY_VERSION = 2
# Where the body of an unknown serializer snapshot ends, by where it starts (positions of the section's DataInput)
Skips = Mapping[int, int]
NO_SKIPS: Skips = MappingProxyType({})
COMPOSITE_SNAPSHOT_MAGIC = 911108  # CompositeTypeSerializerSnapshot.MAGIC_NUMBER
NESTED_SNAPSHOTS_MAGIC = 1333245  # NestedSerializersSnapshotDelegate.MAGIC_NUMBER
NESTED_SNAPSHOTS_VERSION = 1
MAX_NESTED = 64  # snapshots nest a few levels deep in real jobs

_BASE = "org.apache.flink.api.common.typeutils.base."
STRING = _BASE + "StringSerializer$StringSerializerSnapshot"
LONG = _BASE + "LongSerializer$LongSerializerSnapshot"
INT = _BASE + "IntSerializer$IntSerializerSnapshot"
SHORT = _BASE + "ShortSerializer$ShortSerializerSnapshot"
BYTE = _BASE + "ByteSerializer$ByteSerializerSnapshot"
BOOLEAN = _BASE + "BooleanSerializer$BooleanSerializerSnapshot"
DOUBLE = _BASE + "DoubleSerializer$DoubleSerializerSnapshot"
FLOAT = _BASE + "FloatSerializer$FloatSerializerSnapshot"
BYTE_ARRAY = _BASE + "array.BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot"
CHAR = _BASE + "CharSerializer$CharSerializerSnapshot"
DATE = _BASE + "DateSerializer$DateSerializerSnapshot"
SQL_DATE = _BASE + "SqlDateSerializer$SqlDateSerializerSnapshot"
SQL_TIME = _BASE + "SqlTimeSerializer$SqlTimeSerializerSnapshot"
SQL_TIMESTAMP = _BASE + "SqlTimestampSerializer$SqlTimestampSerializerSnapshot"
INSTANT = _BASE + "InstantSerializer$InstantSerializerSnapshot"
LOCAL_DATE = _BASE + "LocalDateSerializer$LocalDateSerializerSnapshot"
LOCAL_TIME = _BASE + "LocalTimeSerializer$LocalTimeSerializerSnapshot"
LOCAL_DATE_TIME = _BASE + "LocalDateTimeSerializer$LocalDateTimeSerializerSnapshot"
BIG_INT = _BASE + "BigIntSerializer$BigIntSerializerSnapshot"
BIG_DEC = _BASE + "BigDecSerializer$BigDecSerializerSnapshot"
STRING_VALUE = _BASE + "StringValueSerializer$StringValueSerializerSnapshot"
NULL_VALUE = _BASE + "NullValueSerializer$NullValueSerializerSnapshot"
STRING_ARRAY = _BASE + "array.StringArraySerializer$StringArraySerializerSnapshot"
ENUM = _BASE + "EnumSerializer$EnumSerializerSnapshot"
# flink-scala's `Enumeration` values (`EnumValueSerializer`: `int id`)
SCALA_ENUM = "org.apache.flink.api.scala.typeutils.ScalaEnumSerializerSnapshot"
LIST = _BASE + "ListSerializerSnapshot"
MAP = _BASE + "MapSerializerSnapshot"
_RUNTIME = "org.apache.flink.api.java.typeutils.runtime."
GENERIC_ARRAY = _BASE + "GenericArraySerializerSnapshot"
TUPLE = _RUNTIME + "TupleSerializerSnapshot"
EITHER = _RUNTIME + "JavaEitherSerializerSnapshot"
NULLABLE = _RUNTIME + "NullableSerializer$NullableSerializerSnapshot"
ROW = _RUNTIME + "RowSerializer$RowSerializerSnapshot"
POJO = _RUNTIME + "PojoSerializerSnapshot"
POJO_IS_NULL, POJO_NO_SUBCLASS, POJO_IS_SUBCLASS, POJO_IS_TAGGED_SUBCLASS = 1, 2, 4, 8  # PojoSerializer's flags
KRYO = _RUNTIME + "kryo.KryoSerializerSnapshot"
VALUE = _RUNTIME + "ValueSerializer$ValueSerializerSnapshot"
COPYABLE_VALUE = _RUNTIME + "CopyableValueSerializer$CopyableValueSerializerSnapshot"
LINKED_OPTIONAL_MAP_HEADER = 0x4F2C69A3D70  # LinkedOptionalMapSerializer.HEADER
# Serializers whose values this reader keeps as bytes: their layout is not in the snapshot (never guessed).
RAW_REASONS = {
    KRYO: "Kryo's field layout is not in the snapshot",
    VALUE: "the Value's write() is the job's code, its layout is not in the snapshot",
    COPYABLE_VALUE: "the CopyableValue's write() is the job's code, its layout is not in the snapshot",
    **scalaserializers.RAW_REASONS,
}
ROW_KINDS = ("INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE")  # RowKind.toByteValue order
VOID_NAMESPACE = "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot"
TIME_WINDOW = "org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer$TimeWindowSerializerSnapshot"
GLOBAL_WINDOW = (
    "org.apache.flink.streaming.api.windowing.windows.GlobalWindow$Serializer$GlobalWindowSerializerSnapshot"
)
TIMER = "org.apache.flink.streaming.api.operators.TimerSerializerSnapshot"
# A state with TTL (`StateTtlConfig`): `TtlStateFactory.TtlSerializer`, a `CompositeSerializer` of
# `TtlValue(long lastAccessTimestamp, T userValue)` (flink-runtime 1.19); its snapshot's outer snapshot is empty.
TTL = "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot"
# Beam's CoderTypeSerializer snapshot (Flink 1.19 runner): `int len, byte[len]` = the serializer, Java-serialized
# by Beam's SerializableUtils (Snappy-compressed), its Coder inside. Kept as bytes: the Beam layer reads the coder.
BEAM_CODER_SNAPSHOT = "org.apache.beam.runners.flink.translation.types.UnversionedTypeSerializerSnapshot"

# `*Value` twins of the primitives (`BooleanValueSerializer`, ...): the same bytes as the primitive serializer.
VALUE_TWINS = {
    _BASE + f"{name}ValueSerializer${name}ValueSerializerSnapshot": _BASE + f"{name}Serializer${name}SerializerSnapshot"
    for name in ("Boolean", "Byte", "Char", "Double", "Float", "Int", "Long", "Short")
}
# Primitive arrays (`IntPrimitiveArraySerializer`, ...): `int length`, then each element as the primitive.
PRIMITIVE_ARRAYS = {
    _BASE + f"array.{name}PrimitiveArraySerializer${name}PrimitiveArraySerializerSnapshot": _BASE
    + f"{name}Serializer${name}SerializerSnapshot"
    for name in ("Boolean", "Char", "Double", "Float", "Int", "Long", "Short")
}
# SimpleTypeSerializerSnapshot subclasses: their body is empty.
EMPTY_BODY_SNAPSHOTS = frozenset(
    {
        STRING,
        LONG,
        INT,
        SHORT,
        BYTE,
        BOOLEAN,
        DOUBLE,
        FLOAT,
        BYTE_ARRAY,
        VOID_NAMESPACE,
        TIME_WINDOW,
        GLOBAL_WINDOW,
        CHAR,
        DATE,
        SQL_DATE,
        SQL_TIME,
        SQL_TIMESTAMP,
        INSTANT,
        LOCAL_DATE,
        LOCAL_TIME,
        LOCAL_DATE_TIME,
        BIG_INT,
        BIG_DEC,
        STRING_VALUE,
        NULL_VALUE,
        STRING_ARRAY,
        scalaserializers.UNIT,
    }
    | VALUE_TWINS.keys()
    | PRIMITIVE_ARRAYS.keys()
)
# CompositeTypeSerializerSnapshot subclasses whose outer snapshot is empty.
COMPOSITE_SNAPSHOTS = frozenset({LIST, MAP, TIMER, GENERIC_ARRAY, TUPLE, EITHER, NULLABLE, ROW, TTL}) | (
    scalaserializers.COMPOSITES
)

# TypeSerializer.getLength() of the fixed-length serializers (-1, variable, for every other known one).
FIXED_LENGTHS = {
    CHAR: 2,
    DATE: 8,
    SQL_DATE: 8,
    SQL_TIME: 8,
    SQL_TIMESTAMP: 12,
    INSTANT: 12,
    LOCAL_DATE: 6,
    LOCAL_TIME: 7,
    LOCAL_DATE_TIME: 13,
    ENUM: 4,
    LONG: 8,
    INT: 4,
    SHORT: 2,
    BYTE: 1,
    BOOLEAN: 1,
    DOUBLE: 8,
    FLOAT: 4,
    VOID_NAMESPACE: 0,
    TIME_WINDOW: 16,
    GLOBAL_WINDOW: 0,  # getLength() 0 though it writes a byte: not variable-sized in a RocksDB composite key
    scalaserializers.UNIT: 1,
}

FIXED_LENGTHS.update({twin: FIXED_LENGTHS[primitive] for twin, primitive in VALUE_TWINS.items()})

_DOUBLE = struct.Struct(">d")
_FLOAT = struct.Struct(">f")


@dataclass(frozen=True)
class SerializerSnapshot:
    """One `TypeSerializerSnapshot`: its class, version and (composite serializers) nested snapshots.

    `key` is the meta-info key it was stored under (`KEY_SERIALIZER`, `NAMESPACE_SERIALIZER`, `VALUE_SERIALIZER`),
    "" for a nested snapshot.
    """

    key: str
    snapshot_class: str
    snapshot_version: int
    nested: tuple[SerializerSnapshot, ...] = ()
    payload: bytes = b""  # a length-prefixed body kept whole (BEAM_CODER_SNAPSHOT) ...
    payload_path: str = ""  # ... and the file and absolute offset it was read from, for errors
    payload_offset: int = 0
    type_class: str = ""  # EnumSerializerSnapshot: the enum's class ...
    names: tuple[str, ...] = ()  # ... and its constants, in ordinal order
    subclasses: tuple[str, ...] = ()  # PojoSerializerSnapshot: registered subclasses (by tag), then the others
    # PojoSerializerSnapshot: how many subclasses are registered; NullableSerializer: the null padding's length;
    # RowSerializer: 1 if rows carry a RowKind
    parameter: int = 0


def read_serializer_snapshot(stream: DataInput, key: str, skips: Skips = NO_SKIPS) -> tuple[SerializerSnapshot, bool]:
    """`writeSerializerSnapshot`'s bytes; False when the body is one this reader cannot step over (the stream
    is then left right after the snapshot's version, where the unknown body starts) and `skips` does not say
    where it ends."""
    at = stream.tell()
    proxy_version = stream.read_int("serializer snapshot proxy version")
    if proxy_version != SERIALIZER_SNAPSHOT_PROXY_VERSION:
        raise stream.error(f"serializer snapshot proxy version {proxy_version} (expected 2)", at)
    return _read_versioned_snapshot(stream, key, 0, skips)


def _read_versioned_snapshot(
    stream: DataInput, key: str, depth: int, skips: Skips = NO_SKIPS
) -> tuple[SerializerSnapshot, bool]:
    """`TypeSerializerSnapshot.writeVersionedSnapshot`: `UTF class, int version, body`."""
    if depth > MAX_NESTED:
        raise stream.error(f"serializer snapshots nested more than {MAX_NESTED} deep")
    snapshot_class = stream.read_utf("serializer snapshot class")
    version = stream.read_int("serializer snapshot version")
    if snapshot_class in EMPTY_BODY_SNAPSHOTS:
        return SerializerSnapshot(key, snapshot_class, version), True
    if snapshot_class == ENUM:
        return _read_enum_snapshot(stream, key, version), True
    if snapshot_class == SCALA_ENUM and version == 3:
        return _read_scala_enum_snapshot(stream, key, version), True
    if snapshot_class in (VALUE, COPYABLE_VALUE) and version == 2:
        # GenericTypeSerializerSnapshot: `UTF typeClass`.
        return SerializerSnapshot(key, snapshot_class, version, type_class=stream.read_utf("value class")), True
    if snapshot_class == POJO and version == 2:
        return _read_pojo_snapshot(stream, key, version, depth), True
    if snapshot_class == KRYO and version == 2:
        return _read_kryo_snapshot(stream, key, version), True
    if snapshot_class == BEAM_CODER_SNAPSHOT:
        at = stream.offset() + 4  # after the length
        payload = stream.read_length_prefixed("Beam CoderTypeSerializer snapshot")
        return SerializerSnapshot(key, snapshot_class, version, (), payload, stream.path, at), True
    if snapshot_class not in COMPOSITE_SNAPSHOTS:
        start = stream.tell()
        end = skips.get(start)
        if end is not None:
            at = stream.offset()
            body = stream.read_bytes(end - start, f"body of serializer snapshot {snapshot_class}")
            return SerializerSnapshot(key, snapshot_class, version, (), body, stream.path, at), True
        framed = _unknown_composite(stream, key, snapshot_class, version, depth, skips)
        if framed is not None:
            return framed
        stream.seek(start)
        return SerializerSnapshot(key, snapshot_class, version), False
    at = stream.tell()
    if stream.read_int("composite serializer snapshot magic") != COMPOSITE_SNAPSHOT_MAGIC:
        raise stream.error(f"{snapshot_class}: bad CompositeTypeSerializerSnapshot magic number", at)
    outer_version = stream.read_int("outer snapshot version")
    type_class, parameter = _read_outer_snapshot(stream, snapshot_class, outer_version)
    nested, complete = _read_nested(stream, snapshot_class, depth, skips)
    found = SerializerSnapshot(key, snapshot_class, version, nested, type_class=type_class, parameter=parameter)
    return found, complete


def _read_nested(
    stream: DataInput, snapshot_class: str, depth: int, skips: Skips
) -> tuple[tuple[SerializerSnapshot, ...], bool]:
    """`NestedSerializersSnapshotDelegate.writeNestedSerializerSnapshots`: `int 1333245, int 1, int n, n x
    writeVersionedSnapshot`; False when a nested body stopped the walk."""
    at = stream.tell()
    if stream.read_int("nested serializer snapshots magic") != NESTED_SNAPSHOTS_MAGIC:
        raise stream.error(f"{snapshot_class}: bad NestedSerializersSnapshotDelegate magic number", at)
    at = stream.tell()
    if (version_read := stream.read_int("nested serializer snapshots version")) != NESTED_SNAPSHOTS_VERSION:
        raise stream.error(f"{snapshot_class}: nested serializer snapshots version {version_read} (expected 1)", at)
    nested = []
    complete = True
    for _ in range(stream.read_length("number of nested serializer snapshots", 6)):
        child, complete = _read_versioned_snapshot(stream, "", depth + 1, skips)
        nested.append(child)
        if not complete:
            break
    return tuple(nested), complete


# An outer snapshot of an unknown composite snapshot is looked for this far ahead (a class name or a few fields)
MAX_OUTER_SNAPSHOT_BYTES = 4096
NESTED_DELEGATE_START = struct.pack(">ii", NESTED_SNAPSHOTS_MAGIC, NESTED_SNAPSHOTS_VERSION)


def _unknown_composite(
    stream: DataInput, key: str, snapshot_class: str, version: int, depth: int, skips: Skips
) -> tuple[SerializerSnapshot, bool] | None:
    """A snapshot of a class this reader does not know whose body is a `CompositeTypeSerializerSnapshot`'s (many of
    a job's own serializers): `int 911108, int outerVersion`, an outer snapshot only its class knows, then the nested
    snapshots' delegate, found by its magic number and version right after the outer snapshot, and read as every
    other. None (the stream where
    it was) when the body is not that, or the delegate is not found or does not read."""
    start = stream.tell()
    if stream.remaining() < 12 or stream.read_int("composite serializer snapshot magic") != COMPOSITE_SNAPSHOT_MAGIC:
        stream.seek(start)
        return None
    stream.read_int("outer snapshot version")
    outer_at = stream.tell()
    ahead = stream.read_bytes(min(stream.remaining(), MAX_OUTER_SNAPSHOT_BYTES + 8), "outer snapshot")
    outer_length = ahead.find(NESTED_DELEGATE_START)
    if outer_length < 0:
        stream.seek(start)
        return None
    outer = ahead[:outer_length]
    stream.seek(outer_at + outer_length)
    try:
        nested, complete = _read_nested(stream, snapshot_class, depth, skips)
    except InputError:
        stream.seek(start)
        return None
    # an outer snapshot that is one class name (the case class's): kept as the type
    one_name = len(outer) >= 2 and int.from_bytes(outer[:2], "big") == len(outer) - 2
    name = outer[2:].decode("utf-8", "replace") if one_name else ""
    return SerializerSnapshot(key, snapshot_class, version, nested, type_class=name), complete


def _read_outer_snapshot(stream: DataInput, snapshot_class: str, outer_version: int) -> tuple[str, int]:
    """A `CompositeTypeSerializerSnapshot`'s outer snapshot: `UTF componentClass` (`GenericArraySerializerSnapshot`)
    or `UTF tupleClass` (`TupleSerializerSnapshot`); `int nullPaddingLength` (`NullableSerializerSnapshot`);
    `RowSerializerSnapshot`: nothing up to outer version 3 (rows carry a RowKind from version 3), then `bool
    supportsRowKind`; the Scala API's (`scalaserializers`); empty for the others."""
    if snapshot_class in scalaserializers.COMPOSITES:
        return scalaserializers.read_outer_snapshot(stream, snapshot_class), 0
    if snapshot_class in (GENERIC_ARRAY, TUPLE):
        return stream.read_utf("outer snapshot class"), 0
    if snapshot_class == NULLABLE:
        at = stream.tell()
        padding = stream.read_int("null padding length")
        if not 0 <= padding <= 1 << 16:
            raise stream.error(f"null padding length {padding}", at)
        return "", padding
    if snapshot_class == ROW:
        if outer_version < 3:
            return "", 0
        return "", 1 if outer_version == 3 or stream.read_bool("supportsRowKind") else 0
    return "", 0


def _read_kryo_snapshot(stream: DataInput, key: str, version: int) -> SerializerSnapshot:
    """`KryoSerializerSnapshot` version 2 (`KryoSerializerSnapshotData`): `UTF typeClass`, then three
    `LinkedOptionalMapSerializer` maps (registrations, default serializers, default serializer classes); `names` are
    the registered classes."""
    type_class = stream.read_utf("Kryo type class")
    registered = _read_optional_map_names(stream)
    _read_optional_map_names(stream)
    _read_optional_map_names(stream)
    return SerializerSnapshot(key, KRYO, version, type_class=type_class, names=registered)


def _read_pojo_snapshot(stream: DataInput, key: str, version: int, depth: int) -> SerializerSnapshot:
    """`PojoSerializerSnapshot` version 2 (`PojoSerializerSnapshotData`): `UTF pojoClass`, then three
    `LinkedOptionalMapSerializer` maps whose values are framed `writeVersionedSnapshot`s: the fields (by name, in
    the serializer's order), the registered subclasses (in tag order), the non-registered ones. A framed snapshot
    this reader does not know is kept by class: the frame is stepped over."""
    pojo_class = stream.read_utf("POJO class")
    fields = _read_optional_map(stream, depth)
    registered = _read_optional_map(stream, depth)
    others = _read_optional_map(stream, depth)
    return SerializerSnapshot(
        key,
        POJO,
        version,
        tuple(child for _, child in fields + registered + others),
        type_class=pojo_class,
        names=tuple(name for name, _ in fields),
        subclasses=tuple(name for name, _ in registered + others),
        parameter=len(registered),
    )


def _read_optional_map(stream: DataInput, depth: int) -> list[tuple[str, SerializerSnapshot]]:
    """`LinkedOptionalMapSerializer.writeOptionalMap` whose values are framed serializer snapshots: (name,
    snapshot) pairs; an absent value is a snapshot of class "" (no decoder)."""
    at = stream.tell()
    if stream.read_long("optional map header") != LINKED_OPTIONAL_MAP_HEADER:
        raise stream.error("bad LinkedOptionalMapSerializer header", at)
    entries = []
    for _ in range(stream.read_length("optional map size", 4)):
        name = stream.read_utf("optional map key name")
        if stream.read_bool("optional map key present"):
            stream.skip(stream.read_length("optional map key length"), "optional map key")
        child = SerializerSnapshot("", "", 0)
        if stream.read_bool("optional map value present"):
            frame = stream.sub(stream.read_length("framed snapshot length"), "framed serializer snapshot")
            child, _ = _read_versioned_snapshot(frame, "", depth + 1)
        entries.append((name, child))
    return entries


def _read_optional_map_names(stream: DataInput) -> tuple[str, ...]:
    """`LinkedOptionalMapSerializer.writeOptionalMap`: `long HEADER, int n, n x (UTF keyName, bool hasKey, [int len,
    key bytes], bool hasValue, [int len, value bytes])`; the key names, the framed bytes stepped over."""
    at = stream.tell()
    if stream.read_long("optional map header") != LINKED_OPTIONAL_MAP_HEADER:
        raise stream.error("bad LinkedOptionalMapSerializer header", at)
    names = []
    for _ in range(stream.read_length("optional map size", 4)):
        names.append(stream.read_utf("optional map key name"))
        for what in ("optional map key", "optional map value"):
            if stream.read_bool(f"{what} present"):
                stream.skip(stream.read_length(f"{what} length"), what)
    return tuple(names)


def _read_enum_snapshot(stream: DataInput, key: str, version: int) -> SerializerSnapshot:
    """`EnumSerializer.EnumSerializerSnapshot` (version 3): `UTF enumClass, int n, n x UTF constant name`."""
    enum_class = stream.read_utf("enum class")
    names = tuple(stream.read_utf("enum constant") for _ in range(stream.read_length("number of enum constants", 2)))
    return SerializerSnapshot(key, ENUM, version, type_class=enum_class, names=names)


def _read_scala_enum_snapshot(stream: DataInput, key: str, version: int) -> SerializerSnapshot:
    """`ScalaEnumSerializerSnapshot` (version 3): `UTF enumClass, int n, n x (UTF name, int id)`. The values
    (`int id`) are named when the ids are 0..n-1 in order, as Scala numbers an `Enumeration`'s values by default;
    otherwise `names` stays empty and they are kept as bytes."""
    enum_class = stream.read_utf("Scala enumeration class")
    constants = [
        (stream.read_utf("enumeration value name"), stream.read_int("enumeration value id"))
        for _ in range(stream.read_length("number of enumeration values", 6))
    ]
    dense = [ident for _, ident in constants] == list(range(len(constants)))
    names = tuple(name for name, _ in constants) if dense else ()
    return SerializerSnapshot(key, SCALA_ENUM, version, type_class=enum_class, names=names)


Decoder = scalaserializers.Decoder  # one value read as its serializer writes it
# Decoders a layer above supplies for snapshots Flink does not define (Beam's coders): None when it has none.
Resolver = Callable[["SerializerSnapshot"], "Decoder | None"]


def raw_reason(snapshot: SerializerSnapshot) -> str | None:
    """Why the values of this (known) serializer are kept as bytes (Kryo, a job's `Value` types), or None."""
    return RAW_REASONS.get(snapshot.snapshot_class)


def may_refuse(snapshot: SerializerSnapshot) -> bool:
    """Whether this snapshot's decoder may raise `kryo.KryoClassNotDecodedError` for a value it cannot decode
    (Kryo's, where the declared type admits other classes than Kryo's own; a Scala `Try`'s `Failure`)."""
    if snapshot.snapshot_class == scalaserializers.TRY:
        return True
    if snapshot.snapshot_class == KRYO:
        return kryo.decodes(snapshot.type_class)
    return any(may_refuse(child) for child in snapshot.nested)


def fixed_length(snapshot: SerializerSnapshot) -> int | None:
    """`TypeSerializer.getLength()` of a known fixed-length serializer; None for variable or unknown ones.

    RocksDB's composite keys carry the key's length only after a variable-length key, so a composite serializer of
    fixed-length fields must say so: `TupleSerializerBase.getLength()` is the sum of its fields' lengths when every
    one is positive, and a `NullableSerializer` that pads nulls is its flag byte and the padding."""
    if snapshot.snapshot_class == TUPLE:
        lengths = [fixed_length(child) for child in snapshot.nested]
        return sum(length for length in lengths if length) if all(lengths) else None
    if snapshot.snapshot_class == NULLABLE:
        return 1 + snapshot.parameter if snapshot.parameter > 0 else None
    return FIXED_LENGTHS.get(snapshot.snapshot_class)


def decoder(snapshot: SerializerSnapshot, resolve: Resolver | None = None) -> Decoder | None:
    """The function reading one value as this snapshot's serializer writes it, or None if it is unknown.

    `resolve` is asked for the snapshots Flink does not define (a Beam `CoderTypeSerializer`'s)."""
    simple = _SIMPLE.get(snapshot.snapshot_class)
    if simple is not None:
        return simple
    if snapshot.snapshot_class == ENUM or (snapshot.snapshot_class == SCALA_ENUM and snapshot.names):
        return lambda inp: _read_enum(inp, snapshot.names)
    if snapshot.snapshot_class == POJO:
        return _pojo_decoder(snapshot, resolve)
    if snapshot.snapshot_class == KRYO:
        # a class Kryo registers by default, where the declared type admits one (`kryo`); else kept as bytes
        return kryo.read_kryo_value if kryo.decodes(snapshot.type_class) else None
    if snapshot.snapshot_class not in COMPOSITE_SNAPSHOTS:
        return None if resolve is None or not snapshot.snapshot_class else resolve(snapshot)
    if snapshot.snapshot_class == scalaserializers.TRY and len(snapshot.nested) == 2:  # its Throwable: Kryo's
        element = decoder(snapshot.nested[0], resolve)
        return None if element is None else scalaserializers.try_decoder(element)
    children: list[Decoder] = []
    for child in snapshot.nested:
        child_decoder = decoder(child, resolve)
        if child_decoder is None:
            return None
        children.append(child_decoder)
    if snapshot.snapshot_class in scalaserializers.COMPOSITES:
        return scalaserializers.composite_decoder(snapshot.snapshot_class, snapshot.type_class, children)
    if snapshot.snapshot_class == LIST and len(children) == 1:
        element = children[0]
        return lambda inp: [element(inp) for _ in range(inp.read_length("list size"))]
    if snapshot.snapshot_class == MAP and len(children) == 2:
        map_key, map_value = children
        return lambda inp: _read_map(inp, map_key, map_value)
    if snapshot.snapshot_class == GENERIC_ARRAY and len(children) == 1:
        component = children[0]
        return lambda inp: [
            component(inp) if inp.read_bool("array element present") else None
            for _ in range(inp.read_length("array length"))
        ]
    if snapshot.snapshot_class == TUPLE:
        return lambda inp: {f"f{index}": field(inp) for index, field in enumerate(children)}
    if snapshot.snapshot_class == EITHER and len(children) == 2:
        left, right = children
        return lambda inp: {"left": left(inp)} if inp.read_bool("Either isLeft") else {"right": right(inp)}
    if snapshot.snapshot_class == NULLABLE and len(children) == 1:
        return lambda inp: _read_nullable(inp, children[0], snapshot.parameter)
    if snapshot.snapshot_class == ROW:
        return lambda inp: _read_row(inp, children, snapshot.parameter == 1)
    if snapshot.snapshot_class == TIMER and len(children) == 2:
        timer_key, timer_namespace = children
        return lambda inp: _read_timer(inp, timer_key, timer_namespace)
    if snapshot.snapshot_class == TTL and len(children) == 2:
        timestamp, user_value = children
        return lambda inp: {"last_access_timestamp": timestamp(inp), "value": user_value(inp)}
    return None


def read_string_value(inp: DataInput) -> str | None:
    """`StringValue.readString`: length + 1 as a 7-bit varint (0 = null), then each UTF-16 unit as a varint
    (`DataInput.read_string_value`)."""
    return inp.read_string_value()


def _read_map(inp: DataInput, key: Decoder, value: Decoder) -> list[list[Any]]:
    """`MapSerializer`: `int size`, then per entry the key, `bool isNull` and (unless null) the value; as
    `[key, value]` pairs, since keys need not be strings."""
    entries: list[list[Any]] = []
    for _ in range(inp.read_length("map size")):
        entry_key = key(inp)
        entries.append([entry_key, None if inp.read_bool("map value null flag") else value(inp)])
    return entries


def _pojo_decoder(snapshot: SerializerSnapshot, resolve: Resolver | None) -> Decoder | None:
    """`PojoSerializer`: a flag byte; null; or (NO_SUBCLASS) per field `bool isNull` then the value; or a
    subclass, `byte tag` (registered) or `UTF className`, then that subclass's serializer's bytes. As a dict of
    field names; a subclass's carries `"@class"`. None when a field's serializer is unknown."""
    fields = []
    for name, child in zip(snapshot.names, snapshot.nested, strict=False):
        child_decoder = decoder(child, resolve)
        if child_decoder is None:
            return None
        fields.append((name, child_decoder))
    subclass_snapshots = dict(zip(snapshot.subclasses, snapshot.nested[len(snapshot.names) :], strict=False))
    registered = snapshot.subclasses[: snapshot.parameter]

    def read_pojo(inp: DataInput) -> dict[str, Any] | None:
        at = inp.tell()
        flags = inp.read_unsigned_byte("POJO flags")
        if flags & POJO_IS_NULL:
            return None
        if flags & POJO_NO_SUBCLASS:
            return {name: None if inp.read_bool("POJO field isNull") else read(inp) for name, read in fields}
        if flags & POJO_IS_TAGGED_SUBCLASS:
            tag = inp.read_unsigned_byte("POJO subclass tag")
            if tag >= len(registered):
                raise inp.error(f"POJO subclass tag {tag}, {len(registered)} registered", at)
            subclass = registered[tag]
        elif flags & POJO_IS_SUBCLASS:
            subclass = inp.read_utf("POJO subclass name")
        else:
            raise inp.error(f"POJO flags {flags}", at)
        sub_snapshot = subclass_snapshots.get(subclass)
        sub_decoder = None if sub_snapshot is None else decoder(sub_snapshot, resolve)
        if sub_decoder is None:
            raise inp.error(f"POJO subclass {subclass!r} has no serializer this reader decodes", at)
        value = sub_decoder(inp)
        return {"@class": subclass, **value} if isinstance(value, dict) else {"@class": subclass, "value": value}

    return read_pojo


def _read_nullable(inp: DataInput, value: Decoder, padding: int) -> Any:
    """`NullableSerializer`: `bool isNull`, then the padding's bytes (null) or the value."""
    if inp.read_bool("Nullable isNull"):
        inp.skip(padding, "null padding")
        return None
    return value(inp)


def _read_row(inp: DataInput, fields: list[Decoder], row_kind: bool) -> dict[str, Any]:
    """`RowSerializer`: a bit mask, most significant bit first, of (2 RowKind bits, when the snapshot says rows
    carry one, then) one null bit per field; then each non-null field. Field names are not in the snapshot: the
    fields are positional."""
    offset = 2 if row_kind else 0
    mask = inp.read_bytes((offset + len(fields) + 7) // 8, "row null mask")
    bits = [bool(mask[i // 8] & (0x80 >> (i % 8))) for i in range(offset + len(fields))]
    kind = ROW_KINDS[bits[0] + 2 * bits[1]] if row_kind else "INSERT"
    values = [None if bits[offset + index] else field(inp) for index, field in enumerate(fields)]
    return {"kind": kind, "fields": values}


def _read_timer(inp: DataInput, key: Decoder, namespace: Decoder) -> dict[str, Any]:
    """`TimerSerializer`: the timestamp with its sign bit flipped (so bytes sort as numbers), key, namespace."""
    timestamp = inp.read_long("timer timestamp") ^ -(1 << 63)
    return {"timestamp": timestamp, "key": key(inp), "namespace": namespace(inp)}


def _read_void_namespace(inp: DataInput) -> None:
    """`VoidNamespaceSerializer` writes one byte, 0, to make progress in the stream."""
    if inp.read_unsigned_byte("VoidNamespace") != 0:
        raise inp.error("VoidNamespace byte is not 0", inp.tell() - 1)


def _read_global_window(inp: DataInput) -> str:
    """`GlobalWindow.Serializer`: one byte (0), the one window there is."""
    inp.read_unsigned_byte("GlobalWindow")
    return "GlobalWindow"


def _read_time_window(inp: DataInput) -> dict[str, int]:
    """`TimeWindow.Serializer`: `long start, long end`."""
    return {"start": inp.read_long("window start"), "end": inp.read_long("window end")}


def _read_enum(inp: DataInput, names: tuple[str, ...]) -> str:
    """`EnumSerializer`: `int ordinal` into the constants the snapshot lists."""
    at = inp.tell()
    ordinal = inp.read_int("enum ordinal")
    if not 0 <= ordinal < len(names):
        raise inp.error(f"enum ordinal {ordinal} outside the snapshot's {len(names)} constants", at)
    return names[ordinal]


def _nullable_millis(inp: DataInput) -> int | None:
    """`DateSerializer`, `SqlDateSerializer`, `SqlTimeSerializer`: `long getTime()`, Long.MIN_VALUE for null."""
    millis = inp.read_long("epoch milliseconds")
    return None if millis == -(1 << 63) else millis


def _read_timestamp(inp: DataInput) -> dict[str, int] | None:
    """`SqlTimestampSerializer`: `long getTime(), int getNanos()`; Long.MIN_VALUE for null."""
    millis = inp.read_long("timestamp milliseconds")
    nanos = inp.read_int("timestamp nanoseconds")
    return None if millis == -(1 << 63) else {"epoch_millis": millis, "nanos": nanos}


def _read_instant(inp: DataInput) -> dict[str, int] | None:
    """`InstantSerializer`: `long epochSecond, int nano`; Long.MIN_VALUE, Integer.MIN_VALUE for null."""
    seconds = inp.read_long("instant seconds")
    nanos = inp.read_int("instant nanoseconds")
    return None if seconds == -(1 << 63) and nanos == -(1 << 31) else {"epoch_second": seconds, "nano": nanos}


def _read_local_date(inp: DataInput) -> str | None:
    """`LocalDateSerializer` (Flink 1.19): `int year, byte month, byte day`; null is `int Integer.MIN_VALUE, short
    Short.MIN_VALUE`. As ISO `yyyy-mm-dd`."""
    at = inp.tell()
    year = inp.read_int("LocalDate year")
    if year == -(1 << 31):
        inp.read_short("LocalDate null padding")
        return None
    month = inp.read_unsigned_byte("LocalDate month")
    day = inp.read_unsigned_byte("LocalDate day")
    if not (1 <= month <= 12 and 1 <= day <= 31):
        raise inp.error(f"LocalDate month {month} day {day} out of range", at)
    return f"{year:04d}-{month:02d}-{day:02d}"


def _read_local_time(inp: DataInput) -> str | None:
    """`LocalTimeSerializer` (Flink 1.19): `byte hour, byte minute, byte second, int nano`; null is `byte
    Byte.MIN_VALUE, short Short.MIN_VALUE, int Integer.MIN_VALUE`. As ISO `hh:mm:ss.nnnnnnnnn`."""
    at = inp.tell()
    hour = int.from_bytes(inp.read_bytes(1, "LocalTime hour"), "big", signed=True)
    if hour == -128:
        inp.read_short("LocalTime null padding")
        inp.read_int("LocalTime null padding")
        return None
    minute = inp.read_unsigned_byte("LocalTime minute")
    second = inp.read_unsigned_byte("LocalTime second")
    nano = inp.read_int("LocalTime nano")
    if not (0 <= hour < 24 and minute < 60 and second < 60 and 0 <= nano < 1_000_000_000):
        raise inp.error(f"LocalTime {hour}:{minute}:{second}.{nano} out of range", at)
    return f"{hour:02d}:{minute:02d}:{second:02d}.{nano:09d}"


def _read_local_date_time(inp: DataInput) -> str | None:
    """`LocalDateTimeSerializer` (Flink 1.19): `LocalDateSerializer` then `LocalTimeSerializer`, both null for
    null (one null alone is an error, as Flink's `deserialize` says). As ISO `yyyy-mm-ddThh:mm:ss.nnnnnnnnn`."""
    at = inp.tell()
    date = _read_local_date(inp)
    time = _read_local_time(inp)
    if date is None and time is None:
        return None
    if date is None or time is None:
        raise inp.error("exactly one of LocalDate and LocalTime is null", at)
    return f"{date}T{time}"


def _read_big_int(inp: DataInput) -> int | None:
    """`BigIntSerializer.writeBigInteger`: `int n`: 0 null, 1 ZERO, 2 ONE, 3 TEN, else n - 4 two's-complement
    big-endian bytes (`BigInteger.toByteArray`)."""
    at = inp.tell()
    n = inp.read_int("BigInteger length")
    if n < 0:
        raise inp.error(f"negative BigInteger length {n}", at)
    if n < 4:
        return (None, 0, 1, 10)[n]
    return int.from_bytes(inp.read_bytes(n - 4, "BigInteger bytes"), "big", signed=True)


def _read_big_dec(inp: DataInput) -> str | None:
    """`BigDecSerializer.writeBigDecimal`: the unscaled value as `writeBigInteger`, then `int scale`; as the
    decimal's string (`unscaledE-scale`), JSON numbers being doubles."""
    unscaled = _read_big_int(inp)
    if unscaled is None:
        return None
    scale = inp.read_int("BigDecimal scale")
    digits = tuple(int(digit) for digit in str(abs(unscaled)))
    return str(decimal.Decimal((int(unscaled < 0), digits, -scale)))  # exact: no context rounds or traps


def _read_char(inp: DataInput) -> str:
    """`CharSerializer`: `writeChar`, one UTF-16 unit, as a one-character string."""
    return chr(inp.read_unsigned_short("char value"))


def _read_string_value_type(inp: DataInput) -> str:
    """`StringValue.write`: the length as a 7-bit varint (no null), then each UTF-16 unit as a varint."""
    length = inp.read_varint("StringValue length", STRING_VALUE_VARINT_BYTES)
    if length > inp.remaining():
        raise inp.error(f"StringValue of {length} characters, only {inp.remaining()} bytes left")
    units = [inp.read_varint("StringValue character", STRING_VALUE_VARINT_BYTES) for _ in range(length)]
    if any(unit > 0xFFFF for unit in units):
        raise inp.error("StringValue character beyond UTF-16")
    return "".join(map(chr, units)).encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace")


def _array_of(element: Decoder, element_bytes: int) -> Decoder:
    """A primitive array or `StringArraySerializer`: `int length`, then each element."""
    return lambda inp: [element(inp) for _ in range(inp.read_length("array length", element_bytes))]


_SIMPLE: dict[str, Decoder] = {
    STRING: DataInput.read_string_value,
    LONG: lambda inp: inp.read_long("long value"),
    INT: lambda inp: inp.read_int("int value"),
    SHORT: lambda inp: inp.read_short("short value"),
    BYTE: lambda inp: int.from_bytes(inp.read_bytes(1, "byte value"), "big", signed=True),
    BOOLEAN: lambda inp: inp.read_bool("boolean value"),
    DOUBLE: lambda inp: _DOUBLE.unpack(inp.read_bytes(8, "double value"))[0],
    FLOAT: lambda inp: _FLOAT.unpack(inp.read_bytes(4, "float value"))[0],
    BYTE_ARRAY: lambda inp: inp.read_length_prefixed("byte array value").hex(),
    VOID_NAMESPACE: _read_void_namespace,
    TIME_WINDOW: _read_time_window,
    GLOBAL_WINDOW: _read_global_window,
    CHAR: _read_char,
    DATE: _nullable_millis,
    SQL_DATE: _nullable_millis,
    SQL_TIME: _nullable_millis,
    SQL_TIMESTAMP: _read_timestamp,
    INSTANT: _read_instant,
    LOCAL_DATE: _read_local_date,
    LOCAL_TIME: _read_local_time,
    LOCAL_DATE_TIME: _read_local_date_time,
    BIG_INT: _read_big_int,
    BIG_DEC: _read_big_dec,
    STRING_VALUE: _read_string_value_type,
    NULL_VALUE: lambda inp: None,
    STRING_ARRAY: _array_of(DataInput.read_string_value, 1),
    scalaserializers.UNIT: scalaserializers.read_unit,
}
_SIMPLE.update({twin: _SIMPLE[primitive] for twin, primitive in VALUE_TWINS.items()})
_SIMPLE.update(
    {
        array: _array_of(_SIMPLE[primitive], FIXED_LENGTHS.get(primitive, 2))
        for array, primitive in PRIMITIVE_ARRAYS.items()
    }
)
