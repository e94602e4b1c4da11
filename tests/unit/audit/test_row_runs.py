"""Rows cut into runs per key: the key's values at each run, whatever order the rows came in."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from splitaudit.audit.passes.row_runs import SMALL_RANGE, batch_runs, codes, key_codes


def test_a_batch_is_cut_into_runs_per_partition_and_reader_in_offset_order() -> None:
    batch = pa.record_batch(
        {
            "topic": ["t", "t", "t", "t", "t", "t"],
            "partition": pa.array([0, 1, 0, 0, 1, 0], pa.int32()),
            "reader_id": ["a", "a", "b", "a", None, "a"],
            "offset": pa.array([12, 5, 11, 10, 6, 11], pa.int64()),
        }
    )
    runs = batch_runs(batch, ["topic", "partition", "reader_id"])
    found = set(zip(*(runs[c].to_pylist() for c in ("partition", "reader_id", "first", "last")), strict=True))
    assert found == {(0, "a", 10, 12), (0, "b", 11, 11), (1, None, 6, 6), (1, "a", 5, 5)}
    assert runs["bucket"].to_pylist() == [0] * 4


def test_codes_number_equal_values_alike() -> None:
    small, count = codes(pa.array([7, 9, 7], pa.int32()))
    assert (small.tolist(), count) == ([0, 2, 0], 3)  # by value: 8 stands for nothing
    far, count = codes(pa.array([0, SMALL_RANGE, 0], pa.int64()))  # too far apart: a hash table's numbers
    assert (far.tolist(), count) == ([0, 1, 0], 2)
    nulls, count = codes(pa.array([None, "x", None]))
    assert (nulls[0] == nulls[2], nulls[0] != nulls[1], count) == (True, True, 2)
    assert key_codes([pa.array([1, 1]), pa.array(["a", "a"])]) is None  # one key for all
    combined = key_codes([pa.array([1, 1, 2]), pa.array(["a", "b", "a"])])
    assert combined is not None
    assert len(set(np.asarray(combined).tolist())) == 3
