"""Values of Flink's `KryoSerializer` whose written class is one `Kryo` itself registers, read as data.

Flink 1.x's `KryoSerializer.serialize` is Kryo 2.24's `Kryo.writeClassAndObject`: the class, as
`DefaultClassResolver.writeClass` writes it (a varint `registration id + 2`, `0` for null; `1` = `NAME + 2`
followed by a name id and, the first time, the class name), then the object. Kryo's constructor registers its first
classes with fixed ids whatever the job registers after them (`Kryo()`, kryo 2.24.0: `int` 0, `String` 1, `float` 2,
`boolean` 3, `byte` 4, `char` 5, `short` 6, `long` 7, `double` 8, `void` 9; a wrapper class shares its primitive's
registration; kryo 5.6.2, Flink 2.x, registers the same first nine in the same order and writes the wrappers with
the same calls, read from its class files with `javap -c`). Their objects are written by `DefaultSerializers`'
serializers, with no reference marker before the eight wrappers (`MapReferenceResolver.useReferences` is false for
`Util.isWrapperClass`):

- `Integer`: `Output.writeInt(value, false)`: a zigzag varint of up to 5 bytes, 7 bits a byte, low bits first;
- `Long`: `Output.writeLong(value, false)`: a zigzag varint of up to 9 bytes, the 9th holding 8 bits;
- `Float`, `Double`: the IEEE bits as a big-endian `int` / `long`; `Boolean`, `Byte`: one byte; `Character`,
  `Short`: two bytes, big-endian.

A `String` (id 1) is not decoded: whether a reference marker precedes it depends on Flink's Kryo setup, which the
snapshot does not record. Any other class (registered by the job, by Flink or by chill, or written by name) is
`KryoClassNotDecodedError`, naming the class when it was written by name: its field layout is not in the snapshot.
Layouts: splitaudit/savepoint/FORMAT.md, "Keyed state".
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.primitives.javaser import STREAM_MAGIC, class_name, read_java_object

KRYO_NULL = 0  # Kryo.NULL
KRYO_NAME = 1  # DefaultClassResolver.NAME + 2: the class written by name
# The declared types a value of one of Kryo's default wrapper registrations can have: the wrappers themselves and
# their supertypes. A `KryoSerializer` of any other type never writes one of them.
WRAPPER_SUPERTYPES = frozenset({"java.lang.Object", "java.io.Serializable", "java.lang.Number", "java.lang.Comparable"})
_FLOAT = struct.Struct(">f")
_DOUBLE = struct.Struct(">d")


class KryoClassNotDecodedError(InputError):
    """A Kryo value this reader does not decode (a class outside Kryo's own registrations; a Throwable not written
    with Java serialization), its class named: kept as bytes by the caller, never guessed."""

    def __init__(self, inp: DataInput, at: int, class_name: str) -> None:
        self.class_name = class_name
        super().__init__(inp.path, inp.base + at, f"Kryo value of {class_name}: its layout is not in the snapshot")


def _read_var(inp: DataInput, what: str, max_bytes: int) -> int:
    """Kryo's `Input.readVarInt` / `readVarLong` before zigzag decoding: 7 bits a byte, low bits first, the last
    possible byte holding all its bits."""
    value = 0
    for index in range(max_bytes - 1):
        byte = inp.read_unsigned_byte(what)
        value |= (byte & 0x7F) << (7 * index)
        if byte < 0x80:
            return value
    return value | inp.read_unsigned_byte(what) << (7 * (max_bytes - 1))


def _zigzag(value: int, bits: int) -> int:
    """`(result >>> 1) ^ -(result & 1)` on a `bits`-wide two's-complement value."""
    value &= (1 << bits) - 1
    return (value >> 1) ^ -(value & 1)


def _read_byte(inp: DataInput) -> int:
    return int.from_bytes(inp.read_bytes(1, "Kryo byte"), "big", signed=True)


# Kryo() registration id -> (wrapper class, how DefaultSerializers writes it)
DEFAULT_REGISTRATIONS: dict[int, tuple[str, Callable[[DataInput], Any]]] = {
    0: ("java.lang.Integer", lambda inp: _zigzag(_read_var(inp, "Kryo int", 5), 32)),
    2: ("java.lang.Float", lambda inp: _FLOAT.unpack(inp.read_bytes(4, "Kryo float"))[0]),
    3: ("java.lang.Boolean", lambda inp: inp.read_bool("Kryo boolean")),
    4: ("java.lang.Byte", _read_byte),
    5: ("java.lang.Character", lambda inp: chr(inp.read_unsigned_short("Kryo char"))),
    6: ("java.lang.Short", lambda inp: inp.read_short("Kryo short")),
    7: ("java.lang.Long", lambda inp: _zigzag(_read_var(inp, "Kryo long", 9), 64)),
    8: ("java.lang.Double", lambda inp: _DOUBLE.unpack(inp.read_bytes(8, "Kryo double"))[0]),
}
WRAPPERS = frozenset(name for name, _ in DEFAULT_REGISTRATIONS.values())
REGISTRATION_NAMES = {1: "java.lang.String", 9: "void", **{i: name for i, (name, _) in DEFAULT_REGISTRATIONS.items()}}


def decodes(type_class: str) -> bool:
    """Whether a `KryoSerializer` of this declared type can write one of the wrappers read here."""
    return type_class in WRAPPERS or type_class in WRAPPER_SUPERTYPES


def read_kryo_value(inp: DataInput) -> Any:
    """`Kryo.writeClassAndObject`'s bytes: None for null, a wrapper's value, or `KryoClassNotDecodedError`."""
    at = inp.tell()
    written = _read_var(inp, "Kryo class id", 5)
    if written == KRYO_NULL:
        return None
    if written == KRYO_NAME:
        raise KryoClassNotDecodedError(inp, at, _class_name(inp))
    found = DEFAULT_REGISTRATIONS.get(written - 2)
    if found is None:
        raise KryoClassNotDecodedError(inp, at, _registered_name(written - 2))
    return found[1](inp)


def _registered_name(registration: int) -> str:
    return REGISTRATION_NAMES.get(registration, f"the class of Kryo registration id {registration}")


def read_kryo_throwable(inp: DataInput) -> dict[str, Any] | None:
    """A `KryoSerializer` of `Throwable` (a Scala `Try`'s `Failure`): Flink's `KryoSerializer` makes its own
    `JavaSerializer` the default serializer of `Throwable` and its subclasses (the snapshot's default serializers
    name it), which writes an `ObjectOutputStream` of the exception. So a Throwable Kryo wrote by name (not
    registered), then a reference marker (`NOT_NULL`, where references are on) and a Java serialization stream, is
    read as data (`javaser`: no class loaded) as `{"@class": name, "message": detailMessage}`; the stream's class must
    be the one Kryo named. Any other layout (a registered class, no Java stream) is `KryoClassNotDecodedError`."""
    at = inp.tell()
    written = _read_var(inp, "Kryo class id", 5)
    if written == KRYO_NULL:
        return None
    if written != KRYO_NAME:
        raise KryoClassNotDecodedError(inp, at, _registered_name(written - 2))
    name = _class_name(inp)
    stream_at = inp.tell()
    if inp.remaining() > len(STREAM_MAGIC) and inp.read_unsigned_byte("Kryo reference marker") != 1:
        inp.seek(stream_at)
    if inp.remaining() < len(STREAM_MAGIC) or inp.read_bytes(len(STREAM_MAGIC), "Java stream magic") != STREAM_MAGIC:
        raise KryoClassNotDecodedError(inp, at, name)
    inp.seek(inp.tell() - len(STREAM_MAGIC))
    java_at = inp.tell()
    throwable = read_java_object(inp, f"the {name} Kryo wrote")
    if class_name(throwable) != name:
        raise inp.error(f"a Java stream of {class_name(throwable)} where Kryo named {name}", java_at)
    message = getattr(throwable, "detailMessage", None)
    return {"@class": name, "message": None if message is None else str(message)}


def _class_name(inp: DataInput) -> str:
    """`DefaultClassResolver.writeName` after `NAME + 2`: a varint name id, then (its first use) the class name as
    `Output.writeString`. Only a name written in full is returned; a reference to an earlier one cannot occur at a
    value's start (Kryo resets its name ids after each top-level object), so it is an error."""
    at = inp.tell()
    name_id = _read_var(inp, "Kryo class name id", 5)
    if name_id != 0:
        raise inp.error(f"Kryo class name id {name_id} at a value's start (expected 0)", at)
    return read_kryo_string(inp)


def read_kryo_string(inp: DataInput) -> str:
    """Kryo 2.24's `Output.writeString` (not null): ASCII of 2 to 63 characters with the last byte's high bit set,
    or a UTF-8 length + 1 (bit 8 of the first byte set, bit 7 saying another length byte follows, then 7 bits a
    byte) and that many characters in (Java's modified) UTF-8; escaped when shown."""
    at = inp.tell()
    first = inp.read_unsigned_byte("Kryo string")
    if not first & 0x80:
        chars = [first]
        while not chars[-1] & 0x80:
            if len(chars) >= 63:
                raise inp.error("Kryo ASCII string longer than 63 characters", at)
            chars.append(inp.read_unsigned_byte("Kryo string"))
        chars[-1] &= 0x7F
        return bytes(chars).decode("ascii")
    length = first & 0x3F
    if first & 0x40:
        length |= _read_var(inp, "Kryo string length", 4) << 6
    if length == 0:
        raise inp.error("Kryo null string where a class name is expected", at)
    count = length - 1
    if count > inp.remaining():
        raise inp.error(f"Kryo string of {count} characters, only {inp.remaining()} bytes left", at)
    units = []
    for _ in range(count):
        unit = inp.read_unsigned_byte("Kryo string character")
        if unit >> 5 == 0b110:
            unit = (unit & 0x1F) << 6 | inp.read_unsigned_byte("Kryo string character") & 0x3F
        elif unit >> 4 == 0b1110:
            middle, last = inp.read_bytes(2, "Kryo string character")
            unit = (unit & 0x0F) << 12 | (middle & 0x3F) << 6 | last & 0x3F
        units.append(unit)
    return "".join(map(chr, units)).encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace")
