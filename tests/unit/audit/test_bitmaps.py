"""Offset bitmaps in Spark's layout: decoding, dense spans, and runs of bits."""

from __future__ import annotations

import numpy as np

from splitaudit.audit.bitmaps import BUCKET_SIZE, bitmap_bits, offset_runs, span_bits

# Printed by Spark 4.3.0: SELECT bitmap_construct_agg(p) FROM VALUES (0L), (1L), (9L), (32767L) AS t(p):
# 4,096 bytes, 0x03 0x02 at the start, 0x80 at the end, zero elsewhere
SPARK_BITMAP = bytes([0x03, 0x02]) + bytes(BUCKET_SIZE // 8 - 3) + bytes([0x80])


def test_sparks_bitmap_decodes_to_its_positions() -> None:
    assert np.flatnonzero(bitmap_bits(SPARK_BITMAP)).tolist() == [0, 1, 9, BUCKET_SIZE - 1]
    assert offset_runs(2, bitmap_bits(SPARK_BITMAP)) == [
        (2 * BUCKET_SIZE, 2 * BUCKET_SIZE + 1),
        (2 * BUCKET_SIZE + 9, 2 * BUCKET_SIZE + 9),
        (3 * BUCKET_SIZE - 1, 3 * BUCKET_SIZE - 1),
    ]


def test_missing_runs_within_a_span_and_against_a_source_bitmap() -> None:
    held = span_bits(0, 10, 11) | span_bits(0, 14, 14) | span_bits(0, 20, 20)
    assert offset_runs(0, span_bits(0, 10, 21) & ~held) == [(12, 13), (15, 19), (21, 21)]
    assert offset_runs(0, span_bits(0, 10, 11) & ~held) == []
    source = span_bits(0, 10, 21)
    source[[12, 13, 17]] = False  # holes of the source: markers, compaction
    assert offset_runs(0, source & ~held) == [(15, 16), (18, 19), (21, 21)]
    assert offset_runs(0, held & ~source) == []


def test_no_bitmap_is_no_offset() -> None:
    assert np.count_nonzero(bitmap_bits(None)) == 0
    assert offset_runs(3, span_bits(3, 3 * BUCKET_SIZE, 3 * BUCKET_SIZE + 9) & ~bitmap_bits(None)) == [
        (3 * BUCKET_SIZE, 3 * BUCKET_SIZE + 9)
    ]
