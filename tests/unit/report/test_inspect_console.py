"""`inspect` in a terminal: one row per (subtask, split, topic, partition) with its next offset, in plain columns
that fit 80 columns, on real savepoints of each split family; the enumerator's pending splits the same way."""

from __future__ import annotations

import re

from click.testing import CliRunner

from splitaudit.cli import main
from tests.unit.conftest import FIXTURES, flink_fixtures

BEAM = FIXTURES / "beam_flink_source" / "restore_stock_before"
KAFKA = next(f for f in flink_fixtures("kafka") if f.name == "1.19.3-kafka-3.3.0-1.19-savepoint")


def _inspect(path: object) -> list[str]:
    result = CliRunner().invoke(main, ["inspect", str(path)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    return lines


def _rows(lines: list[str]) -> list[tuple[str, ...]]:
    """The cells of every one-line table row whose last three cells are a partition, a next offset and a stop."""
    splits = lines[next(i for i, line in enumerate(lines) if "reader splits" in line) :]  # after the operators
    cells = [tuple(c.strip() for c in line.strip("│").split("│")) for line in splits if line.startswith("│")]
    return [row for row in cells if len(row) >= 4 and re.fullmatch(r"\d+", row[-3])]


def test_a_beam_savepoint_shows_each_subtasks_partitions_and_offsets_in_80_columns() -> None:
    lines = _inspect(BEAM)
    assert "source badafca9cf4780dedc3db9bfa19c38b8: reader splits, beam_flink_source" in " ".join(lines)
    assert _rows(lines) == [
        ("0", "0", "restore-stock-3b5fcb84", "0", "5000", "-"),
        ("0", "0", "restore-stock-3b5fcb84", "2", "5000", "-"),
        ("1", "1", "restore-stock-3b5fcb84", "1", "5000", "-"),
        ("1", "1", "restore-stock-3b5fcb84", "3", "5000", "-"),
    ]
    assert any("nothing pending" in line for line in lines)


def test_a_kafka_source_savepoint_shows_every_partitions_offset_and_the_enumerators_assignments() -> None:
    lines = _inspect(KAFKA.snapshot)
    topic = KAFKA.expected["job"]["topic"]
    (source,) = [op["source"] for op in KAFKA.expected["inspect"]["operators"] if op["source"]]
    expected = sorted(
        (str(s["subtask"]), topic, str(s["split"]["partition"]), str(s["split"]["starting_offset"]), "-")
        for s in source["reader_splits"]
    )
    assert expected == [
        ("0", topic, "1", "-2", "-"),
        ("0", topic, "3", "2937", "-"),
        ("1", topic, "0", "-2", "-"),
        ("1", topic, "2", "2956", "-"),
    ]
    readers = [r for r in _rows(lines) if len(r) == 5]
    assert sorted(readers) == expected
    assigned = [r for r in _rows(lines) if len(r) == 6]
    assert assigned == [("-", "assigned", topic, str(p), "-", "-") for p in range(4)]
