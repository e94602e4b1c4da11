"""`json_texts` (a column's JSON text at once, the keyed table's batches) is exactly `json_text` of each value."""

from __future__ import annotations

from typing import Any

import pytest

from splitaudit.audit.checks.rows import json_text, json_texts
from splitaudit.savepoint.keyed import Undecoded


@pytest.mark.parametrize(
    "column",
    [
        ["key-1", 'a "quoted"\n\\ one', "é ✓ \U0001f600", ""],
        [0, -1, 1 << 70],
        [True, False],  # bools are JSON's true and false, not the ints they equal
        [None, None],
        [None, "x", 3, 2.5],
        [[1, 2], {"label": "p", "level": None}, Undecoded("s", b"\x01")],
        [1.0, float("nan")],
        [],
    ],
)
def test_json_texts_is_json_text_of_each_value(column: list[Any]) -> None:
    assert json_texts(column) == [json_text(value) for value in column]
