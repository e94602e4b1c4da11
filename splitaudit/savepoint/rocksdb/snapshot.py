"""The RocksDB instance behind one `IncrementalRemoteKeyedStateHandle` (an incremental or full RocksDB checkpoint,
or a NATIVE savepoint): its files by their local names in RocksDB's directory, `CURRENT` naming the MANIFEST,
the MANIFEST's live column families and tables.

The handle lists `shared` files (SST files an incremental checkpoint may share with earlier ones, under the
checkpoint's `shared/` folder or, in a savepoint, beside `_metadata`) and `private` ones (`CURRENT`, `MANIFEST-N`,
`OPTIONS-N`, and in savepoints the SST files too). `OPTIONS-N` is read only when asked for. Every file is read
through its state handle (`savepoint/streams.py`), so `SavepointFiles` confines it; a live table the handle does
not list, or a MANIFEST `CURRENT` does not name, is an error naming the file. Flink snapshots RocksDB after a flush
with its WAL disabled (`RocksDBIncrementalSnapshotStrategy`, `Checkpoint.createCheckpoint`): the tables hold
everything, and a `.log` file, if listed, is not needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from splitaudit.errors import InputError
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import IncrementalRemoteKeyedStateHandle, StreamStateHandle
from splitaudit.savepoint.rocksdb.dbformat import COMPARATOR
from splitaudit.savepoint.rocksdb.manifest import ColumnFamily, Manifest, read_manifest
from splitaudit.savepoint.rocksdb.options import MAX_OPTIONS_BYTES, Options, read_options
from splitaudit.savepoint.rocksdb.table import BlockBasedTable
from splitaudit.savepoint.streams import StateStream, open_state_stream

CURRENT = "CURRENT"
MAX_CURRENT_BYTES = 4096


@dataclass(frozen=True)
class ColumnFamilyTables:
    """A live column family and its live tables, newest first (level 0 by largest sequence, then levels)."""

    family: ColumnFamily
    tables: tuple[BlockBasedTable, ...]
    merge_operator: str | None


class NativeSnapshot:
    """The files of one native RocksDB snapshot handle, opened on demand."""

    def __init__(self, handle: IncrementalRemoteKeyedStateHandle, files: SavepointFiles) -> None:
        self.handle = handle
        self.files = files
        self.by_name: dict[str, tuple[StreamStateHandle, int]] = {}
        for name, stream, at in (*handle.shared, *handle.private):
            self.by_name[name.rsplit("/", 1)[-1]] = (stream, at)
        current = self.stream(CURRENT)
        if current.size > MAX_CURRENT_BYTES:
            raise self._error(f"its CURRENT file has {current.size} bytes")
        data = current.read(0, current.size, "CURRENT")
        text = data.read_bytes(current.size).decode("ascii", "replace")
        manifest_name = text.rstrip("\n")
        if not text.endswith("\n") or not manifest_name.startswith("MANIFEST-") or "/" in manifest_name:
            raise data.error(f"CURRENT does not name a MANIFEST: {text!r}", 0)
        self.manifest_name = manifest_name
        self.manifest: Manifest = read_manifest(self.stream(manifest_name), manifest_name)

    def _error(self, message: str) -> InputError:
        return InputError(
            self.files.metadata_path,
            None,
            f"RocksDB snapshot of backend {self.handle.backend_id!r} (checkpoint {self.handle.checkpoint_id}): "
            f"{message}",
        )

    def read_options(self) -> Options | None:
        """The newest `OPTIONS-N` the handle lists (None if none): the RocksDB release and each column family's
        settings. Not needed to read the state (the MANIFEST and the tables' properties say what the merge needs),
        so not read unless asked: an incremental checkpoint keeps it in `shared/` with the SST files."""
        numbered = [n for n in self.by_name if n.startswith("OPTIONS-") and n[8:].isdigit()]
        if not numbered:
            return None
        latest = self.stream(max(numbered, key=lambda n: int(n[8:])))
        if latest.size > MAX_OPTIONS_BYTES:
            raise self._error(f"its OPTIONS file has {latest.size} bytes")
        return read_options(latest.read(0, latest.size, "OPTIONS"))

    def stream(self, name: str) -> StateStream:
        """The stream of the file RocksDB calls `name`."""
        listed = self.by_name.get(name)
        if listed is None:
            raise self._error(f"the handle lists no file {name!r} (it lists {len(self.by_name)} files)")
        handle, at = listed
        return open_state_stream(handle, self.files, at, f"RocksDB file {name}")

    def column_family(self, name: str) -> ColumnFamilyTables | None:
        """The live column family `name` and its tables, or None when the MANIFEST has none of that name."""
        family = next((f for f in self.manifest.column_families if f.name == name), None)
        if family is None:
            return None
        if family.comparator not in (None, COMPARATOR):
            raise self._error(f"column family {name!r} sorts with {family.comparator!r}, not {COMPARATOR}")
        live = sorted(family.files.values(), key=lambda f: (f.level, -f.largest_sequence if f.level == 0 else 0))
        tables = []
        merge_operator: str | None = None
        for meta in live:
            table = BlockBasedTable(self.stream(meta.file_name))
            props = table.properties
            if props.column_family_name not in (None, name):
                raise InputError(table.path, None, f"a table of {props.column_family_name!r} listed for {name!r}")
            merge_operator = props.merge_operator or merge_operator
            tables.append(table)
        return ColumnFamilyTables(family, tuple(tables), merge_operator)
