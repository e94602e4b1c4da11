"""One decoder of Java `DataOutputStream` primitives; every format layer above speaks only through it.

Big-endian `int`/`long`/`short`, bytes, and `writeUTF` strings (an unsigned 16-bit byte length followed by
Java's *modified* UTF-8), exactly as `java.io.DataOutputStream` and Flink's `DataOutputSerializer` write them.
Every length is checked against what is left before anything is allocated, and every failure is an
`InputError` that names the file and the absolute byte offset where the bad value starts.
"""

from __future__ import annotations

import re
import struct

from splitaudit.errors import InputError

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_SHORT = struct.Struct(">h")
_USHORT = struct.Struct(">H")
STRING_VALUE_VARINT_BYTES = 5  # StringValue's variable-length ints: 7 bits per byte, low bits first
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # CESU-8 halves, re-joined below


def decode_modified_utf8(raw: bytes) -> str:
    """Java modified UTF-8 → str: NUL is `C0 80`, supplementary characters are CESU-8 surrogate pairs.

    Raises `UnicodeDecodeError` for bytes that are not modified UTF-8; `DataInput.read_utf` turns that into
    an `InputError`.
    """
    if raw.isascii():  # almost every name, topic and path: no NUL pair, no surrogate to look for
        return raw.decode("ascii")
    text = raw.replace(b"\xc0\x80", b"\0").decode("utf-8", "surrogatepass")
    if _SURROGATE.search(text):
        # Re-join the CESU-8 surrogate halves into real code points.
        text = text.encode("utf-16-be", "surrogatepass").decode("utf-16-be")
    return text


class DataInput:
    """A `java.io.DataInput` over an in-memory buffer.

    `path` names the file in errors; `base` is the absolute offset of `data[0]` within that file, so that a
    buffer cut out of a bigger file (an inline handle inside `_metadata`, a segment of a merged file) still
    reports offsets in the file's own terms.
    """

    __slots__ = ("_data", "_pos", "base", "path")

    def __init__(self, data: bytes | bytearray | memoryview, path: str, base: int = 0) -> None:
        self._data = memoryview(data)
        self._pos = 0
        self.path = path
        self.base = base

    def _view(self, start: int, n: int) -> DataInput:
        """A decoder over `n` bytes of this buffer from `start`, sharing them (what `sub` returns; made without
        `__init__`, since keyed state makes two for every entry)."""
        view = DataInput.__new__(DataInput)
        view._data = self._data[start : start + n]
        view._pos = 0
        view.path = self.path
        view.base = self.base + start
        return view

    def buffer(self) -> memoryview:
        """The bytes this decodes (shared, not copied), for a reader that decodes many values from positions in
        them at once (keyed state's entries: `savepoint.keyed_layouts`) and then `seek`s past what it read."""
        return self._data

    def __len__(self) -> int:
        return len(self._data)

    def tell(self) -> int:
        """Position relative to the start of this buffer."""
        return self._pos

    def offset(self) -> int:
        """Absolute position in the underlying file, for error messages."""
        return self.base + self._pos

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def error(self, message: str, at: int | None = None) -> InputError:
        """An InputError at `at` (a buffer position) or at the current position."""
        return InputError(self.path, self.base + (self._pos if at is None else at), message)

    def seek(self, position: int) -> None:
        if not 0 <= position <= len(self._data):
            raise self.error(f"offset {position} lies outside the {len(self._data)}-byte stream")
        self._pos = position

    def _advance(self, n: int, what: str) -> int:
        """Where the next `n` (>= 0) bytes start; the position moves past them. Every read goes through here, or
        (the reads keyed state makes for every entry) checks the same bound inline and comes here to fail."""
        pos = self._pos
        if n > len(self._data) - pos:
            raise self.error(f"truncated: {what} needs {n} bytes, {len(self._data) - pos} left")
        self._pos = pos + n
        return pos

    def _take(self, n: int, what: str) -> memoryview:
        pos = self._advance(n, what)
        return self._data[pos : pos + n]

    def read_bytes(self, n: int, what: str = "byte array") -> bytes:
        """`n` raw bytes; `n` comes from the file: a negative or too-large value is reported, not obeyed."""
        if n < 0:
            raise self.error(f"negative length {n} for {what}")
        return bytes(self._take(n, what))

    def skip(self, n: int, what: str = "bytes") -> None:
        if n < 0:
            raise self.error(f"negative length {n} for {what}")
        self._take(n, what)

    def read_unsigned_byte(self, what: str = "byte") -> int:
        pos = self._pos
        if pos >= len(self._data):
            self._advance(1, what)
        self._pos = pos + 1
        return self._data[pos]

    def read_bool(self, what: str = "boolean") -> bool:
        at = self._pos
        if at >= len(self._data):
            self._advance(1, what)
        self._pos = at + 1
        value = self._data[at]
        if value > 1:
            raise self.error(f"{what}: expected a boolean (0 or 1), found {value}", at)
        return value == 1

    def read_short(self, what: str = "short") -> int:
        value: int = _SHORT.unpack_from(self._data, self._advance(2, what))[0]
        return value

    def read_unsigned_short(self, what: str = "unsigned short") -> int:
        value: int = _USHORT.unpack_from(self._data, self._advance(2, what))[0]
        return value

    def read_int(self, what: str = "int") -> int:
        pos = self._pos
        if pos + 4 > len(self._data):
            self._advance(4, what)
        self._pos = pos + 4
        value: int = _INT.unpack_from(self._data, pos)[0]
        return value

    def read_long(self, what: str = "long") -> int:
        pos = self._pos
        if pos + 8 > len(self._data):
            self._advance(8, what)
        self._pos = pos + 8
        value: int = _LONG.unpack_from(self._data, pos)[0]
        return value

    def read_varint(self, what: str, max_bytes: int) -> int:
        """An unsigned LEB128 varint of at most `max_bytes` bytes: 7 bits per byte, low bits first, the high bit
        set on every byte but the last (Flink's `StringValue` lengths, Beam's `VarInt`)."""
        at = self._pos
        if at >= len(self._data):
            self._advance(1, what)
        byte = self._data[at]
        self._pos = at + 1
        if byte < 0x80:  # one byte: most lengths and characters
            return byte
        value = byte & 0x7F
        for index in range(1, max_bytes):
            byte = self.read_unsigned_byte(what)
            value |= (byte & 0x7F) << (7 * index)
            if byte < 0x80:
                return value
        raise self.error(f"{what}: variable-length integer longer than {max_bytes} bytes", at)

    def read_string_value(self, what: str = "string") -> str | None:
        """Flink's `StringValue.readString` (what `StringSerializer` writes): the length + 1 as a varint (0 is
        null), then each UTF-16 unit as a varint. A unit below 0x80 is one byte, itself: when the next `length`
        bytes are all ASCII they are the whole string, decoded at once (almost every key and name); otherwise
        unit by unit."""
        data = self._data
        at = self._pos
        if at < len(data) and data[at] < 0x80:  # a length below 127 is one byte
            length = data[at] - 1
            start = at + 1
        else:
            length = self.read_varint(f"{what} length", STRING_VALUE_VARINT_BYTES) - 1
            start = self._pos
        if length < 0:
            self._pos = start
            return None
        end = start + length
        if end <= len(data):
            try:
                text = str(data[start:end], "ascii")  # half the time of a copy, its isascii() and decode()
            except UnicodeDecodeError:
                pass
            else:
                self._pos = end
                return text
        self._pos = start
        if length > len(data) - start:  # every character takes at least one byte
            raise self.error(f"{what} of {length} characters, only {len(data) - start} bytes left", at)
        units = [self.read_varint(f"{what} character", STRING_VALUE_VARINT_BYTES) for _ in range(length)]
        if any(unit > 0xFFFF for unit in units):
            raise self.error(f"{what} character beyond UTF-16", at)
        return "".join(map(chr, units)).encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace")

    def read_length(self, what: str, element_size: int = 1) -> int:
        """An `int` count of elements that must fit in what is left (each at least `element_size` bytes)."""
        at = self._advance(4, what)
        n: int = _INT.unpack_from(self._data, at)[0]
        if n < 0:
            raise self.error(f"negative {what} {n}", at)
        if n * element_size > len(self._data) - self._pos:
            raise self.error(f"{what} {n} needs at least {n * element_size} bytes, only {self.remaining()} left", at)
        return n

    def read_utf(self, what: str = "string") -> str:
        """`DataInput.readUTF`: u16 byte length + modified UTF-8."""
        at = self._pos
        n = self.read_unsigned_short(f"{what} length")
        raw = bytes(self._take(n, what))
        try:
            return decode_modified_utf8(raw)
        except UnicodeDecodeError as ex:
            raise self.error(f"{what} is not modified UTF-8 ({ex.reason})", at) from None

    def read_length_prefixed(self, what: str) -> bytes:
        """`int len` then `len` bytes, the framing Flink uses for nested byte arrays."""
        return self.read_bytes(self.read_length(f"{what} length"), what)

    def sub(self, n: int, what: str) -> DataInput:
        """A decoder over the next `n` bytes (consumed here, not copied), reporting offsets in this file's terms."""
        start = self._pos
        if not 0 <= n <= len(self._data) - start:
            if n < 0:
                raise self.error(f"negative length {n} for {what}")
            self._advance(n, what)
        self._pos = start + n
        return self._view(start, n)

    def sub_length_prefixed(self, what: str, length_what: str) -> DataInput | None:
        """`int len` (`length_what`), then `sub(len, what)`; None, nothing consumed, when fewer than 4 + len bytes
        are left (a negative `len` is an error): the caller may have more of the stream to load."""
        pos = self._pos
        data = self._data
        if pos + 4 > len(data):
            return None
        n: int = _INT.unpack_from(data, pos)[0]
        start = pos + 4
        if n > len(data) - start:
            return None
        if n < 0:
            raise self.error(f"negative {length_what} {n}", pos)
        self._pos = start + n
        return self._view(start, n)

    def sub_length_prefixed_pair(self, first_length: str, second_length: str) -> tuple[DataInput, DataInput] | None:
        """`sub_length_prefixed` twice, in one call (a canonical keyed-state entry: its key, then its value; the
        lengths named in errors as there); None, nothing consumed, unless both are loaded whole."""
        pos = self._pos
        data = self._data
        size = len(data)
        if pos + 4 > size:
            return None
        n: int = _INT.unpack_from(data, pos)[0]
        start = pos + 4
        end = start + n
        if end + 4 > size:
            return None
        if n < 0:
            raise self.error(f"negative {first_length} {n}", pos)
        second: int = _INT.unpack_from(data, end)[0]
        second_start = end + 4
        second_end = second_start + second
        if second_end > size:
            return None
        if second < 0:
            raise self.error(f"negative {second_length} {second}", end)
        self._pos = second_end
        return self._view(start, n), self._view(second_start, second)

    def expect_end(self, what: str) -> None:
        if self._pos != len(self._data):
            raise self.error(f"{self.remaining()} unexpected trailing bytes after {what}")
