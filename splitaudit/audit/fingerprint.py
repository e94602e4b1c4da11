"""Offset-set fingerprints: a cheap, exact-enough test that a bucket of the sink holds each expected offset once.

Spark computes, per (topic, partition, bucket), the row count and the sums of the high and low 32-bit halves of
`xxhash64(offset)` with codegen'd aggregates only (no Python, no bitmap objects), at close to the speed of a
scan. The driver computes the same sums over the offsets the bucket should hold, with `spark_xxhash64` below (a
numpy copy of Spark's `XXH64.hashLong`, seed 42). Equal counts and equal sums mean the bucket holds exactly those
offsets, once each, but for a 64-bit hash collision; anything else sends the bucket to the exact bitmap pass.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

SPARK_SEED = 42  # org.apache.spark.sql.catalyst.expressions.XxHash64 default seed
PRIME64_1 = np.uint64(0x9E3779B185EBCA87)
PRIME64_2 = np.uint64(0xC2B2AE3D27D4EB4F)
PRIME64_3 = np.uint64(0x165667B19E3779F9)
PRIME64_4 = np.uint64(0x85EBCA77C2B2AE63)
PRIME64_5 = np.uint64(0x27D4EB2F165667C5)
LOW_32 = np.uint64(0xFFFFFFFF)


def _rotl(value: npt.NDArray[np.uint64], bits: int) -> npt.NDArray[np.uint64]:
    return (value << np.uint64(bits)) | (value >> np.uint64(64 - bits))


def spark_xxhash64(values: npt.NDArray[np.int64], seed: int = SPARK_SEED) -> npt.NDArray[np.int64]:
    """`xxhash64(col)` of Spark for a bigint column: XXH64.hashLong(value, seed), element-wise."""
    with np.errstate(over="ignore"):
        start = np.uint64(seed) + PRIME64_5 + np.uint64(8)
        mixed = _rotl(values.astype(np.int64).view(np.uint64) * PRIME64_2, 31) * PRIME64_1
        hashed = _rotl(start ^ mixed, 27) * PRIME64_1 + PRIME64_4
        hashed ^= hashed >> np.uint64(33)
        hashed *= PRIME64_2
        hashed ^= hashed >> np.uint64(29)
        hashed *= PRIME64_3
        hashed ^= hashed >> np.uint64(32)
    return hashed.view(np.int64)


def range_fingerprint(first: int, last: int, chunk: int = 1 << 22) -> tuple[int, int]:
    """Sums of the high (signed) and low (unsigned) 32-bit halves of xxhash64 over first..last, in chunks."""
    high = low = 0
    for start in range(first, last + 1, chunk):
        hashed = spark_xxhash64(np.arange(start, min(last, start + chunk - 1) + 1, dtype=np.int64))
        high += int((hashed >> np.int64(32)).sum())
        low += int((hashed.view(np.uint64) & LOW_32).sum(dtype=np.uint64))
    return high, low
