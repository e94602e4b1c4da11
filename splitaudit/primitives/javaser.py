"""Java serialization (`ObjectOutputStream`) read as data through javaobj-py3's v1 unmarshaller.

Used for the `CheckpointProperties` trailer of `_metadata` and for Beam's split state. No class is loaded or
run: javaobj builds plain Python objects from class descriptors and field values. Its v1 API is the one that
reads Beam's `KafkaUnboundedSource` graphs; v2 fails on them (splitaudit/savepoint/FORMAT.md, "Java
serialization").
"""

from __future__ import annotations

import io
import logging
from typing import Any

from javaobj.v1.transformers import DefaultObjectTransformer
from javaobj.v1.unmarshaller import JavaObjectUnmarshaller

from splitaudit.primitives.datainput import DataInput

STREAM_MAGIC = b"\xac\xed\x00\x05"

# javaobj logs a warning whenever bytes follow the object; callers decide whether that is an error.
logging.getLogger("javaobj").setLevel(logging.CRITICAL)


class _StrictStream(io.BytesIO):
    """javaobj reads strings and byte arrays with `read(n)` and accepts short reads; a truncated stream
    must fail instead of yielding a shortened value."""

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        if size is not None and size >= 0 and len(data) < size:
            raise EOFError(f"{size} bytes wanted, {len(data)} left")
        return data


def read_java_object(inp: DataInput, what: str) -> Any:
    """One object from the rest of `inp`, which is left right after it. Bad bytes are an `InputError`."""
    at = inp.tell()
    stream = _StrictStream(inp.read_bytes(inp.remaining(), what))
    try:
        unmarshaller = JavaObjectUnmarshaller(stream)  # type: ignore[no-untyped-call]
        # java.util collections (ArrayList, HashMap, Integer, …) become Python lists, dicts and ints.
        unmarshaller.add_transformer(DefaultObjectTransformer())  # type: ignore[no-untyped-call]
        value = unmarshaller.readObject()  # type: ignore[no-untyped-call]
    except Exception as ex:  # javaobj raises anything from bad bytes (IOError, KeyError, struct.error, ...)
        raise inp.error(f"unreadable Java serialization of {what} ({type(ex).__name__})", at) from None
    inp.seek(at + stream.tell())
    return value


def class_name(value: Any) -> str:
    """The Java class of a javaobj value (its class descriptor's name), or the Python type for primitives."""
    name = getattr(getattr(value, "classdesc", None), "name", None)
    return name if isinstance(name, str) else type(value).__name__
