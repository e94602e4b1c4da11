"""Offset bitmaps: the compact form in which the sink audit counts and names the offsets of suspect buckets.

Offsets of one (topic, partition) fall in buckets of 32,768 (`offset >> 15`). Spark builds a bucket's bitmap with
`bitmap_construct_agg(offset & 32767)`: 4,096 bytes with bit `o & 32767` at byte `bit // 8`, bit `bit % 8`
(little bit order). The driver decodes the few bitmaps it fetches with numpy, to name missing and unexpected
offsets as runs.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

BUCKET_BITS = 15
BUCKET_SIZE = 1 << BUCKET_BITS  # 32,768 offsets

BucketKey = tuple[str, int, int]  # (topic, partition, bucket)


def bitmap_bits(bitmap: bytes | None) -> npt.NDArray[np.bool_]:
    """One bucket's bitmap as BUCKET_SIZE booleans (all False for None: no offset of that side there)."""
    if bitmap is None:
        return np.zeros(BUCKET_SIZE, dtype=np.bool_)
    return np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little").astype(np.bool_)


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
