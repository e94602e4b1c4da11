"""Keyed state behind a key-group handle: `KeyedBackendSerializationProxy`, then the entries key group by key group.

Two layouts follow the same header (splitaudit/savepoint/FORMAT.md, "Keyed state"):

- **canonical** (`FullSnapshotAsyncWriter`, read back by `FullSnapshotRestoreOperation`): every savepoint of
  the heap and RocksDB backends (handle tag 7) and full RocksDB snapshots of old releases. At each non-zero
  key-group offset: `short kvStateId`, then `int len, byte[len] key, int len, byte[len] value` pairs; the top bit
  of a key's first byte says a `short` follows: the next state's id, or `0xFFFF` at the end of the key group. Keys
  are RocksDB composite keys (`SerializedCompositeKeyBuilder`: key-group prefix, key, namespace, a map's user key);
  list values are elements separated by `,` (`ListDelimitedSerializer`), map values `bool isNull, value`;
  timers are the key (`TimerSerializer` bytes) of a priority-queue state with an empty value.
- **heap** (`HeapSnapshotStrategy`, read back by `HeapRestoreOperation`): heap checkpoints (tag 3/12). At every
  key-group offset `int keyGroup`, then per state `short stateId, int n, n x (namespace, key, state)` as the state's
  own serializers write them (timers: `int n, n x element`).

With compression (`execution.checkpointing.snapshot-compression`) what follows the key-group offset (heap: the
`int`) is xerial Snappy framed. Every key group is read a window of `WINDOW_BYTES` at a time (more only for one
larger entry), compressed or not, canonical or heap, so memory is bounded by the window and the largest entry,
never by the key group or the state. A compressed key group is decompressed a chunk (at most 64 KiB) at a time
as its entries are read, each chunk's lengths and checksum checked. A value whose serializer is unknown is kept
as its bytes and the serializer snapshot's class (status `raw`); in a heap key group, whose entries have no
lengths, such values are kept as bytes too when exactly one choice of their ends lets the rest of the key group
read to its end (`KeyGroupsReader._heap_search`), else one `unread` entry stands for the rest of it, and the other
key groups are read.
A serializer snapshot whose body is unknown is stepped over when exactly one end of it lets the meta info parse
to its end (`read_keyed_backend_header`); else the states after it are unnamed, their canonical entries stepped
over and counted in `unread` entries.
"""

from __future__ import annotations

import copy
import functools
import re
import struct
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace
from itertools import groupby
from typing import Any, Protocol, TypeVar, cast

from splitaudit.errors import InputError
from splitaudit.primitives.datainput import DataInput
from splitaudit.primitives.snappy import (
    CHUNK_HEADER_BYTES,
    DATA_CHUNKS,
    IDENTIFIER_CHUNK,
    chunk_data,
    chunk_data_size,
    read_chunk_header,
)
from splitaudit.savepoint.handles import SAVEPOINT_KEY_GROUPS_HANDLE, KeyGroupsStateHandle
from splitaudit.savepoint.keyed_layouts import FALLBACK, RowReader, entry_reader
from splitaudit.savepoint.keygroups import key_groups_of
from splitaudit.savepoint.kryo import KryoClassNotDecodedError
from splitaudit.savepoint.metainfo import StateMetaInfoSnapshot, read_state_meta_info
from splitaudit.savepoint.streams import StateStream
from splitaudit.savepoint.typeserializers import (
    BEAM_CODER_SNAPSHOT,
    KRYO,
    LIST,
    MAP,
    NO_SKIPS,
    RAW_REASONS,
    Decoder,
    Resolver,
    SerializerSnapshot,
    Skips,
    decoder,
    fixed_length,
    may_refuse,
    raw_reason,
    read_serializer_snapshot,
)

KEYED_PROXY_VERSION = 6  # KeyedBackendSerializationProxy.VERSION, Flink 1.8 to 2.3
END_OF_KEY_GROUP_MARK = 0xFFFF
FIRST_BIT_IN_BYTE_MASK = 0x80
LIST_DELIMITER = ord(",")  # ListDelimitedSerializer / RocksDB's StringAppendOperator
WINDOW_BYTES = 1 << 20  # a key group is read this much at a time
# The most of a heap key group searched for the ends of values no decoder knows, the most ends tried in it, and the
# most such values of a state in it.
HEAP_SEARCH_BYTES = 1 << 16
HEAP_SEARCH_TRIALS = 20_000
HEAP_SEARCH_ENTRIES = 64
READ, RAW, UNREAD = "read", "raw", "unread"  # KeyedStateEntry.status: decoded whole, partly as bytes, not at all
T = TypeVar("T")
_INT = struct.Struct(">i")  # an entry's key and value lengths
# A `KeyedStateEntry`'s fields as a plain tuple, in its order (state, key group, key, namespace, user key, value,
# status): what the entry loop makes, since a tuple costs a fraction of a frozen dataclass per entry, and what the
# data source's `keyed` table is built from column by column (`KeyGroupsReader.row_runs`).
EntryRow = tuple[str, int, Any, Any, Any, Any, str]
# What `KeyGroupsReader.row_runs` asks for each state's run reader (None: the state is read an entry at a time). A
# run reader is called at a run's first entry with (the window's decoder, key group, key-group prefix bytes, the
# general path's row of the entry at a position in the window) and returns (its rows of the run or None, the first
# byte of the state's last entry's key when it read that entry, else -1), the decoder positioned after what it read.
RunReaders = Callable[["StateCodec"], Any]
SHORT_RUN = -2  # what a run reader returns (with no rows, nothing read) for a run it leaves to `_fast_run`


@dataclass(frozen=True)
class Undecoded:
    """Bytes of a value whose serializer this reader does not know, with the serializer snapshot's class (and the
    class it serializes when the snapshot names it: Kryo's type class)."""

    serializer: str
    data: bytes
    type_class: str = ""

    def to_json(self) -> dict[str, str]:
        named = {"type_class": self.type_class} if self.type_class else {}
        return {"serializer": self.serializer, **named, "bytes": self.data.hex()}


@dataclass(frozen=True)
class KeyedBackendHeader:
    """`KeyedBackendSerializationProxy`: version, key-group compression, key serializer, the states' meta info.

    `meta_complete` is False when a serializer snapshot this reader cannot step over ended the walk and no single
    end of its body let the rest parse (`unread` says which and why): states from there on have no name here, and
    their entries are reported unread. `stepped_over` names the unknown snapshots whose bodies were stepped over.
    """

    version: int
    compressed: bool
    key_serializer: SerializerSnapshot
    states: tuple[StateMetaInfoSnapshot, ...]
    meta_complete: bool
    state_count: int
    unread: str = ""
    stepped_over: tuple[str, ...] = ()


@dataclass(frozen=True)
class KeyedStateEntry:
    """One entry of one keyed state: a value, a list, one map entry, or one timer (value = its timestamp).

    `key`, `namespace`, `user_key` and `value` are decoded values (str, int, float, bool, list, dict, None for
    `VoidNamespace`), or `Undecoded`. When the key's serializer is unknown its bytes run to the end of the composite
    key (namespace and user key included) and `namespace` is None. `status` is `read` when every part decoded,
    `raw: <serializer class>: <why>` when some part is kept as bytes, and `unread: <why>` for what could not be
    read at all (then one entry stands for the rest of the state's entries in that key group, its parts None).
    """

    state: str
    key_group: int
    key: Any
    namespace: Any
    user_key: Any
    value: Any
    status: str = READ

    def row(self) -> EntryRow:
        """The entry's fields as a tuple, in order."""
        return (self.state, self.key_group, self.key, self.namespace, self.user_key, self.value, self.status)


def read_keyed_backend_header(stream: DataInput) -> KeyedBackendHeader:
    """The header at the start of every keyed-state stream (and of RocksDB's meta-data file); `stream` is the
    whole section: it ends where the first key group starts (the meta-data file's end).

    Serializer snapshots have no lengths, so the body of one this reader does not know (a job's own serializer)
    ends the walk. Its end is then searched for: the section is read again with each possible end of that body
    (and of any other unknown one after it), and an end is taken only when exactly one choice lets the rest of
    the meta info parse to the section's end; else the states from there on stay unnamed, and `unread` says why."""
    start = stream.tell()
    header, _ = _read_header(stream, NO_SKIPS)
    if header.meta_complete:
        return header
    stream.seek(start)
    skips, reason = _resync(stream.read_bytes(stream.remaining(), "keyed state meta info"))
    if skips is None:
        return replace(header, unread=reason)
    stream.seek(start)
    resynced, _ = _read_header(stream, {start + at: start + end for at, end in skips.items()})
    return replace(resynced, stepped_over=tuple(_stepped_over(resynced)))


def _read_header(stream: DataInput, skips: Skips) -> tuple[KeyedBackendHeader, int]:
    """The header read with `skips`, and where the walk stopped (where an unknown body starts, when incomplete)."""
    at = stream.tell()
    version = stream.read_int("keyed state proxy version")
    if version != KEYED_PROXY_VERSION:
        raise stream.error(f"keyed state stream version {version} is not supported (6 = Flink 1.8 to 2.3)", at)
    compressed = stream.read_bool("key-group compression flag")
    key_serializer, complete = read_serializer_snapshot(stream, "KEY_SERIALIZER", skips)
    count_at = stream.tell()
    count = -1
    states: list[StateMetaInfoSnapshot] = []
    if complete:
        count = stream.read_short("number of keyed states")
        if count < 0:
            raise stream.error(f"negative number of keyed states {count}", count_at)
        for _ in range(count):
            state, complete = read_state_meta_info(stream, skips)
            states.append(state)
            if not complete:
                break
    header = KeyedBackendHeader(version, compressed, key_serializer, tuple(states), complete, count)
    return header, stream.tell()


MAX_RESYNC_TRIALS = 20_000  # readings of one header tried while searching where unknown snapshot bodies end ...
MAX_RESYNC_BYTES = 64 << 20  # ... and the bytes they may read in all: fewer readings of a larger section
MAX_UNKNOWN = 8  # unknown snapshot bodies stepped over in one header
JAVA_CLASS = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")  # a package-qualified binary class name


class _TooManyTrialsError(Exception):
    """The search for unknown snapshot bodies' ends ran out of trials."""


@functools.lru_cache(maxsize=64)
def _resync(section: bytes) -> tuple[dict[int, int] | None, str]:
    """Where each unknown serializer snapshot's body ends in this meta-info section (by where it starts), when
    exactly one choice lets the section parse to its end; else None and why. Cached: every subtask of an operator
    writes the same section."""
    trials = 0
    most = min(MAX_RESYNC_TRIALS, MAX_RESYNC_BYTES // max(len(section), 1))

    def search(skips: dict[int, int], unknown_at: int) -> list[dict[int, int]]:
        nonlocal trials
        found: list[dict[int, int]] = []
        for end in range(unknown_at, len(section) + 1):
            trials += 1
            if trials > most:
                raise _TooManyTrialsError
            attempt = {**skips, unknown_at: end}
            inp = DataInput(section, "")
            try:
                header, stop = _read_header(inp, attempt)
            except InputError:
                continue
            if not header.meta_complete:
                # another unknown body: worth a search only after what reads as a Java class's binary name
                if stop > end and len(attempt) < MAX_UNKNOWN and JAVA_CLASS.fullmatch(_unknown_class(header)):
                    found += search(attempt, stop)
            elif not inp.remaining():
                found.append(attempt)
            if len(found) > 1:
                break
        return found

    first, stop = _read_header(DataInput(section, ""), NO_SKIPS)
    unknown = _unknown_class(first)
    try:
        found = search({}, stop)
    except _TooManyTrialsError:
        return (
            None,
            f"serializer {unknown} is unknown and its snapshot's end was not found in {most} trials",
        )
    if len(found) != 1:
        why = "no end of its snapshot lets" if not found else "more than one end of its snapshot lets"
        return None, f"serializer {unknown} is unknown and {why} the rest of the meta info parse to its end"
    return found[0], ""


def _unknown_class(header: KeyedBackendHeader) -> str:
    """The class of the snapshot whose unknown body stopped this (incomplete) header's walk."""
    snapshot = header.states[-1].serializers[-1] if header.states else header.key_serializer
    while snapshot.nested:
        snapshot = snapshot.nested[-1]
    return snapshot.snapshot_class


def _stepped_over(header: KeyedBackendHeader) -> Iterator[str]:
    """The classes of the unknown snapshots whose bodies were stepped over (kept as their payload, with where
    they were read; of the known snapshots only Beam's coder snapshot keeps one)."""
    pending = [header.key_serializer, *(s for state in header.states for s in state.serializers)]
    while pending:
        snapshot = pending.pop(0)
        if snapshot.payload_path and snapshot.snapshot_class != BEAM_CODER_SNAPSHOT:
            yield snapshot.snapshot_class
        pending[:0] = snapshot.nested


class KeyGroupsReader:
    """The keyed state of one key-group handle: its header, then its entries key group by key group.

    `resolve` decodes the values of serializers Flink does not define (Beam's coders); without it they are kept
    as `Undecoded` bytes."""

    def __init__(
        self, handle: KeyGroupsStateHandle, stream: StateStream, max_parallelism: int, resolve: Resolver | None = None
    ) -> None:
        self.handle = handle
        self.stream = stream
        self.max_parallelism = max_parallelism
        self.prefix_bytes = 1 if max_parallelism <= 128 else 2  # computeRequiredBytesInKeyGroupPrefix
        outside = [offset for offset in handle.offsets if not 0 <= offset < stream.size]
        if outside:
            raise InputError(
                stream.files.metadata_path,
                stream.handle_offset,
                f"key-group offset {outside[0]} lies outside the {stream.size}-byte keyed state stream",
            )
        ends = sorted({offset for offset in handle.offsets if offset} | {stream.size})
        self._ends = ends
        first = ends[0]
        head = stream.read(0, first, "keyed state header")
        self.header = read_keyed_backend_header(head)
        self._codecs = [StateCodec(state, self.header.key_serializer, resolve) for state in self.header.states]
        self.layout = "canonical" if handle.tag == SAVEPOINT_KEY_GROUPS_HANDLE else self._layout()

    def _layout(self) -> str:
        """Tag 3/12: a heap checkpoint writes every key group of its range, each starting with its number as an
        `int` (never compressed: a Snappy stream follows it); a canonical stream leaves empty key groups at offset 0
        and starts each with a state id and a key length, or, compressed, with the Snappy stream identifier. The
        two coincide only for an uncompressed handle of the one key group 0 (a subtask that owns only it: max
        parallelism = parallelism), whose number and a first state id 0 with a key under 64 KiB both read as an
        `int` 0: that key group is read as canonical once, to its end (every key and value is length-prefixed, each
        key starts with the key group's number, and the end mark must fall on the last byte, whatever the
        serializers), and is heap if that fails."""
        offsets = self.handle.offsets
        if not all(offsets):
            return "canonical"
        for index, offset in enumerate(offsets):
            key_group = self.handle.start_key_group + index
            if self.stream.read(offset, 4, "key group number").read_int("key group number") != key_group:
                return "canonical"
        if len(offsets) == 1 and self.handle.start_key_group == 0 and not self.header.compressed:
            try:
                for _ in self._canonical_key_group(self._window(offsets[0], self._ends[1], 0, "key group 0"), 0):
                    pass
            except InputError:
                return "heap"
            return "canonical"
        return "heap"

    def entries(self, key_groups: range | None = None) -> Iterator[KeyedStateEntry]:
        """Every entry, in key-group order, as it is decoded: each key group is read `WINDOW_BYTES` at a time
        (decompressed a chunk at a time when compressed), so memory does not grow with the key group or the
        state. With `key_groups`, only the entries of those key groups (a part of the handle read on its own: the
        other key groups' bytes are not read)."""
        for row in self.rows(key_groups):
            yield KeyedStateEntry(*row)

    def rows(self, key_groups: range | None = None) -> Iterator[EntryRow]:
        """`entries`, each as the tuple of its fields (`EntryRow`)."""
        return cast(Iterator[EntryRow], self.row_runs(key_groups))

    def row_runs(self, key_groups: range | None = None, runs: RunReaders | None = None) -> Iterator[Any]:
        """`rows`; with `runs`, a canonical state's entries are handed to the run reader it makes for the state
        (`audit/checks/keyed_columns.py`, what the data source's `keyed` table is built from), which gives runs of
        them as it likes (not an `EntryRow` each), entries it does not read given one at a time as here."""
        readers = {} if runs is None else {codec.name: runs(codec) for codec in self._codecs}
        for index, offset in enumerate(self.handle.offsets):
            key_group = self.handle.start_key_group + index
            if offset == 0 or (key_groups is not None and key_group not in key_groups):
                continue
            end = next(e for e in self._ends if e > offset)
            what = f"key group {key_group}"
            if self.layout == "heap":
                for entry in self._heap_key_group(offset, end, key_group, what):
                    yield entry.row()
            else:
                yield from self._canonical_key_group(self._window(offset, end, key_group, what), key_group, readers)

    def key_groups(self) -> Iterator[tuple[int, tuple[KeyedStateEntry, ...]]]:
        """Each non-empty key group's number and entries, in key-group order, one key group in memory at a time."""
        for key_group, entries in groupby(self.entries(), key=lambda entry: entry.key_group):
            yield key_group, tuple(entries)

    def _window(self, start: int, end: int, key_group: int, what: str) -> _Window:
        """The stream's bytes [start, end) a window at a time, decompressed when the snapshot is compressed."""
        if not self.header.compressed:
            return _Window(self.stream, start, end, what)
        framed = _SnappyFramedInput(self.stream, start, end, key_group, what)
        return _Window(framed, 0, framed.size, what)

    def _codec(self, inp: DataInput, at: int) -> StateCodec | int:
        """The codec of the state id read here (or `at`), or the id itself for a state the meta info could not name
        (an unknown serializer before it): its canonical entries are stepped over, reported unread."""
        state_id = inp.read_unsigned_short("state id") if at < 0 else at
        if state_id < len(self._codecs):
            return self._codecs[state_id]
        if self.header.meta_complete or not 0 <= state_id < self.header.state_count:
            raise inp.error(f"state id {state_id}: the stream names {max(self.header.state_count, 0)} states")
        return state_id

    def _canonical_key_group(
        self, window: _Window, key_group: int, readers: dict[str, Any] | None = None
    ) -> Iterator[Any]:
        codec = self._codec(window.need(2), -1)
        prefix_bytes = self.prefix_bytes
        two_byte_prefix = prefix_bytes == 2
        unnamed = 0  # entries of the current state when the meta info could not name it
        while True:
            first = -1
            fast = run = None
            if isinstance(codec, StateCodec):
                fast = codec.fast
                run = readers.get(codec.name) if readers else None
            if run is not None:  # a run of the state's entries, read by the state's run reader
                assert isinstance(codec, StateCodec)
                general = functools.partial(_entry_at, window.data, codec, key_group, prefix_bytes)
                rows, first = run(window.data, key_group, prefix_bytes, general)
                if rows is not None:
                    yield rows
                elif first == SHORT_RUN:  # too few entries for a run: read one at a time
                    run = None
            if run is None and fast is not None:  # a run of the state's entries, read straight from the window's bytes
                first = yield from _fast_run(window.data, fast, key_group, prefix_bytes)
            if first < 0:  # the next entry, the general way (one the run left, or every entry of another layout)
                # Framed straight from the window's bytes while they hold the entry (all but one entry per window).
                framed = window.data.sub_length_prefixed_pair("composite key length", "state value length")
                if framed is None:
                    key = window.length_prefixed("composite key", "composite key length")
                    value = window.length_prefixed("state value", "state value length")
                else:
                    key, value = framed
                if len(key) < prefix_bytes:
                    raise key.error(f"composite key of {len(key)} bytes has no key-group prefix")
                # The key-group prefix, big-endian; the top bit of its first byte says a state id or the end
                # follows.
                first = key.read_unsigned_byte("key-group prefix")
                prefix = first & ~FIRST_BIT_IN_BYTE_MASK
                if two_byte_prefix:
                    prefix = prefix << 8 | key.read_unsigned_byte("key-group prefix")
                if prefix != key_group:
                    raise key.error(f"an entry of key group {prefix} in key group {key_group}", 0)
                if isinstance(codec, StateCodec):
                    yield codec.canonical_row(key_group, key, value)
                else:
                    unnamed += 1
            if first & FIRST_BIT_IN_BYTE_MASK:
                if unnamed:
                    yield self._unnamed(
                        f"{unnamed} entries of state id {codec} in key group {key_group}", codec, key_group
                    ).row()
                    unnamed = 0
                next_id = window.need(2).read_unsigned_short("next state id")
                if next_id == END_OF_KEY_GROUP_MARK:
                    break
                codec = self._codec(window.data, next_id)
        if window.left():
            raise window.data.error(f"{window.left()} unexpected trailing bytes after key group {key_group}")

    def _unnamed(self, what: str, state_id: StateCodec | int, key_group: int) -> KeyedStateEntry:
        """What stands for `what` (entries of a state the meta info could not name) in one key group."""
        return KeyedStateEntry(
            f"#{state_id}", key_group, None, None, None, None, f"{UNREAD}: {what}: {self.header.unread}"
        )

    def _heap_key_group(self, offset: int, end: int, key_group: int, what: str) -> Iterator[KeyedStateEntry]:
        number = self.stream.read(offset, min(4, end - offset), what)
        if number.read_int("key group number") != key_group:
            raise number.error(f"key group {key_group} does not start with its number", 0)
        window = self._window(offset + 4, end, key_group, what)
        written: set[str] = set()  # the states written so far in this key group
        while window.left():
            codec = self._codec(window.need(2), -1)
            if not isinstance(codec, StateCodec):  # heap entries have no lengths: nothing after them can be found
                yield self._unnamed(f"state id {codec} and the rest of key group {key_group}", codec, key_group)
                return
            if codec.value is None and not codec.is_timer:
                found = self._heap_search(codec, key_group, window, written)
                if found is not None:
                    yield from found
                    return
            if codec.may_refuse and window.left() <= HEAP_SEARCH_BYTES:
                decoded = self._heap_or_search(codec, key_group, window, written)
                if decoded is not None:
                    yield from decoded
                    if any(entry.status.startswith((RAW, UNREAD)) for entry in decoded):
                        return  # the search read the rest of the key group
                    written.add(codec.name)
                    continue
            written.add(codec.name)
            try:
                for entry in codec.heap_entries(key_group, window):
                    yield entry
                    if entry.status.startswith(UNREAD):
                        return
            except KryoClassNotDecodedError as error:
                why = f"the rest of state {codec.name!r} and of key group {key_group}: {error.message}"
                yield KeyedStateEntry(codec.name, key_group, None, None, None, None, f"{UNREAD}: {why}")
                return

    def _heap_or_search(
        self, codec: StateCodec, key_group: int, window: _Window, written: set[str]
    ) -> list[KeyedStateEntry] | None:
        """A state whose decoders may refuse a value (`may_refuse`: a Kryo value of a class outside Kryo's own
        registrations, a Scala `Try`'s `Failure`), read from the rest of the key group loaded whole: its entries;
        or, when a value is refused, the search from the state's start (`_heap_search`, that value and the others
        kept as bytes). None, the window where it was, when the search finds no single reading."""
        rest = window.need(window.left())
        begin = rest.tell()
        try:
            return list(codec.heap_entries(key_group, window))
        except KryoClassNotDecodedError:
            rest.seek(begin)
        found = self._heap_search(codec, key_group, window, written)
        if found is None:
            rest.seek(begin)
        return found

    def _heap_search(
        self, codec: StateCodec, key_group: int, window: _Window, written: set[str]
    ) -> list[KeyedStateEntry] | None:
        """The rest of a heap key group from a state whose values no decoder knows (Kryo's) but whose keys and
        namespaces are known: the values' ends are the only ones that let every later entry and state read to the
        key group's end exactly (its other entries' namespaces and keys, each of this key group where
        `keygroups.key_groups_of` knows a key's, then each later state's id, count and entries:
        `HeapSnapshotStrategy` writes every state once in each key group, so the later ones are exactly those not
        `written` before it), each value kept as its bytes (status `raw`). None, the window where it
        was, when no single choice does, when another value no decoder knows follows, or when the rest exceeds
        `HEAP_SEARCH_BYTES` or the search `HEAP_SEARCH_TRIALS`: then the state's entries are unread
        (`StateCodec.heap_entries`). Nothing of the values' own layout is assumed but that each is at least a
        byte."""
        read_key, read_namespace = codec.key, codec.namespace
        left = window.left()
        if read_key is None or read_namespace is None or left > HEAP_SEARCH_BYTES:
            return None
        rest = window.need(left)
        begin = rest.tell()
        count = window.read_length(f"number of entries of state {codec.name!r}")
        if count > HEAP_SEARCH_ENTRIES:
            rest.seek(begin)
            return None
        source = _Bytes(rest)
        end = begin + left
        key_class = codec.key_serializer.snapshot_class
        solutions: list[tuple[list[tuple[Any, Any, int, int]], list[KeyedStateEntry]]] = []
        trials = 0

        def later_states(at: int) -> list[KeyedStateEntry] | None:
            window = _Window(source, at, end, f"key group {key_group}")
            entries: list[KeyedStateEntry] = []
            names = {*written, codec.name}
            try:
                while window.left():
                    later = self._codec(window.need(2), -1)
                    if not isinstance(later, StateCodec) or later.name in names:
                        return None
                    names.add(later.name)
                    for entry in later.heap_entries(key_group, window):
                        if entry.status.startswith(UNREAD):
                            return None
                        entries.append(entry)
            except InputError:
                return None
            return entries if len(names) == len(self._codecs) else None

        def search(at: int, found: list[tuple[Any, Any, int, int]]) -> None:
            """Every way entries `len(found)`.. of the state and the later states read from `at` to the end."""
            nonlocal trials
            if len(found) == count:
                later = later_states(at)
                if later is not None:
                    solutions.append((found, later))
                return
            entry = source.read(at, end - at, "heap entry")
            try:
                namespace = read_namespace(entry)
                key = read_key(entry)
            except InputError:
                return
            # A key is never null (its hashCode() assigned it to this key group).
            groups = None if key is None else key_groups_of(key, key_class, self.max_parallelism)
            if key is None or (groups is not None and key_group not in groups):
                return
            value_at = at + entry.tell()
            for value_end in range(value_at + 1, end + 1):
                trials += 1
                if len(solutions) > 1 or trials > HEAP_SEARCH_TRIALS:
                    return
                search(value_end, [*found, (key, namespace, value_at, value_end)])

        search(rest.tell(), [])
        if len(solutions) != 1 or trials > HEAP_SEARCH_TRIALS:
            rest.seek(begin)
            return None
        snapshot = codec.value_serializer
        serializer = codec._serializer_class(snapshot)
        type_class = "" if snapshot is None else snapshot.type_class
        status = raw_status(serializer, type_class)
        values, later = solutions[0]
        return [
            *(
                KeyedStateEntry(
                    codec.name,
                    key_group,
                    key,
                    namespace,
                    None,
                    Undecoded(serializer, source.read(at, to - at, "value").read_bytes(to - at), type_class),
                    status,
                )
                for key, namespace, at, to in values
            ),
            *later,
        ]


def _entry_at(data: DataInput, codec: StateCodec, key_group: int, prefix_bytes: int, pos: int) -> EntryRow:
    """The general path's row of the entry at `pos` of `data`, loaded whole, its key-group prefix checked."""
    data.seek(pos)
    framed = data.sub_length_prefixed_pair("composite key length", "state value length")
    assert framed is not None  # a run reader asks only for entries it found whole
    key, value = framed
    key.skip(prefix_bytes, "key-group prefix")
    return codec.canonical_row(key_group, key, value)


def _fast_run(data: DataInput, read: RowReader, key_group: int, prefix_bytes: int) -> Generator[EntryRow, None, int]:
    """The entries of one state from `data`'s position on, each read by `read` (`keyed_layouts`) from positions
    in the window's bytes while it holds them whole, up to and including the state's last in the key group (its
    key's first bit set). Returns that entry's first key byte, or -1 at an entry it leaves to the general path (not
    loaded whole, or not decoded by `read`: every check that path makes is made there), `data` positioned at the
    next entry either way."""
    buf = data.buffer()
    pos = data.tell()
    size = len(buf)
    unpack_int = _INT.unpack_from
    while pos + 4 <= size:
        k = pos + 4
        key_end = k + unpack_int(buf, pos)[0]
        if not k + prefix_bytes <= key_end <= size - 4:
            break
        v = key_end + 4
        value_end = v + unpack_int(buf, key_end)[0]
        if not v <= value_end <= size:
            break
        first: int = buf[k]
        prefix = first & ~FIRST_BIT_IN_BYTE_MASK
        if prefix_bytes == 2:
            prefix = prefix << 8 | buf[k + 1]
        if prefix != key_group:
            break
        try:
            row = read(buf, key_group, k + prefix_bytes, key_end, v, value_end)
        except FALLBACK:
            break
        pos = value_end
        if first & FIRST_BIT_IN_BYTE_MASK:
            data.seek(pos)
            yield row
            return first
        yield row
    data.seek(pos)
    return -1


class _Bytes:
    """A `_ByteSource` over bytes already loaded (the rest of a heap key group, searched): views, not copies."""

    def __init__(self, data: DataInput) -> None:
        self.data = data

    def read(self, start: int, length: int, what: str) -> DataInput:
        self.data.seek(start)
        return self.data.sub(length, what)


class _ByteSource(Protocol):
    """Where a `_Window` reads from: a keyed-state stream (`StateStream`), or a key group's decompressed bytes."""

    def read(self, start: int, length: int, what: str) -> DataInput: ...


class _Window:
    """Bytes [start, end) of a source, `WINDOW_BYTES` of them in memory at a time (more only for one larger
    entry): `need(n)` returns the decoder whose next `n` bytes are loaded, reading on from the current position
    when they are not. Offsets in errors are the source's: the file's, as `StateStream.read` gives them, or a
    position in a decompressed key group."""

    def __init__(self, source: _ByteSource, start: int, end: int, what: str) -> None:
        self.source = source
        self.start = start  # where `data` starts in the source
        self.end = end
        self.what = what
        self.data = source.read(start, min(WINDOW_BYTES, end - start), what)

    def left(self) -> int:
        """Bytes from the current position to `end`."""
        return self.end - self.start - self.data.tell()

    def need(self, n: int) -> DataInput:
        """The decoder, with the next `n` bytes loaded if `end` allows (else a read past `end` fails there)."""
        data = self.data
        if data.remaining() < n and self.start + len(data) < self.end:  # else every byte up to `end` is loaded
            at = self.start + data.tell()
            data = self.source.read(at, min(max(WINDOW_BYTES, n), self.end - at), self.what)
            self.start, self.data = at, data
        return data

    def length_prefixed(self, what: str, length_what: str) -> DataInput:
        """`int len` (`length_what`), then a decoder over the `len` bytes that follow (`what`; a view, not a
        copy)."""
        framed = self.data.sub_length_prefixed(what, length_what)
        if framed is not None:
            return framed
        data = self.need(4)
        at = data.tell()
        n = data.read_int(length_what)
        if n > data.remaining():
            left = self.left()
            if n > left:
                raise data.error(f"{length_what} {n} needs at least {n} bytes, only {left} left", at)
            data = self.need(n)
        elif n < 0:
            raise data.error(f"negative {length_what} {n}", at)
        return data.sub(n, what)

    def read_length(self, what: str) -> int:
        """An `int` count of elements of at least a byte each, checked against what is left up to `end` (not only
        against what is loaded)."""
        data = self.need(4)
        at = data.tell()
        n = data.read_int(what)
        if n < 0:
            raise data.error(f"negative {what} {n}", at)
        left = self.left()
        if n > left:
            raise data.error(f"{what} {n} needs at least {n} bytes, only {left} left", at)
        return n

    def decode(self, read: Callable[[DataInput], T]) -> T:
        """`read` applied at the current position, for a value without a length (a heap checkpoint's entries):
        when it fails with bytes up to `end` not yet loaded, the window is grown (at least doubled) and `read`
        retried from the same position. So a value may be larger than a window, and an error is raised only
        once every byte up to `end` is loaded: the one a read of the whole key group gives, at the same offset."""
        while True:
            data = self.data
            at = data.tell()
            try:
                return read(data)
            except KryoClassNotDecodedError:
                raise  # the class was read whole: more bytes would not change it
            except InputError:
                if self.start + len(data) >= self.end:
                    raise
                data.seek(at)
                self.need(max(WINDOW_BYTES, 2 * (len(data) - at)))


class _SnappyFramedInput:
    """A compressed key group: xerial's Snappy framed stream (Flink opens a `SnappyFramedInputStream` at each key
    group: `SnappyStreamCompressionDecorator`, which Flink 1.8 to 2.3 use) over bytes [start, end) of `stream`,
    decompressed a chunk at a time as `read` asks for its bytes (forward only: a `_Window` reads on from where it
    is).

    Two passes over the compressed bytes, each a window at a time: the first checks every chunk's header (the
    stream starts with its identifier; each chunk's type and lengths) and adds up the sizes they declare, without
    decompressing, so `size`, the key group's decompressed length, bounds every length read from it as a
    stream's size bounds them uncompressed; the second decompresses the data chunks in turn, each one's checksum
    checked. Offsets in errors are positions in the decompressed key group, in a path that names the file and
    where the key group's compressed bytes start."""

    def __init__(self, stream: StateStream, start: int, end: int, key_group: int, what: str) -> None:
        first = stream.read(start, 0, what)  # the file's path, and the offset in it
        self.path = f"{first.path} (Snappy, key group {key_group} at {first.base})"
        self.size = sum(chunk_data_size(kind, body) for kind, body in _snappy_chunks(stream, start, end, what))
        # (Made of the arguments, not of `self`: a generator holding `self` would make a cycle, which only the
        # garbage collector frees, and key groups' buffers would wait for it.)
        chunks = _snappy_chunks(stream, start, end, what)
        self._data = (chunk_data(kind, body) for kind, body in chunks if kind in DATA_CHUNKS)
        self._buffer = bytearray()  # decompressed bytes from `_buffer_start` on
        self._buffer_start = 0

    def read(self, start: int, length: int, what: str) -> DataInput:
        """The decompressed bytes [start, start + length) as a decoder (`_Window` asks for none past `size`, and
        never for any before its last read's `start`). Each data chunk decompresses to exactly the size its
        header declares (cramjam checks), so the chunks last to `size`."""
        assert self._buffer_start <= start
        assert start + length <= self.size
        kept = memoryview(self._buffer)[start - self._buffer_start :]
        if len(kept) < length:
            # The bytes still wanted are copied out first, so that the old buffer goes before the new one grows.
            buffer = bytearray(kept)
            kept.release()
            self._buffer = buffer
            while len(buffer) < length:
                buffer += next(self._data)
            self._buffer_start = start
            kept = memoryview(buffer)
        return DataInput(kept[:length], self.path, start)


def _snappy_chunks(stream: StateStream, start: int, end: int, what: str) -> Iterator[tuple[int, DataInput]]:
    """The type and body of each chunk of the Snappy framed stream in bytes [start, end) of `stream`, in order, a
    window at a time, each header checked; the first must be the stream identifier (`SnappyFramedInputStream`'s
    constructor requires it)."""
    window = _Window(stream, start, end, what)
    while True:
        head = window.need(CHUNK_HEADER_BYTES)
        at = head.tell()
        kind, length = read_chunk_header(head)
        if kind != IDENTIFIER_CHUNK and window.start + at == start:
            raise head.error("a Snappy framed stream must start with its identifier (sNaPpY)", at)
        yield kind, window.need(length).sub(length, "Snappy chunk")
        if not window.left():
            return


class StateCodec:
    """How one state's keys and values are laid out, from its meta info and the key serializer."""

    def __init__(
        self, state: StateMetaInfoSnapshot, key_serializer: SerializerSnapshot, resolve: Resolver | None
    ) -> None:
        self.state = state
        self.name = state.name
        self.is_timer = state.backend_state_type == "PRIORITY_QUEUE"
        # What the end-of-entry checks name, made once: they run for every entry.
        self._key_what = f"composite key of state {state.name!r}"
        self._timer_what = f"timer of state {state.name!r}"
        self._value_what = f"value of state {state.name!r}"
        self._map_value_what = f"map value of state {state.name!r}"
        self.key_serializer = key_serializer
        self.key = decoder(key_serializer, resolve)
        self.value_serializer = state.serializer("VALUE_SERIALIZER")
        self.namespace_serializer = state.serializer("NAMESPACE_SERIALIZER")
        self.type = state.option("KEYED_STATE_TYPE") or state.backend_state_type
        self.namespace = None if self.namespace_serializer is None else decoder(self.namespace_serializer, resolve)
        self.value = None if self.value_serializer is None else decoder(self.value_serializer, resolve)
        # SerializedCompositeKeyBuilder writes key and namespace lengths only when both are variable-sized.
        key_variable = self.key is None or fixed_length(key_serializer) is None
        namespace_variable = self.namespace_serializer is None or fixed_length(self.namespace_serializer) is None
        self.ambiguous = key_variable and namespace_variable
        serializers = (key_serializer, self.namespace_serializer, self.value_serializer)
        self.may_refuse = any(may_refuse(serializer) for serializer in serializers if serializer is not None)
        self.is_list = self.type == "LIST"
        self.is_map = self.type == "MAP"
        self.element: Decoder | None = None
        self.user_key: Decoder | None = None
        self.user_value: Decoder | None = None
        nested = () if self.value_serializer is None else self.value_serializer.nested
        if self.type == "LIST" and self.value_serializer is not None and self.value_serializer.snapshot_class == LIST:
            self.element = decoder(nested[0], resolve) if nested else None
        if self.type == "MAP" and self.value_serializer is not None and self.value_serializer.snapshot_class == MAP:
            self.user_key = decoder(nested[0], resolve) if len(nested) == 2 else None
            self.user_value = decoder(nested[1], resolve) if len(nested) == 2 else None
        # Every part of a canonical entry has a decoder (none is kept as `Undecoded`): its status is `read`.
        parts: tuple[Decoder | None, ...] = (self.value,)
        if not self.is_timer:
            value_part = self.element if self.is_list else self.user_value if self.is_map else self.value
            parts = (self.key, self.namespace, value_part, *((self.user_key,) if self.is_map else ()))
        self.decoded_whole = all(part is not None for part in parts)
        # The entry read straight from the window's bytes, for the layouts `keyed_layouts` knows (None: not known).
        self.fast: RowReader | None = None
        if self.decoded_whole:
            state_type = "TIMER" if self.is_timer else self.type
            self.fast = entry_reader(
                state.name, state_type, key_serializer, self.namespace_serializer, self.value_serializer, self.ambiguous
            )

    def _serializer_class(self, snapshot: SerializerSnapshot | None) -> str:
        return "unknown" if snapshot is None else snapshot.snapshot_class

    def canonical_entry(self, key_group: int, key: DataInput, value: DataInput) -> KeyedStateEntry:
        """One entry from its composite key (past the key-group prefix) and its value; its status says which part,
        if any, is kept as bytes."""
        return KeyedStateEntry(*self.canonical_row(key_group, key, value))

    def canonical_row(self, key_group: int, key: DataInput, value: DataInput) -> EntryRow:
        """`canonical_entry` as a tuple (`EntryRow`)."""
        if self.may_refuse:  # a Kryo value may be refused: the entry is then read again, that value kept as bytes
            key_at, value_at = key.tell(), value.tell()
            try:
                parts = self._canonical_parts(key, value)
            except KryoClassNotDecodedError as error:
                kept = self._kept_as_bytes(key, key_at, value, value_at)
                return (self.name, key_group, *kept, raw_status(KRYO, error.class_name))
        else:
            parts = self._canonical_parts(key, value)
        if not self.decoded_whole:
            for part in parts:
                if isinstance(part, Undecoded):
                    return (self.name, key_group, *parts, raw_status(part.serializer, part.type_class))
        return (self.name, key_group, *parts, READ)

    def _kept_as_bytes(self, key: DataInput, key_at: int, value: DataInput, value_at: int) -> tuple[Any, Any, Any, Any]:
        """An entry's parts when a Kryo value in it is not decoded (`KryoClassNotDecodedError`): read again with the
        values kept as bytes, else with the key kept as bytes (the Kryo value is the key), else both."""
        for raw_key, raw_values in ((False, True), (True, False)):
            try:
                return self._reread(key, key_at, value, value_at, raw_key, raw_values)
            except KryoClassNotDecodedError:
                continue
        return self._reread(key, key_at, value, value_at, True, True)

    def _reread(
        self, key: DataInput, key_at: int, value: DataInput, value_at: int, raw_key: bool, raw_values: bool
    ) -> tuple[Any, Any, Any, Any]:
        plain = copy.copy(self)
        if raw_key:
            plain.key = None
        if raw_values:
            plain.value = plain.element = plain.user_value = None
        key.seek(key_at)
        value.seek(value_at)
        return plain._canonical_parts(key, value)

    def _unread_heap(self, key_group: int, count: int, serializer: SerializerSnapshot | None) -> KeyedStateEntry:
        """What stands for a heap state's entries whose serializer is unknown: they have no lengths, so neither
        they nor the rest of the key group can be read."""
        reason = None if serializer is None else raw_reason(serializer)
        known = "is unknown" if reason is None else f"is not decoded ({reason})"
        why = (
            f"{count} entries of state {self.name!r} and the rest of key group {key_group}: serializer "
            f"{self._serializer_class(serializer)} {known}, and heap snapshot entries have no lengths"
        )
        return KeyedStateEntry(self.name, key_group, None, None, None, None, f"{UNREAD}: {why}")

    def _canonical_parts(self, key: DataInput, value: DataInput) -> tuple[Any, Any, Any, Any]:
        """An entry's key, namespace, user key and value."""
        if self.is_timer:
            if value.remaining():
                raise value.error(f"timer of state {self.name!r} has a {value.remaining()}-byte value (expected none)")
            if self.value is None:
                raw = Undecoded(self._serializer_class(self.value_serializer), key.read_bytes(key.remaining()))
                return raw, None, None, None
            timer = self.value(key)
            key.expect_end(self._timer_what)
            return timer["key"], timer["namespace"], None, timer["timestamp"]
        read_key = self.key
        if read_key is None:
            raw_key = Undecoded(self.key_serializer.snapshot_class, key.read_bytes(key.remaining()))
            return raw_key, None, None, self._canonical_value(value)
        if self.ambiguous:
            key_start = key.tell()
            decoded_key = read_key(key)
            _expect_variable_int(key, key.tell() - key_start, "key length")
        else:
            decoded_key = read_key(key)
        namespace: Any
        read_namespace = self.namespace
        if read_namespace is None:
            namespace = Undecoded(self._serializer_class(self.namespace_serializer), key.read_bytes(key.remaining()))
            return decoded_key, namespace, None, self._canonical_value(value)
        if self.ambiguous:
            namespace_start = key.tell()
            namespace = read_namespace(key)
            _expect_variable_int(key, key.tell() - namespace_start, "namespace length")
        else:
            namespace = read_namespace(key)
        user_key = self._user_key(key) if self.is_map else None
        key.expect_end(self._key_what)
        return decoded_key, namespace, user_key, self._canonical_value(value)

    def _user_key(self, key: DataInput) -> Any:
        if self.user_key is None:
            nested = () if self.value_serializer is None else self.value_serializer.nested
            return Undecoded(self._serializer_class(nested[0] if nested else None), key.read_bytes(key.remaining()))
        return self.user_key(key)

    def _canonical_value(self, value: DataInput) -> Any:
        """A value as the canonical format stores it: plain, `,`-delimited list elements, or `isNull` + value."""
        if self.is_list:
            read_element = self.element
            if read_element is None:
                return self._undecoded(value)
            elements = []
            while True:
                elements.append(read_element(value))
                if not value.remaining():
                    return elements
                at = value.tell()
                if value.read_unsigned_byte("list delimiter") != LIST_DELIMITER:
                    raise value.error(f"list state {self.name!r}: elements not separated by ','", at)
        if self.is_map:
            if self.user_value is None:
                return self._undecoded(value, MAP)
            result = None if value.read_bool("map value null flag") else self.user_value(value)
            value.expect_end(self._map_value_what)
            return result
        if self.value is None:
            return self._undecoded(value)
        result = self.value(value)
        value.expect_end(self._value_what)
        return result

    def _undecoded(self, value: DataInput, container: str | None = None) -> Undecoded:
        snapshot = self.value_serializer
        if container is not None and snapshot is not None and len(snapshot.nested) == 2:
            snapshot = snapshot.nested[1]
        type_class = "" if snapshot is None else snapshot.type_class
        return Undecoded(self._serializer_class(snapshot), value.read_bytes(value.remaining()), type_class)

    def heap_entries(self, key_group: int, window: _Window) -> Iterator[KeyedStateEntry]:
        """`int n`, then n x (namespace, key, state) — or n timers — as the serializers write them, each decoded
        from the window as it comes (`_Window.decode`: the entries have no lengths)."""
        name = self.state.name
        count = window.read_length(f"number of entries of state {name!r}")
        if self.state.backend_state_type == "PRIORITY_QUEUE":
            read_timer = self.value
            if read_timer is None:
                if count:
                    yield self._unread_heap(key_group, count, self.value_serializer)
                return
            for _ in range(count):
                timer = window.decode(read_timer)
                yield KeyedStateEntry(name, key_group, timer["key"], timer["namespace"], None, timer["timestamp"])
            return
        read_key, read_namespace, read_value = self.key, self.namespace, self.value
        if read_key is None or read_namespace is None or read_value is None:
            if count:
                unknown = next(
                    serializer
                    for serializer, read in (
                        (self.key_serializer, read_key),
                        (self.namespace_serializer, read_namespace),
                        (self.value_serializer, read_value),
                    )
                    if read is None
                )
                yield self._unread_heap(key_group, count, unknown)
            return

        def read_entry(data: DataInput) -> tuple[Any, Any, Any]:
            namespace = read_namespace(data)
            return namespace, read_key(data), read_value(data)

        is_map = self.type == "MAP"
        for _ in range(count):
            namespace, key, value = window.decode(read_entry)
            if is_map:
                for user_key, user_value in value:
                    yield KeyedStateEntry(name, key_group, key, namespace, user_key, user_value)
            else:
                yield KeyedStateEntry(name, key_group, key, namespace, None, value)


def raw_status(serializer: str, type_class: str = "") -> str:
    """`KeyedStateEntry.status` of an entry with a part kept as bytes (the class it holds, when named), and why."""
    named = f" ({type_class})" if type_class else ""
    return f"{RAW}: {serializer}{named}: {RAW_REASONS.get(serializer, 'a serializer this reader does not know')}"


def _expect_variable_int(key: DataInput, value: int, what: str) -> None:
    """`CompositeKeySerializationUtils.writeVariableIntBytes`: the low byte first, until nothing is left."""
    expected = bytearray()
    while True:
        expected.append(value & 0xFF)
        value >>= 8
        if not value:
            break
    at = key.tell()
    if key.read_bytes(len(expected), what) != bytes(expected):
        raise key.error(f"{what} in the composite key does not match the bytes before it", at)
