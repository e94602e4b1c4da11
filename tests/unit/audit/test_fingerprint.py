"""The numpy copy of Spark's xxhash64 agrees with Spark, so driver-side fingerprints match Spark's sums."""

from __future__ import annotations

import numpy as np

from splitaudit.audit.fingerprint import range_fingerprint, spark_xxhash64

# Printed by Spark 4.3.0: SELECT xxhash64(o) for o in (0, 1, 2, -5, 2^40), and for id in range(1000, 70001):
# SELECT sum(shiftright(xxhash64(id), 32)), sum(xxhash64(id) & 0xFFFFFFFF)
SPARK_HASHES = {
    0: -5252525462095825812,
    1: -7001672635703045582,
    2: -3341702809300393011,
    -5: -5259934538394028452,
    2**40: 1821704621099523357,
}
SPARK_RANGE_1000_70000 = (205505351708, 147528071505993)


def test_hashes_equal_sparks() -> None:
    values = np.array(list(SPARK_HASHES), dtype=np.int64)
    assert spark_xxhash64(values).tolist() == list(SPARK_HASHES.values())


def test_range_fingerprint_equals_sparks_sums_whatever_the_chunking() -> None:
    assert range_fingerprint(1000, 70000) == SPARK_RANGE_1000_70000
    assert range_fingerprint(1000, 70000, chunk=777) == SPARK_RANGE_1000_70000


def test_a_duplicate_and_a_gap_change_the_fingerprint() -> None:
    offsets = np.arange(100, dtype=np.int64)
    tampered = offsets.copy()
    tampered[10] = 11  # 11 twice, 10 missing: same count
    hashed, tampered_hashed = spark_xxhash64(offsets), spark_xxhash64(tampered)
    assert int((hashed >> 32).sum()) == range_fingerprint(0, 99)[0]
    assert int((tampered_hashed >> 32).sum()) != range_fingerprint(0, 99)[0]
