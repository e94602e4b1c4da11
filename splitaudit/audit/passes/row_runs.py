"""Rows as runs: a batch of rows cut into runs of consecutive offsets that share a key (topic, partition, and the
lineage columns), as pass 1 and pass 2 both take the sink's rows.

A run first..last of one key stands for one row of each offset between, all with that key's values: a reader
writes a partition's records in offset order, so a streaming job's batch holds a few runs per partition and
reader, and a twin reader or a replay adds a few more however many rows it re-reads. `batch_runs` gives them as a
small Arrow table, one row per run piece (runs are cut at bucket edges, `offset_runs`), with the key's values;
everything after it (`bucket_offsets`) is per run, never per row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from splitaudit.audit.passes.offset_runs import Int64s, Keys, RunPieces, run_pieces

FIRST, LAST, BUCKET = "first", "last", "bucket"  # a run piece's columns, besides its key's
SMALL_RANGE = 1 << 12  # integer columns spanning fewer values are numbered by value, not by a hash table


def batch_runs(batch: pa.RecordBatch | pa.Table, keys: list[str], offset: str = "offset") -> pa.Table:
    """The run pieces of a batch whose `offset` column has no null and no negative value: per piece the values
    of the `keys` columns, its bucket and its first and last offset. The rows are taken in offset order within
    each key, so rows that came in any order (a join's, a shuffle's) make the fewest runs."""
    offsets = np.asarray(batch.column(offset).to_numpy(zero_copy_only=False), dtype=np.int64)
    pieces = run_pieces(key_codes([batch.column(name) for name in keys]), offsets, by_offset=True)
    return pieces_table(batch.select(keys), pieces)


def pieces_table(key_values: pa.RecordBatch | pa.Table, pieces: RunPieces) -> pa.Table:
    """Run pieces as a table: the key columns' values at each piece's first row, its bucket, first and last."""
    taken = pa.Table.from_batches([key_values]) if isinstance(key_values, pa.RecordBatch) else key_values
    taken = taken.take(pa.array(pieces.row))
    for name, values in ((BUCKET, pieces.bucket), (FIRST, pieces.first), (LAST, pieces.last)):
        taken = taken.append_column(name, pa.array(values, pa.int64()))
    return taken


def key_codes(columns: list[pa.Array | pa.ChunkedArray]) -> Keys | None:
    """Each row's values of these columns as one small non-negative integer (equal values, equal numbers; a null
    is a value of its own), int16 where they fit (numpy sorts those by radix); None when every row has the same
    values."""
    code = np.zeros(len(columns[0]) if columns else 0, dtype=np.int64)
    size = 1
    for column in columns:
        indices, count = codes(column)
        if count > 1:
            code = code * count + indices
            size *= count
            if size >= 1 << 62:  # renumber before the mixed radix could overflow
                code, size = _renumbered(code)
    if size == 1:
        return None
    if size >= 1 << 15:
        code, size = _renumbered(code)
    return code.astype(np.int16) if size < 1 << 15 else code


def codes(column: pa.Array | pa.ChunkedArray) -> tuple[Int64s, int]:
    """A column's values as numbers 0..count - 1 (a null is one of them; some numbers may stand for no value),
    and count: a dictionary column's own indices where it has no null, an integer column's value less its least
    where they span fewer than SMALL_RANGE values."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(array.type) and not array.null_count:
        indices = np.asarray(array.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        return indices, max(len(array.dictionary), 1)
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_integer(array.type) and not array.null_count and len(array):
        values = np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.int64)
        least, most = int(values.min()), int(values.max())
        if most - least < SMALL_RANGE:  # a partition, an attempt: the value less the least, no hashing
            return values - least, most - least + 1
    encoded = pc.dictionary_encode(array, null_encoding="encode")
    return np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64), max(len(encoded.dictionary), 1)


def _renumbered(code: Int64s) -> tuple[Int64s, int]:
    """The codes renumbered 0..distinct - 1 (in order of first appearance), and distinct."""
    encoded = pc.dictionary_encode(pa.array(code))
    return np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64), len(encoded.dictionary)
