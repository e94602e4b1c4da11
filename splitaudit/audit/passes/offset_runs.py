"""Pass 1's per-row work as a vectorised scan: runs of consecutive offsets, summed per bucket, with numpy.

A batch of rows (a small integer key per row, standing for its (topic, partition), and its offset) is cut into
runs: maximal stretches, in the order the rows came within each key, of offsets that go up by exactly one. A run
first..last holds each of those offsets once, so its rows, extremes and fingerprint (`fingerprint`: the sums
telescope to g(last + 1) - g(first)) follow from its two ends: two hashes per run, none per row. A Kafka
partition's records reach a file in offset order, so a file holds a few runs per partition however its
partitions interleave; duplicates and gaps only add runs. Runs are cut at bucket edges and summed per (key,
bucket): the same rows, first and last offsets and fingerprint sums that Spark's grouped aggregate of pass 1
gives (`pass_one.bucket_stats`), for any order of rows, only cheaper when rows come in runs.

The per-row work is a stable sort by key (a radix sort; none when the batch holds one key), a difference and a
comparison; everything after it is per run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from splitaudit.audit.passes.bitmaps import BUCKET_BITS
from splitaudit.audit.passes.fingerprint import range_fingerprints

Int64s = npt.NDArray[np.int64]
Int32s = npt.NDArray[np.int32]
Keys = npt.NDArray[np.int16] | Int32s | Int64s  # int16 keys are sorted by radix, in linear time


@dataclass(frozen=True)
class BucketSums:
    """Per (key, bucket), in key then bucket order: what pass 1 knows of a bucket, as parallel arrays."""

    key: Int64s
    bucket: Int64s
    rows: Int64s
    first: Int64s
    last: Int64s
    hash_high: Int64s
    hash_low: Int64s

    def __len__(self) -> int:
        return len(self.key)


@dataclass(frozen=True)
class RunPieces:
    """Runs of consecutive offsets cut at bucket edges: per piece, the row (in the order the rows came) of its
    run's first row, its bucket and its first and last offset."""

    row: Int64s
    bucket: Int64s
    first: Int64s
    last: Int64s

    def __len__(self) -> int:
        return len(self.row)


def run_pieces(keys: Keys | None, offsets: Int64s, *, by_offset: bool = False) -> RunPieces:
    """The runs of rows with these keys (small non-negative integers; None: every row has key 0) and these
    non-negative offsets, in the order the rows came within each key (`by_offset`: in offset order, so that rows
    that came in any order make the fewest runs, at the cost of a sort), cut at bucket edges."""
    if len(offsets) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return RunPieces(empty, empty, empty, empty)
    key_ends = np.array([len(offsets)])
    order = None
    if keys is not None:
        order, key_ends = _by_key(keys)
    if by_offset:
        order = np.argsort(offsets, kind="stable") if keys is None else np.lexsort((offsets, keys))
    if order is not None:
        offsets = offsets[order]
    breaks = np.empty(len(offsets), dtype=np.bool_)
    breaks[0] = True
    np.not_equal(np.diff(offsets), 1, out=breaks[1:])
    breaks[key_ends[:-1]] = True
    starts = np.flatnonzero(breaks)
    ends = np.append(starts[1:] - 1, len(offsets) - 1)
    rows = starts if order is None else order[starts]
    return RunPieces(*_cut_at_buckets(rows.astype(np.int64), offsets[starts], offsets[ends]))


def bucket_sums(keys: Keys | None, offsets: Int64s) -> BucketSums:
    """The pass-1 sums per (key, bucket) of rows with these keys (small non-negative integers; None: every row
    has key 0) and these non-negative offsets, in the order the rows came."""
    pieces = run_pieces(keys, offsets)
    return piece_sums(np.zeros(len(pieces), dtype=np.int64) if keys is None else keys[pieces.row], pieces)


def piece_sums(key: Keys, pieces: RunPieces) -> BucketSums:
    """The pass-1 sums per (key, bucket) of run pieces, `key` per piece: a run holds each of its offsets once,
    so its fingerprint is that of its range."""
    if len(pieces) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return BucketSums(empty, empty, empty, empty, empty, empty, empty)
    high, low = range_fingerprints(pieces.first, pieces.last)
    first, last = pieces.first, pieces.last
    return _summed(key.astype(np.int64), pieces.bucket, last - first + 1, first, last, high, low)


def _by_key(keys: Keys) -> tuple[Int64s | None, Int64s]:
    """The order that groups rows by key, each key's in the order they came (a radix sort for int16 keys; None
    when there is one key), and where each key's rows end: key k's rows are those before key_ends[k] and from
    key_ends[k - 1] on."""
    key_ends = np.cumsum(np.bincount(keys))
    if len(key_ends) == 1:
        return None, key_ends
    return np.argsort(keys, kind="stable"), key_ends


def _cut_at_buckets(row: Int64s, first: Int64s, last: Int64s) -> tuple[Int64s, Int64s, Int64s, Int64s]:
    """Runs that cross a bucket edge cut into one piece per bucket: (row, bucket, first, last) per piece."""
    first_bucket, last_bucket = first >> BUCKET_BITS, last >> BUCKET_BITS
    pieces = last_bucket - first_bucket + 1
    if bool(np.all(pieces == 1)):
        return row, first_bucket, first, last
    run = np.repeat(np.arange(len(first)), pieces)
    within = np.arange(len(run)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    bucket = first_bucket[run] + within
    start = np.maximum(first[run], bucket << BUCKET_BITS)
    end = np.minimum(last[run], ((bucket + 1) << BUCKET_BITS) - 1)
    return row[run], bucket, start, end


def _summed(key: Int64s, bucket: Int64s, *values: Int64s) -> BucketSums:
    """Pieces summed per (key, bucket): rows and hashes added, first the least, last the greatest."""
    order = np.lexsort((bucket, key))
    key, bucket = key[order], bucket[order]
    rows, first, last, high, low = (v[order] for v in values)
    starts = np.flatnonzero(np.append(True, (key[1:] != key[:-1]) | (bucket[1:] != bucket[:-1])))
    with np.errstate(over="ignore"):
        return BucketSums(
            key[starts],
            bucket[starts],
            np.add.reduceat(rows, starts),
            np.minimum.reduceat(first, starts),
            np.maximum.reduceat(last, starts),
            np.add.reduceat(high, starts),
            np.add.reduceat(low, starts),
        )
