"""The numpy copy of Spark's xxhash64 agrees with Spark, so driver-side fingerprints match Spark's sums."""

from __future__ import annotations

import numpy as np

from splitaudit.audit.passes.fingerprint import LOW_32, range_fingerprint, spark_xxhash64

# Printed by Spark 4.3.0: SELECT xxhash64(o) for o in (0, 1, 2, -5, 2^40), and for id in range(1000, 70001):
# SELECT sum(shiftright(xxhash64(id + 1), 32) - shiftright(xxhash64(id), 32)),
#        sum((xxhash64(id + 1) & 4294967295) - (xxhash64(id) & 4294967295)); the same with try_add for the last
# two longs (2^63 - 2, 2^63 - 1), whose xxhash64(try_add(id, 1)) is the hash of null
SPARK_HASHES = {
    0: -5252525462095825812,
    1: -7001672635703045582,
    2: -3341702809300393011,
    -5: -5259934538394028452,
    2**40: 1821704621099523357,
}
SPARK_RANGE_1000_70000 = (-1164787887, 2736018092)
SPARK_RANGE_TOP = (831268798, -3143169693)


def test_hashes_equal_sparks() -> None:
    values = np.array(list(SPARK_HASHES), dtype=np.int64)
    assert spark_xxhash64(values).tolist() == list(SPARK_HASHES.values())


def test_range_fingerprint_equals_sparks_sums() -> None:
    assert range_fingerprint(1000, 70000) == SPARK_RANGE_1000_70000
    assert range_fingerprint(2**63 - 2, 2**63 - 1) == SPARK_RANGE_TOP


def _sums(offsets: list[int]) -> tuple[int, int]:
    """The fingerprint sums as Spark computes them, row by row, for offsets below 2^63 - 1."""
    values = np.array(offsets, dtype=np.int64)
    after, at = spark_xxhash64(values + 1), spark_xxhash64(values)
    return int(((after >> 32) - (at >> 32)).sum()), int(((after & LOW_32) - (at & LOW_32)).sum())


def test_row_sums_telescope_to_the_range_fingerprint() -> None:
    assert _sums(list(range(32_768, 65_536))) == range_fingerprint(32_768, 65_535)


def test_a_duplicate_and_a_gap_change_the_fingerprint() -> None:
    offsets = list(range(100))
    assert _sums(offsets) == range_fingerprint(0, 99)
    assert _sums([*offsets[:10], 11, *offsets[11:]]) != range_fingerprint(0, 99)  # 11 twice, 10 missing
    assert _sums([*offsets[:50], *offsets[60:], *range(80, 90)]) != range_fingerprint(0, 99)  # a run for a run
