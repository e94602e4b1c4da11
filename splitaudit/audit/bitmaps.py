"""Offset bitmaps: one bucket's offsets as booleans, the form in which pass 2 counts and names the offsets of a
suspect bucket (`bucket_offsets`).

Offsets of one (topic, partition) fall in buckets of 32,768 (`offset >> 15`); offset o is position
`o & 32767` of its bucket's array.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

BUCKET_BITS = 15
BUCKET_SIZE = 1 << BUCKET_BITS  # 32,768 offsets

BucketKey = tuple[str, int, int]  # (topic, partition, bucket)
OffsetSpan = tuple[int, int]  # first and last offset, inclusive


def span_bits(bucket: int, start: int, end: int) -> npt.NDArray[np.bool_]:
    """The offsets start..end (inclusive, within `bucket`) as BUCKET_SIZE booleans: a dense expectation."""
    bits = np.zeros(BUCKET_SIZE, dtype=np.bool_)
    base = bucket * BUCKET_SIZE
    bits[start - base : end - base + 1] = True
    return bits


def offset_runs(bucket: int, bits: npt.NDArray[np.bool_]) -> list[tuple[int, int]]:
    """Inclusive runs of the offsets of `bucket` whose bit is set (e.g. expected AND NOT held: missing runs)."""
    present = np.flatnonzero(bits) + bucket * BUCKET_SIZE
    if len(present) == 0:
        return []
    breaks = np.flatnonzero(np.diff(present) != 1)
    firsts = np.concatenate(([present[0]], present[breaks + 1]))
    lasts = np.concatenate((present[breaks], [present[-1]]))
    return [(int(a), int(b)) for a, b in zip(firsts, lasts, strict=True)]
