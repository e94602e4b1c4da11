"""A pure-Python reader of RocksDB's own files as Flink's RocksDB state backend snapshots them natively
(incremental and full checkpoints, NATIVE savepoints): block-based SST files, the MANIFEST, their merge by
sequence number, and Flink's layout of keyed state on top. Modules are named after the RocksDB structures they
decode; layouts: splitaudit/savepoint/FORMAT.md, "RocksDB native snapshots"."""
