"""Offset bitmaps: dense spans, and runs of bits."""

from __future__ import annotations

from splitaudit.audit.bitmaps import BUCKET_SIZE, offset_runs, span_bits


def test_runs_of_a_bucket_are_its_offsets() -> None:
    bits = span_bits(2, 2 * BUCKET_SIZE, 2 * BUCKET_SIZE + 1) | span_bits(2, 3 * BUCKET_SIZE - 1, 3 * BUCKET_SIZE - 1)
    assert offset_runs(2, bits) == [(2 * BUCKET_SIZE, 2 * BUCKET_SIZE + 1), (3 * BUCKET_SIZE - 1, 3 * BUCKET_SIZE - 1)]
    assert offset_runs(2, bits & ~bits) == []


def test_missing_runs_within_a_span_and_against_a_source_bitmap() -> None:
    held = span_bits(0, 10, 11) | span_bits(0, 14, 14) | span_bits(0, 20, 20)
    assert offset_runs(0, span_bits(0, 10, 21) & ~held) == [(12, 13), (15, 19), (21, 21)]
    assert offset_runs(0, span_bits(0, 10, 11) & ~held) == []
    source = span_bits(0, 10, 21)
    source[[12, 13, 17]] = False  # holes of the source: markers, compaction
    assert offset_runs(0, source & ~held) == [(15, 16), (18, 19), (21, 21)]
    assert offset_runs(0, held & ~source) == []
