"""Fuzzing of the RocksDB reader (splitaudit/savepoint/rocksdb/): the NATIVE savepoints and full RocksDB checkpoints
of fixtures/keyed/, their SST, MANIFEST and CURRENT files mutated, read whole by `inspect_savepoint` and
`read_keyed_state` under tests/fuzz_savepoints.py's harness (worker processes with an address-space limit, a time
limit per case, no network, no process start, no read outside the case's directory).

    .venv/bin/python -m tests.fuzz_rocksdb --seconds 60

Mutations, one per case, of a fresh copy of one snapshot; most re-seal what they change with its checksum, so the
parsers behind the checksums are reached, not only the checksum checks:

- `block`: 1-4 bytes XORed inside one block of an SST file (data, index, metaindex, properties), its trailer's
  checksum recomputed;
- `varint`: 1-5 bytes inside one block set to 0xFF (a varint that never ends, or an absurd length), resealed;
- `trailer`: a block's compression type byte set to another type (0-7, 0x40, or unknown), resealed;
- `footer`: 1-4 bytes of an SST file's footer XORed (its handles, format version, checksum type, magic);
- `record`: 1-4 bytes XORed inside one MANIFEST record's payload (a VersionEdit), the record's CRC recomputed;
- `flip`: 1-8 bytes of an SST or MANIFEST file XORed where they fall (checksums catch them);
- `truncate`: an SST, MANIFEST or CURRENT file cut short;
- `current`: CURRENT rewritten (another MANIFEST number, no newline, a path).
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.handles import IncrementalRemoteKeyedStateHandle, RelativeFileStateHandle
from splitaudit.savepoint.metadata import read_metadata
from splitaudit.savepoint.rocksdb.checksum import block_checksum, masked_crc32c
from splitaudit.savepoint.rocksdb.footer import BlockHandle
from splitaudit.savepoint.rocksdb.log import BLOCK_SIZE, HEADER_BYTES
from splitaudit.savepoint.rocksdb.table import BlockBasedTable
from tests.fuzz_savepoints import FIXTURES, main, read_case
from tests.unit.savepoint.rocksdb.local import LocalFile

STRATEGIES = ("block", "varint", "trailer", "footer", "record", "flip", "truncate", "current")
COMPRESSION_TYPES = (0, 1, 2, 3, 4, 5, 6, 7, 0x40, 0x99)


def corpus() -> list[Path]:
    """The snapshot directories of fixtures/keyed/ whose RocksDB files lie beside `_metadata`."""
    return sorted(
        metadata.parent
        for pattern in ("*-rocksdb-savepoint-native", "*-rocksdb-checkpoint-full-files")
        for metadata in FIXTURES.glob(f"keyed/{pattern}/*/_metadata")
    )


def rocksdb_files(snapshot: Path) -> dict[str, list[Path]]:
    """The snapshot's RocksDB files by kind (`sst`, `manifest`, `current`), from its handles."""
    files = SavepointFiles(str(snapshot))
    metadata = read_metadata(files.read_metadata(), files.metadata_path)
    found: dict[str, list[Path]] = {"sst": [], "manifest": [], "current": []}
    for operator in metadata.operators:
        for subtask in operator.subtask_states:
            handle = subtask.managed_keyed_state
            if not isinstance(handle, IncrementalRemoteKeyedStateHandle):
                continue
            for name, stream, _ in (*handle.shared, *handle.private):
                if not isinstance(stream, RelativeFileStateHandle):
                    continue
                kind = "sst" if name.endswith(".sst") else name.split("-")[0].lower()
                if kind in found:
                    found[kind].append(snapshot / stream.relative_path)
    return found


def _blocks(path: Path) -> tuple[int, list[BlockHandle]]:
    """The table's checksum type and every block it has (metaindex, index, meta and data blocks)."""
    table = BlockBasedTable(LocalFile(path))
    blocks = [table.footer.metaindex, table.footer.index, *table.meta_blocks.values(), *table.data_handles()]
    return table.footer.checksum_type, blocks


def _reseal(data: bytearray, checksum_type: int, handle: BlockHandle) -> None:
    """Recompute the checksum in the trailer of the block at `handle`."""
    end = handle.offset + handle.size
    if checksum_type:
        value = block_checksum(checksum_type, bytes(data[handle.offset : end]), data[end])
        data[end + 1 : end + 5] = value.to_bytes(4, "little")


def _records(data: bytes) -> list[tuple[int, int]]:
    """(header offset, payload length) of every MANIFEST record."""
    found = []
    for block in range(0, len(data), BLOCK_SIZE):
        at = block
        while at + HEADER_BYTES <= min(block + BLOCK_SIZE, len(data)):
            length = int.from_bytes(data[at + 4 : at + 6], "little")
            if data[at + 6] == 0:
                break
            found.append((at, length))
            at += HEADER_BYTES + length
    return found


def mutate(rng: random.Random, strategy: str, files: dict[str, list[Path]]) -> str:
    """Apply one mutation of `strategy` to the case's files; describe it."""
    if strategy in ("block", "varint", "trailer", "footer") and files["sst"]:
        path = rng.choice(files["sst"])
        data = bytearray(path.read_bytes())
        checksum_type, blocks = _blocks(path)
        if strategy == "footer":
            for _ in range(rng.randint(1, 4)):
                data[len(data) - 1 - rng.randrange(min(53, len(data)))] ^= rng.randint(1, 255)
            path.write_bytes(bytes(data))
            return f"footer of {path.name}"
        handle = rng.choice([b for b in blocks if b.size])
        if strategy == "trailer":
            data[handle.offset + handle.size] = rng.choice(COMPRESSION_TYPES)
        else:
            for _ in range(rng.randint(1, 4 if strategy == "block" else 1)):
                at = handle.offset + rng.randrange(handle.size)
                if strategy == "block":
                    data[at] ^= rng.randint(1, 255)
                else:
                    width = min(rng.randint(1, 5), handle.offset + handle.size - at)
                    data[at : at + width] = b"\xff" * width
        _reseal(data, checksum_type, handle)
        path.write_bytes(bytes(data))
        return f"{strategy} in the block at {handle.offset} of {path.name}"
    if strategy == "record" and files["manifest"]:
        path = rng.choice(files["manifest"])
        data = bytearray(path.read_bytes())
        records = [r for r in _records(bytes(data)) if r[1]]
        at, length = rng.choice(records)
        for _ in range(rng.randint(1, 4)):
            data[at + HEADER_BYTES + rng.randrange(length)] ^= rng.randint(1, 255)
        crc = masked_crc32c(bytes(data[at + 6 : at + HEADER_BYTES + length]))
        data[at : at + 4] = crc.to_bytes(4, "little")
        path.write_bytes(bytes(data))
        return f"record at {at} of {path.name}"
    if strategy == "current" and files["current"]:
        path = rng.choice(files["current"])
        path.write_bytes(rng.choice((b"MANIFEST-999999\n", b"MANIFEST-000004", b"../../etc/passwd\n", b"\n", b"")))
        return f"current {path.name}"
    victims = files["sst"] + files["manifest"] + (files["current"] if strategy == "truncate" else [])
    path = rng.choice(victims)
    data = bytearray(path.read_bytes())
    if strategy == "truncate" or not data:
        cut = rng.randrange(len(data)) if data else 0
        path.write_bytes(bytes(data[:cut]))
        return f"truncate {path.name} at {cut}"
    for _ in range(rng.randint(1, 8)):
        data[rng.randrange(len(data))] ^= rng.randint(1, 255)
    path.write_bytes(bytes(data))
    return f"flip {path.name}"


def run_case(case_dir: Path, seed: int, case_seconds: float) -> tuple[str, str, str]:
    """(strategy, outcome, detail) of one case, as tests/fuzz_savepoints.py's."""
    rng = random.Random(seed)
    strategy = rng.choice(STRATEGIES)
    source = rng.choice(corpus())
    shutil.rmtree(case_dir, ignore_errors=True)
    shutil.copytree(source, case_dir, symlinks=True)
    described = mutate(rng, strategy, rocksdb_files(case_dir))
    outcome, detail = read_case(case_dir, case_seconds)
    return strategy, outcome, f"{source.relative_to(FIXTURES)}: {described}: {detail}"


if __name__ == "__main__":
    raise SystemExit(main(run_case, __doc__))
