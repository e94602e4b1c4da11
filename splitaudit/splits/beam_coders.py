"""Beam's coders as Beam's Flink runner keeps them in keyed state: the `CoderTypeSerializer` snapshot read as
data, and the values its coder writes.

A `CoderTypeSerializer`'s snapshot (`UnversionedTypeSerializerSnapshot`, Beam 2.62.0 for Flink 1.19) holds the
serializer itself, Java-serialized by Beam's `SerializableUtils.serializeToByteArray` (a snappy-java stream);
its field `coder` is the Beam `Coder` graph. That graph is read with javaobj's v1 unmarshaller as plain data
(`primitives/javaser.py`): no class is loaded. The coders below are the ones the portable runner's state holds
(`FullWindowedValueCoder`, `KvCoder`, `LengthPrefixCoder` around `ByteArrayCoder` for what the runner sees as
opaque SDK bytes, `DoubleCoder`, `FlinkKeyUtils$ByteBufferCoder` for keys, ...); any other coder is named with
its class and its values are kept as bytes.

Values are written with `Coder.encode(value, out)`, the OUTER context, at the top (`CoderTypeSerializer.serialize`);
components in the NESTED context, where a byte array or string carries its length as a Beam `VarInt`. Layouts:
splitaudit/splits/FORMAT.md, "Beam's coders in keyed state".
"""

from __future__ import annotations

import base64
import binascii
import functools
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.primitives.javaser import class_name, read_java_object
from splitaudit.primitives.snappy import snappy_java_stream

CODER_TYPE_SERIALIZER = "org.apache.beam.runners.flink.translation.types.CoderTypeSerializer"
MAX_SERIALIZER_BYTES = 16 << 20  # a Java-serialized coder graph with its pipeline options: a few KiB in practice
MAX_COMPONENT_DEPTH = 32
VARINT_BYTES = 5  # Beam's VarInt of an int
VARLONG_BYTES = 10  # and of a long
_DOUBLE = struct.Struct(">d")

_SDK = "org.apache.beam.sdk."
FULL_WINDOWED_VALUE_CODER = _SDK + "util.WindowedValue$FullWindowedValueCoder"
KV_CODER = _SDK + "coders.KvCoder"
LENGTH_PREFIX_CODER = _SDK + "coders.LengthPrefixCoder"
BYTE_ARRAY_CODER = _SDK + "coders.ByteArrayCoder"
STRING_UTF8_CODER = _SDK + "coders.StringUtf8Coder"
DOUBLE_CODER = _SDK + "coders.DoubleCoder"
VAR_LONG_CODER = _SDK + "coders.VarLongCoder"
VAR_INT_CODER = _SDK + "coders.VarIntCoder"
BIG_ENDIAN_LONG_CODER = _SDK + "coders.BigEndianLongCoder"
BIG_ENDIAN_INTEGER_CODER = _SDK + "coders.BigEndianIntegerCoder"
INSTANT_CODER = _SDK + "coders.InstantCoder"
GLOBAL_WINDOW_CODER = _SDK + "transforms.windowing.GlobalWindow$Coder"
INTERVAL_WINDOW_CODER = _SDK + "transforms.windowing.IntervalWindow$IntervalWindowCoder"
TIMER_DATA_CODER = "org.apache.beam.runners.core.TimerInternals$TimerDataCoderV2"
BYTE_BUFFER_CODER = "org.apache.beam.runners.flink.translation.wrappers.streaming.FlinkKeyUtils$ByteBufferCoder"

# The fields holding each structured coder's components, in the order its values use them.
COMPONENT_FIELDS: dict[str, tuple[str, ...]] = {
    FULL_WINDOWED_VALUE_CODER: ("valueCoder", "windowCoder"),
    KV_CODER: ("keyCoder", "valueCoder"),
    LENGTH_PREFIX_CODER: ("valueCoder",),
}


@dataclass(frozen=True)
class CoderSpec:
    """One Beam coder of a serializer snapshot: its Java class and its component coders."""

    java_class: str
    components: tuple[CoderSpec, ...] = ()


@dataclass(frozen=True)
class EncodedBytes:
    """A byte array a coder wrote (`ByteArrayCoder`, opaque to the runner), with where it lies in its file."""

    data: bytes
    path: str
    offset: int

    def input(self) -> DataInput:
        """A decoder over the bytes that reports offsets in the file's terms."""
        return DataInput(self.data, self.path, self.offset)

    def to_json(self) -> str:
        return self.data.hex()


@dataclass(frozen=True)
class KV:
    """`KV<K, V>` (`KvCoder`)."""

    key: Any
    value: Any

    def to_json(self) -> dict[str, Any]:
        return {"key": json_value(self.key), "value": json_value(self.value)}


@dataclass(frozen=True)
class PaneInfo:
    """`PaneInfo` (`PaneInfoCoder`): `timing` EARLY, ON_TIME, LATE or UNKNOWN; indexes -1 when not encoded."""

    is_first: bool
    is_last: bool
    timing: str
    index: int
    on_time_index: int

    def to_json(self) -> dict[str, Any]:
        return {
            "is_first": self.is_first,
            "is_last": self.is_last,
            "timing": self.timing,
            "index": self.index,
            "on_time_index": self.on_time_index,
        }


@dataclass(frozen=True)
class WindowedValue:
    """`WindowedValue<T>` (`FullWindowedValueCoder`): event time (ms), windows, pane and the value."""

    timestamp: int
    windows: tuple[Any, ...]
    pane: PaneInfo
    value: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "timestamp": self.timestamp,
            "windows": [json_value(window) for window in self.windows],
            "pane": self.pane.to_json(),
            "value": json_value(self.value),
        }


@dataclass(frozen=True)
class TimerData:
    """`TimerInternals.TimerData` (`TimerDataCoderV2`): a Beam timer as Beam's Flink runner keeps it."""

    timer_id: str
    timer_family_id: str
    namespace: str  # StateNamespace.stringKey(): `//` for the global window
    timestamp: int
    output_timestamp: int
    domain: str  # EVENT_TIME, PROCESSING_TIME, SYNCHRONIZED_PROCESSING_TIME

    def to_json(self) -> dict[str, Any]:
        return {
            "timer_id": self.timer_id,
            "timer_family_id": self.timer_family_id,
            "namespace": self.namespace,
            "timestamp": self.timestamp,
            "output_timestamp": self.output_timestamp,
            "domain": self.domain,
        }


def json_value(value: Any) -> Any:
    """A decoded value as JSON: the dataclasses above by their `to_json`, everything else as it is."""
    to_json = getattr(value, "to_json", None)
    return to_json() if callable(to_json) else value


def read_coder_type_serializer(payload: bytes, path: str, offset: int) -> CoderSpec:
    """The coder of a `CoderTypeSerializer` snapshot's payload (`SerializableUtils` bytes at `offset` of `path`)."""
    spec = _payload_coder(payload)
    if isinstance(spec, CoderSpec):
        return spec
    message, at = spec
    raise InputError(path, offset + at, message)


@functools.lru_cache(maxsize=256)
def _payload_coder(payload: bytes) -> CoderSpec | tuple[str, int]:
    """The coder in a payload, or why it cannot be read and where (relative to the payload). Cached: every
    `sdf_checkpoint` state of a job repeats the same serializer."""
    try:
        raw = snappy_java_stream(DataInput(payload, ""), MAX_SERIALIZER_BYTES)
    except InputError as ex:
        return ex.message, ex.offset or 0
    try:
        serializer = read_java_object(DataInput(raw, ""), "the Java-serialized CoderTypeSerializer")
    except InputError as ex:  # an offset in the decompressed bytes: reported at the payload, and named
        return f"{ex.message} at byte {ex.offset} of the decompressed serializer", 0
    if class_name(serializer) != CODER_TYPE_SERIALIZER:
        return f"serializer snapshot holds {class_name(serializer)}, not a CoderTypeSerializer", 0
    return _coder_spec(getattr(serializer, "coder", None), 0)


def _coder_spec(coder: Any, depth: int) -> CoderSpec | tuple[str, int]:
    if depth > MAX_COMPONENT_DEPTH:
        return f"coders nested more than {MAX_COMPONENT_DEPTH} deep", 0
    java_class = class_name(coder)
    components = []
    for field in COMPONENT_FIELDS.get(java_class, ()):
        component = _coder_spec(getattr(coder, field, None), depth + 1)
        if not isinstance(component, CoderSpec):
            return component
        components.append(component)
    return CoderSpec(java_class, tuple(components))


Decoder = Callable[[DataInput], Any]


def coder_decoder(spec: CoderSpec, nested: bool = False) -> Decoder | None:
    """The function reading one value as `spec` writes it (OUTER context unless `nested`); None for a coder
    this reader does not know."""
    java_class = spec.java_class
    simple = _SIMPLE.get(java_class)
    if simple is not None:
        return simple
    if java_class == BYTE_ARRAY_CODER:
        return _read_nested_bytes if nested else _read_outer_bytes
    if java_class == STRING_UTF8_CODER:
        return read_nested_string if nested else _read_outer_string
    if java_class == LENGTH_PREFIX_CODER:
        inner = coder_decoder(spec.components[0], nested=False)
        return None if inner is None else functools.partial(_read_length_prefixed, inner)
    if java_class == KV_CODER:
        key = coder_decoder(spec.components[0], nested=True)
        value = coder_decoder(spec.components[1], nested)
        if key is None or value is None:
            return None
        return functools.partial(_read_kv, key, value)
    if java_class == FULL_WINDOWED_VALUE_CODER:
        value_decoder = coder_decoder(spec.components[0], nested)
        window = coder_decoder(spec.components[1], nested=True)
        if value_decoder is None or window is None:
            return None
        return functools.partial(_read_windowed_value, value_decoder, window)
    return None


def _read_kv(key: Decoder, value: Decoder, inp: DataInput) -> KV:
    """`KvCoder`: the key (nested), then the value."""
    return KV(key(inp), value(inp))


def _read_length_prefixed(inner: Decoder, inp: DataInput) -> Any:
    """`LengthPrefixCoder`: a `VarInt` length, then the inner coder's value filling exactly that many bytes."""
    length = inp.read_varint("length prefix", VARINT_BYTES)
    region = inp.sub(length, "length-prefixed value")
    value = inner(region)
    region.expect_end("length-prefixed value")
    return value


def _read_outer_bytes(inp: DataInput) -> EncodedBytes:
    at = inp.offset()
    return EncodedBytes(inp.read_bytes(inp.remaining(), "byte array"), inp.path, at)


def _read_nested_bytes(inp: DataInput) -> EncodedBytes:
    length = inp.read_varint("byte array length", VARINT_BYTES)
    at = inp.offset()
    return EncodedBytes(inp.read_bytes(length, "byte array"), inp.path, at)


def _read_outer_string(inp: DataInput) -> str:
    return _utf8(inp, inp.remaining())


def read_nested_string(inp: DataInput) -> str:
    return _utf8(inp, inp.read_varint("string length", VARINT_BYTES))


def _utf8(inp: DataInput, length: int) -> str:
    at = inp.tell()
    raw = inp.read_bytes(length, "string")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as ex:
        raise inp.error(f"string is not UTF-8 ({ex.reason})", at) from None


def read_var_int(inp: DataInput, what: str = "VarInt") -> int:
    """Beam's `VarInt` of an int (`VarIntCoder`): up to 5 bytes, two's complement."""
    value = inp.read_varint(what, VARINT_BYTES) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def read_var_long(inp: DataInput, what: str = "VarLong") -> int:
    """Beam's `VarInt` of a long (`VarLongCoder`): up to 10 bytes, two's complement."""
    value = inp.read_varint(what, VARLONG_BYTES) & 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= 1 << 63 else value


def read_instant(inp: DataInput, what: str = "instant") -> int:
    """`InstantCoder`: epoch milliseconds minus `Long.MIN_VALUE`, a big-endian long (so bytes sort as times)."""
    return inp.read_long(what) ^ -(1 << 63)


def _read_double(inp: DataInput) -> float:
    value: float = _DOUBLE.unpack(inp.read_bytes(8, "double"))[0]
    return value


PANE_TIMINGS = ("EARLY", "ON_TIME", "LATE", "UNKNOWN")
PANE_FIRST, PANE_ONE_INDEX, PANE_TWO_INDICES = 0, 1, 2  # PaneInfo.Encoding, the tag's high nibble


def read_pane_info(inp: DataInput) -> PaneInfo:
    """`PaneInfoCoder`: a byte, low nibble `isFirst | isLast << 1 | timing << 2`, high nibble the encoding:
    FIRST (nothing more), ONE_INDEX (a VarLong index) or TWO_INDICES (index, on-time index)."""
    at = inp.tell()
    tag = inp.read_unsigned_byte("pane info")
    encoding, bits = tag >> 4, tag & 0x0F
    index = on_time_index = -1
    if encoding == PANE_FIRST:
        index, on_time_index = 0, 0
    elif encoding == PANE_ONE_INDEX:
        index = read_var_long(inp, "pane index")
        on_time_index = index
    elif encoding == PANE_TWO_INDICES:
        index = read_var_long(inp, "pane index")
        on_time_index = read_var_long(inp, "pane on-time index")
    else:
        raise inp.error(f"pane info encoding {encoding} unknown (tag {tag:#04x})", at)
    return PaneInfo(bool(bits & 1), bool(bits & 2), PANE_TIMINGS[bits >> 2], index, on_time_index)


def _read_windowed_value(value: Decoder, window: Decoder, inp: DataInput) -> WindowedValue:
    """`FullWindowedValueCoder`: Instant timestamp, the windows (`CollectionCoder`: int count, each window), the
    pane, then the value."""
    timestamp = read_instant(inp, "element timestamp")
    windows = tuple(window(inp) for _ in range(inp.read_length("number of windows")))
    pane = read_pane_info(inp)
    return WindowedValue(timestamp, windows, pane, value(inp))


def _read_timer_data(inp: DataInput) -> TimerData:
    """`TimerDataCoderV2`: timer id, family id, namespace key (strings), timestamp and output timestamp
    (Instants), time domain (its name)."""
    return TimerData(
        read_nested_string(inp),
        read_nested_string(inp),
        read_nested_string(inp),
        read_instant(inp, "timer timestamp"),
        read_instant(inp, "timer output timestamp"),
        read_nested_string(inp),
    )


def _read_interval_window(inp: DataInput) -> dict[str, int]:
    """`IntervalWindowCoder`: the end (Instant), then the span as a VarLong; [start, end) in ms."""
    end = read_instant(inp, "window end")
    return {"start": end - read_var_long(inp, "window span"), "end": end}


GLOBAL_NAMESPACE = "//"  # StateNamespaces.GlobalNamespace.stringKey()


def window_of_namespace(key: str) -> tuple[int, int] | None:
    """The `IntervalWindow` [start, end) in ms a Beam state namespace names, or None (the global namespace, or a
    key that is not an interval window's).

    Beam's runners key window-scoped state and timers by `StateNamespace.stringKey()` (Beam 2.62.0
    `StateNamespaces.WindowNamespace`: `/<window>/`, and `WindowAndTriggerNamespace`: `/<window>/<index>/`),
    where `<window>` is `CoderUtils.encodeToBase64`: the window coder's OUTER bytes in URL-safe base64 without
    padding; an `IntervalWindowCoder`'s are its end (Instant) and span (VarLong), nothing after."""
    parts = key.split("/")
    if len(parts) not in (3, 4) or parts[0] or parts[-1] or not parts[1]:
        return None
    text = parts[1]
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    inp = DataInput(raw, "")
    try:
        window = _read_interval_window(inp)
        inp.expect_end("interval window")
    except InputError:
        return None
    return window["start"], window["end"]


_SIMPLE: dict[str, Decoder] = {
    DOUBLE_CODER: _read_double,
    VAR_LONG_CODER: read_var_long,
    VAR_INT_CODER: read_var_int,
    BIG_ENDIAN_LONG_CODER: lambda inp: inp.read_long("long"),
    BIG_ENDIAN_INTEGER_CODER: lambda inp: inp.read_int("int"),
    INSTANT_CODER: read_instant,
    GLOBAL_WINDOW_CODER: lambda inp: "GlobalWindow",
    INTERVAL_WINDOW_CODER: _read_interval_window,
    TIMER_DATA_CODER: _read_timer_data,
    # FlinkKeyUtils.ByteBufferCoder writes the key's bytes with ByteArrayCoder's nested encode in any context.
    BYTE_BUFFER_CODER: _read_nested_bytes,
}


EVENT_TIME = "EVENT_TIME"  # TimerData's time domain of an end-of-window timer


def timer_namespace(namespace: object) -> tuple[str | None, bool]:
    """The Beam state namespace key of a keyed entry's namespace (a state's string key, or a timer's `TimerData`'s),
    and whether it is an event-time timer; None for a namespace of no Beam state (Flink's `VoidNamespace`)."""
    if isinstance(namespace, TimerData):
        return namespace.namespace, namespace.domain == EVENT_TIME
    return (namespace, False) if isinstance(namespace, str) else (None, False)


def event_timer_namespace(value: object) -> str | None:
    """The namespace key of an event-time `TimerData` (a value of Beam's `pending-timers` map); None for any other
    value."""
    if isinstance(value, TimerData) and value.domain == EVENT_TIME:
        return value.namespace
    return None
