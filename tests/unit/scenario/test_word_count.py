"""The word-count scenario's truth (`words_in`, `per_key`): what the test of its restores compares the audit with,
counted by hand here from tables built by hand."""

from __future__ import annotations

import json

import pyarrow as pa

from splitaudit_lab.scenario.word_count import GLOBAL_WINDOW, line, per_key, words_in

SOURCE = pa.table(
    {
        "partition": pa.array([0, 0, 1], pa.int32()),
        "offset": pa.array([0, 1, 0], pa.int64()),
        "value": ["a bb", "a", "bb ccc"],
        "timestamp": pa.array([1500, 2500, 3999], pa.int64()),
    }
)


def test_words_are_aggregated_per_window_of_their_line_s_time_or_in_the_global_window() -> None:
    # 2 s windows: line 0 (1500) in window 0, lines 1 (2500) and 2 (3999) in window 2000.
    assert words_in(SOURCE, {0: (0, 2), 1: (0, 1)}, "count", 2000) == {
        (0, "a"): 1, (0, "bb"): 1, (2000, "a"): 1, (2000, "bb"): 1, (2000, "ccc"): 1,
    }  # fmt: skip
    assert words_in(SOURCE, {0: (1, 2)}, "count") == {(GLOBAL_WINDOW, "a"): 1}
    assert words_in(SOURCE, {0: (0, 2), 1: (0, 1)}, "sum") == {
        (GLOBAL_WINDOW, "a"): 2, (GLOBAL_WINDOW, "bb"): 4, (GLOBAL_WINDOW, "ccc"): 3,
    }  # fmt: skip
    assert words_in(SOURCE, {0: (0, 2), 1: (0, 1)}, "max") == {
        (GLOBAL_WINDOW, "a"): 1, (GLOBAL_WINDOW, "bb"): 2, (GLOBAL_WINDOW, "ccc"): 3,
    }  # fmt: skip


def test_the_output_s_panes_are_summed_from_the_offsets_given() -> None:
    panes = [("a", 2, 0), ("a", 1, 0), ("a", 5, 2000), ("b", 7, GLOBAL_WINDOW)]
    sink = pa.table(
        {
            "partition": pa.array([0, 0, 0, 1], pa.int32()),
            "offset": pa.array([0, 1, 2, 0], pa.int64()),
            "key": [k for k, _, _ in panes],
            "value": [json.dumps({"value": n, "window_start": w}) for _, n, w in panes],
            "timestamp": pa.array([1, 2, 3, 4], pa.int64()),
        }
    )
    assert per_key(sink, {0: 1, 1: 0}) == {(0, "a"): 1, (2000, "a"): 5, (GLOBAL_WINDOW, "b"): 7}
    assert per_key(sink.slice(0, 0), {0: 0}) == {}  # no output yet


def test_a_line_has_four_words() -> None:
    assert line(1234) == "all m2 f34 t123"
