"""Offset-set fingerprints: a cheap, exact-enough test that a bucket of the sink holds each expected offset once.

Each row contributes `g(offset + 1) - g(offset)`, with g = Spark's `xxhash64` (seed 42), split into the
difference of the high (signed) and of the low (unsigned) 32-bit halves so that Spark's long sums can never
overflow. Spark sums them per (topic, partition, bucket) with codegen'd aggregates only (no Python, no bitmap
objects), at close to the speed of a scan. Over the dense range first..last the sums telescope to
`g(last + 1) - g(first)`: the driver's expected fingerprint of a bucket costs two hashes (`range_fingerprint`),
whatever its size. Two multisets of offsets with equal counts and equal sums are the same but for a 64-bit hash
coincidence: their difference d(o) gives the sums a difference of sum over i of (d(i - 1) - d(i)) * g(i), whose
coefficients are all zero only when d is. Anything else sends the bucket to the exact bitmap pass.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from pyspark.sql import Column
from pyspark.sql import functions as F

SPARK_SEED = 42  # org.apache.spark.sql.catalyst.expressions.XxHash64 default seed
PRIME64_1 = np.uint64(0x9E3779B185EBCA87)
PRIME64_2 = np.uint64(0xC2B2AE3D27D4EB4F)
PRIME64_3 = np.uint64(0x165667B19E3779F9)
PRIME64_4 = np.uint64(0x85EBCA77C2B2AE63)
PRIME64_5 = np.uint64(0x27D4EB2F165667C5)
LOW_32 = 0xFFFFFFFF
INT64_MAX = (1 << 63) - 1


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


def fingerprint_sums(offset: Column) -> tuple[Column, Column]:
    """The two Spark aggregates of a group's fingerprint: sums of the high and low half differences.

    `try_add` keeps an offset of 2**63 - 1 from failing an ANSI session: its g(offset + 1) becomes the hash of
    null, which no dense range expects, so such a bucket goes to the exact pass.
    """
    after, at = F.xxhash64(F.try_add(offset, F.lit(1))), F.xxhash64(offset)
    high = F.sum(F.shiftright(after, 32) - F.shiftright(at, 32)).alias("hash_high")
    low = F.sum(after.bitwiseAND(LOW_32) - at.bitwiseAND(LOW_32)).alias("hash_low")
    return high, low


def range_fingerprints(
    first: npt.NDArray[np.int64], last: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The fingerprint sums of the dense ranges first..last (inclusive, element-wise), each offset once:
    g(last + 1) - g(first), by halves. Spark's g(offset + 1) of the largest long is xxhash64(null): the seed."""
    at = spark_xxhash64(first)
    with np.errstate(over="ignore"):
        after = np.where(last == INT64_MAX, np.int64(SPARK_SEED), spark_xxhash64(last + 1))
    return (after >> 32) - (at >> 32), (after & LOW_32) - (at & LOW_32)


def range_fingerprint(first: int, last: int) -> tuple[int, int]:
    """The fingerprint sums of the dense offsets first..last, each once (`range_fingerprints` of one range)."""
    high, low = range_fingerprints(np.array([first], dtype=np.int64), np.array([last], dtype=np.int64))
    return int(high[0]), int(low[0])
