"""How fast the RocksDB reader (splitaudit/savepoint/rocksdb/) scans tables RocksDB itself wrote, and what it holds.

    .venv/bin/python benchmarks/rocksdb_scan.py [--keys 250000] [--flushes 4] [--repeat 3]

A database is written once with rocksdict (RocksDB's own engine; the `dev` extra) under a temporary folder: FRocksDB's
Flink settings where rocksdict has them (format_version 5, CRC-32C, Snappy), `--flushes` tables, each of `--keys`
keys overlapping the previous table's by 60 %, so the merge resolves newer versions over older ones. Its tables are
then read through the state-file seam (`SavepointFiles` and `StateStream`, as a snapshot's are) and merged by
sequence number (`merged`): the best of `--repeat` timed scans, then one more under tracemalloc for the peak of
Python allocations. The keys the scan returns must be exactly RocksDB's own count. The baseline, timed in the same
run and interleaved with the scans: RocksDB's own engine (rocksdict, C++) iterating every key and value of the same
database read-only into Python bytes; the ratio is the reader's time over it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import rocksdict  # noqa: E402

from splitaudit.savepoint.fileio import SavepointFiles  # noqa: E402
from splitaudit.savepoint.handles import RelativeFileStateHandle  # noqa: E402
from splitaudit.savepoint.rocksdb.manifest import read_manifest  # noqa: E402
from splitaudit.savepoint.rocksdb.merge import merged  # noqa: E402
from splitaudit.savepoint.rocksdb.table import BlockBasedTable  # noqa: E402
from splitaudit.savepoint.streams import StateStream  # noqa: E402


def write(path: Path, keys: int, flushes: int) -> int:
    """The database; returns how many keys RocksDB itself reads back."""
    table = rocksdict.BlockBasedOptions()
    table.set_format_version(5)
    table.set_checksum_type(rocksdict.ChecksumType.crc32c())
    options = rocksdict.Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_compression_type(rocksdict.DBCompressionType.snappy())
    options.set_block_based_table_factory(table)
    options.set_disable_auto_compactions(True)
    db = rocksdict.Rdict(str(path), options)
    step = keys * 2 // 5
    for flush in range(flushes):
        for i in range(flush * step, flush * step + keys):
            db[b"\x00\x01" + i.to_bytes(8, "big")] = b"v" * 20 + flush.to_bytes(8, "big")
        db.flush()
    count = sum(1 for _ in db.items())
    db.close()
    return count


def scan(path: Path) -> int:
    """Every live key of every column family, merged, through the state-file seam."""
    files = SavepointFiles(str(path))
    name = (path / "CURRENT").read_text().strip()
    manifest = read_manifest(StateStream(RelativeFileStateHandle(name, (path / name).stat().st_size), files, 0), name)
    count = 0
    for family in manifest.column_families:
        live = sorted(family.files.values(), key=lambda meta: -meta.largest_sequence)
        tables = [BlockBasedTable(StateStream(RelativeFileStateHandle(m.file_name, m.size), files, 0)) for m in live]
        for _ in merged(tables, None, family.name):
            count += 1
    return count


def baseline(path: Path) -> int:
    """Every live key and value, read by RocksDB itself (rocksdict, read-only) into Python bytes."""
    options = rocksdict.Options(raw_mode=True)
    db = rocksdict.Rdict(str(path), options, access_type=rocksdict.AccessType.read_only())
    count = sum(1 for _ in db.items())
    db.close()
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=250_000, help="keys written per table")
    parser.add_argument("--flushes", type=int, default=4, help="tables written")
    parser.add_argument("--repeat", type=int, default=3, help="timed scans (the best is shown)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="splitaudit-rocksdb-scan-") as folder:
        path = Path(folder) / "db"
        expected = write(path, args.keys, args.flushes)
        size = sum(p.stat().st_size for p in path.glob("*.sst"))
        best = engine = float("inf")
        for _ in range(args.repeat):
            started = time.perf_counter()
            count = scan(path)
            best = min(best, time.perf_counter() - started)
            if count != expected:
                raise SystemExit(f"the scan returned {count} keys, RocksDB {expected}")
            started = time.perf_counter()
            baseline(path)
            engine = min(engine, time.perf_counter() - started)
        tracemalloc.start()
        scan(path)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    versions = args.keys * args.flushes
    print(
        f"{size / 1e6:.1f} MB of SST in {args.flushes} tables, {versions:,} versions of {expected:,} keys: "
        f"best of {args.repeat} {best:.2f} s, {expected / best:,.0f} keys/s, peak {peak / 1e6:.1f} MB (tracemalloc); "
        f"RocksDB's own iteration {engine:.2f} s, {expected / engine:,.0f} keys/s: {best / engine:.1f}x its time"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
