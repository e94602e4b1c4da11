"""Offset buckets: offsets of one (topic, partition) fall in buckets of 32,768 (`offset >> 15`), the unit in which
pass 1 sums a partition's rows and pass 2 (`bucket_offsets`) names the offsets of a suspect bucket.
"""

from __future__ import annotations

BUCKET_BITS = 15
BUCKET_SIZE = 1 << BUCKET_BITS  # 32,768 offsets

BucketKey = tuple[str, int, int]  # (topic, partition, bucket)
OffsetSpan = tuple[int, int]  # first and last offset, inclusive
