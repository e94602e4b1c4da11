"""The Scala API's serializers (flink-scala, `org.apache.flink.api.scala.typeutils`), their snapshots and values
read as data: no Scala class is loaded, no `cbfCode` compiled.

Every snapshot here is a `CompositeTypeSerializerSnapshot` (flink-scala 1.19.1; snapshot version 3): `int 911108,
int outerVersion`, the outer snapshot below, then the nested serializers' snapshots (`typeserializers` reads the
frame):

- `ScalaCaseClassSerializerSnapshot` (outer version 2) and `Tuple2CaseClassSerializerSnapshot` (2): `UTF` the case
  class's name; nested: one serializer per field, in constructor order. Field names are not in the snapshot.
- `ScalaOptionSerializerSnapshot` (2), `ScalaEitherSerializerSnapshot` (1), `ScalaTrySerializerSnapshot` (2): no
  outer snapshot; nested: the element (Option), left and right (Either), the element and the `Throwable`'s
  `KryoSerializer` (Try).
- `TraversableSerializerSnapshot` (2): `UTF cbfCode`, the Scala source of the collection's `CanBuildFrom`, kept as
  text (never evaluated); nested: the element serializer.

`UnitSerializer$UnitSerializerSnapshot` is a `SimpleTypeSerializerSnapshot` (empty body). Values (the
`serialize` methods of the same classes):

- `CaseClassSerializer`: each field as its serializer writes it, no null flags: `{"@class": name, "fields": [...]}`,
  fields positional since their names are not in the snapshot;
- `OptionSerializer`: `bool isDefined`, then the element: None, or `{"some": value}`;
- `EitherSerializer`: `bool isLeft`, then the left or right value: `{"left": ...}` / `{"right": ...}`;
- `TrySerializer`: `bool isSuccess`, then the element (`{"success": value}`) or the `Throwable` through its
  `KryoSerializer`, which Flink makes write a Throwable with Java serialization (`kryo.read_kryo_throwable`:
  `{"failure": {"@class": ..., "message": ...}}`); a Throwable written otherwise is `kryo.KryoClassNotDecodedError`
  naming its class, so the keyed reader keeps that value as bytes (`RAW_REASONS`);
- `TraversableSerializer`: `int size`, then per element `bool isNonNull` and the element: a list, None for a null
  element (a `Map`'s elements are its `Tuple2`s);
- `UnitSerializer`: one byte (`write(0)`): None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.kryo import read_kryo_throwable

Decoder = Callable[[DataInput], Any]

_SCALA = "org.apache.flink.api.scala.typeutils."
CASE_CLASS = _SCALA + "ScalaCaseClassSerializerSnapshot"
TUPLE2_CASE_CLASS = _SCALA + "Tuple2CaseClassSerializerSnapshot"
OPTION = _SCALA + "ScalaOptionSerializerSnapshot"
EITHER = _SCALA + "ScalaEitherSerializerSnapshot"
TRY = _SCALA + "ScalaTrySerializerSnapshot"
TRAVERSABLE = _SCALA + "TraversableSerializerSnapshot"
UNIT = _SCALA + "UnitSerializer$UnitSerializerSnapshot"
# Composite snapshots whose outer snapshot is one `UTF` string: the case class's name, or the `cbfCode`
NAMED_OUTER = frozenset({CASE_CLASS, TUPLE2_CASE_CLASS, TRAVERSABLE})
COMPOSITES = NAMED_OUTER | {OPTION, EITHER, TRY}
# How many nested serializers each takes (a case class: one per field, any number)
NESTED_COUNT = {OPTION: 1, EITHER: 2, TRAVERSABLE: 1}
RAW_REASONS = {TRY: "a Failure's Throwable is one Kryo wrote without Java serialization, a layout not in the snapshot"}


def read_outer_snapshot(stream: DataInput, snapshot_class: str) -> str:
    """The outer snapshot of one of `COMPOSITES`: the case class's name or the `cbfCode` text; "" for the rest."""
    if snapshot_class == TRAVERSABLE:
        return stream.read_utf("TraversableSerializer cbfCode")
    if snapshot_class in NAMED_OUTER:
        return stream.read_utf("case class name")
    return ""


def composite_decoder(snapshot_class: str, type_class: str, children: list[Decoder]) -> Decoder | None:
    """The values of one of `COMPOSITES` from its nested serializers' decoders (None for `TRY`, and when their count
    is not the serializer's)."""
    if snapshot_class in (CASE_CLASS, TUPLE2_CASE_CLASS):
        return lambda inp: {"@class": type_class, "fields": [field(inp) for field in children]}
    if NESTED_COUNT.get(snapshot_class) != len(children):
        return None
    if snapshot_class == OPTION:
        element = children[0]
        return lambda inp: {"some": element(inp)} if inp.read_bool("Option isDefined") else None
    if snapshot_class == EITHER:
        left, right = children
        return lambda inp: {"left": left(inp)} if inp.read_bool("Either isLeft") else {"right": right(inp)}
    element = children[0]
    return lambda inp: [
        element(inp) if inp.read_bool("element isNonNull") else None for _ in range(inp.read_length("collection size"))
    ]


def try_decoder(element: Decoder) -> Decoder:
    """`TrySerializer`'s values from its element's decoder (the `Throwable`'s is `kryo.read_kryo_throwable`)."""
    return lambda inp: (
        {"success": element(inp)} if inp.read_bool("Try isSuccess") else {"failure": read_kryo_throwable(inp)}
    )


def read_unit(inp: DataInput) -> None:
    """`UnitSerializer`: the one byte it writes."""
    inp.read_unsigned_byte("Unit")
