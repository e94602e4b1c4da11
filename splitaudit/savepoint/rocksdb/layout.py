"""Flink's keyed state in RocksDB (`RocksDBKeyedStateBackend`): one column family per state, named as the state,
listed in the meta-data file (`KeyedBackendSerializationProxy`, the handle's `meta_state`).

A column family's keys are `SerializedCompositeKeyBuilder`'s composite keys, the same bytes a canonical savepoint
holds: the key group (`RocksDBKeySerializationUtils.writeKeyGroup`: 1 byte when max parallelism <= 128, else 2,
big-endian), the serialized key, the namespace (each followed by its length as
`CompositeKeySerializationUtils.writeVariableIntBytes` when both are variable-sized: the ambiguous-key suffix),
and for map state the user key. Values: the serialized value; for list state the elements joined by ',' (the
merge operator's delimiter); for map state `bool isNull, value`; TTL states wrap the value (`TtlSerializer`).
Timers (`_timer_state/event_timer`, `_timer_state/processing_timer`, `RocksDBPriorityQueueSetFactory`) are keys
(`TimerSerializer`: timestamp, key, namespace) with empty values. So a native snapshot's entries decode through
the same codec as a canonical savepoint's (`savepoint/keyed.py`), and come out in the same order: key group by
key group, state by state within one, keys in byte order.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from itertools import groupby

from splitaudit.primitives.datainput import DataInput
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import IncrementalRemoteKeyedStateHandle
from splitaudit.savepoint.keyed import RAW, KeyedStateEntry, StateCodec, Undecoded, read_keyed_backend_header
from splitaudit.savepoint.rocksdb.manifest import DEFAULT_COLUMN_FAMILY
from splitaudit.savepoint.rocksdb.merge import merged
from splitaudit.savepoint.rocksdb.snapshot import NativeSnapshot
from splitaudit.savepoint.streams import open_state_stream
from splitaudit.savepoint.typeserializers import Resolver


class NativeSnapshotReader:
    """The keyed state of one native RocksDB snapshot handle, with `KeyGroupsReader`'s interface: `header`,
    `entries()`, `key_groups()`. Entries of key groups outside the handle's range (left by a rescale) are not
    the handle's and are passed over, as Flink's restore clips them."""

    def __init__(
        self,
        handle: IncrementalRemoteKeyedStateHandle,
        files: SavepointFiles,
        max_parallelism: int,
        resolve: Resolver | None = None,
    ) -> None:
        self.handle = handle
        self.prefix_bytes = 1 if max_parallelism <= 128 else 2  # computeRequiredBytesInKeyGroupPrefix
        meta = open_state_stream(handle.meta_state, files, 0, "RocksDB meta data")
        self.header = read_keyed_backend_header(meta.read(0, meta.size, "RocksDB meta data"))
        self.files = files
        self._snapshot: NativeSnapshot | None = None
        self._codecs = [StateCodec(state, self.header.key_serializer, resolve) for state in self.header.states]
        self.key_group_range = range(handle.start_key_group, handle.start_key_group + handle.number_of_key_groups)

    @property
    def snapshot(self) -> NativeSnapshot:
        """The RocksDB files, opened (CURRENT, the MANIFEST) when entries are first asked for: the header alone
        (which states the handle holds) reads only the meta-data file."""
        if self._snapshot is None:
            self._snapshot = NativeSnapshot(self.handle, self.files)
        return self._snapshot

    def _state_entries(self, codec: StateCodec, order: int) -> Iterator[tuple[int, int, KeyedStateEntry]]:
        """A state's entries as `entries()` merges them: (key group, the state's place, entry)."""
        canonical_entry = codec.canonical_entry
        for key_group, key, value in self.column_family_entries(codec.name):
            yield key_group, order, canonical_entry(key_group, key, value)

    def column_family_entries(self, name: str) -> Iterator[tuple[int, DataInput, DataInput]]:
        """Column family `name`'s merged entries in the handle's key groups: (key group, the key past its
        key-group prefix, the value)."""
        family = self.snapshot.column_family(name)
        if family is None:
            return
        prefix_bytes = self.prefix_bytes
        where = family.tables[0].path if family.tables else self.snapshot.manifest_name
        first, end = self.key_group_range.start, self.key_group_range.stop
        for user_key, value in merged(family.tables, family.merge_operator, f"column family {name!r}"):
            if len(user_key) < prefix_bytes:
                raise DataInput(user_key, where).error(
                    f"a key of column family {name!r} shorter than its key-group prefix"
                )
            key_group = user_key[0] if prefix_bytes == 1 else user_key[0] << 8 | user_key[1]
            if first <= key_group < end:
                key = DataInput(user_key, where)
                key.seek(prefix_bytes)
                yield key_group, key, DataInput(value, where)

    def _unnamed_entries(self, name: str, order: int) -> Iterator[tuple[int, int, KeyedStateEntry]]:
        """A column family the meta data names no serializers for (its meta info lies past a serializer snapshot
        this reader cannot step over): its keys and values as bytes, the key serializer's class named."""
        key_class = self.header.key_serializer.snapshot_class
        status = f"{RAW}: unknown: the meta data does not name column family {name!r}: {self.header.unread}"
        for key_group, key, value in self.column_family_entries(name):
            raw_key = Undecoded(key_class, key.read_bytes(key.remaining()))
            raw_value = Undecoded("unknown", value.read_bytes(len(value)))
            yield key_group, order, KeyedStateEntry(name, key_group, raw_key, None, None, raw_value, status)

    def entries(self) -> Iterator[KeyedStateEntry]:
        """Every entry, key group by key group, each column family merged lazily (a block per table in memory).
        When the meta data could not be read to its end, the column families it does not name follow as bytes."""
        streams = [self._state_entries(codec, order) for order, codec in enumerate(self._codecs)]
        if not self.header.meta_complete:
            named = {codec.name for codec in self._codecs} | {DEFAULT_COLUMN_FAMILY}
            for family in self.snapshot.manifest.column_families:
                if family.name not in named:
                    streams.append(self._unnamed_entries(family.name, len(streams)))
        # by key group, then by state (heapq.merge's order among equal keys), no key function called per entry
        return (entry for _, _, entry in heapq.merge(*streams))

    def key_groups(self) -> Iterator[tuple[int, tuple[KeyedStateEntry, ...]]]:
        """Each non-empty key group's number and entries, in key-group order."""
        for key_group, entries in groupby(self.entries(), key=lambda entry: entry.key_group):
            yield key_group, tuple(entries)
