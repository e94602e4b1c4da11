"""The FileSource scenario's input and its truth: the lines it writes, and what the sink holds of each file
counted from the sink's rows alone (hand-written rows of the lineage sink's schema)."""

from __future__ import annotations

import json
from pathlib import Path

from splitaudit_lab.scenario.flink_file import FileTruth, flink_path, sink_truth, write_input


def _row(path: Path, line: int, job: str, subtask: int) -> str:
    row = {"topic": flink_path(path), "partition": 0, "offset": line, "subtask": subtask, "reader_id": "r",
           "attempt": 0, "job_id": job, "key_hash": None, "value_hash": "00"}  # fmt: skip
    return json.dumps(row) + "\n"


def test_the_input_lines_name_their_file_and_number(tmp_path: Path) -> None:
    a, b = write_input(tmp_path / "in", 2, 3)
    assert a.read_text() == "part-0.txt 000000\npart-0.txt 000001\npart-0.txt 000002\n"
    assert (b.name, len(b.read_text().splitlines())) == ("part-1.txt", 3)
    assert flink_path(a) == f"file:{tmp_path}/in/part-0.txt"


def test_the_truth_counts_rows_twins_and_gaps_per_file(tmp_path: Path) -> None:
    a, b = write_input(tmp_path / "in", 2, 5)
    sink = tmp_path / "sink"
    sink.mkdir()
    # Job j1 read lines 0-2 of a and 0-1 of b; the restored j2 read 2-4 of a on subtask 1: line 2 twice, b's 2-4 never.
    (sink / "j1-0-0-1.jsonl").write_text("".join([*(_row(a, n, "j1", 0) for n in range(3)), _row(b, 0, "j1", 1)]))
    (sink / "j1-1-0-1.jsonl").write_text(_row(b, 1, "j1", 1))
    (sink / "j2-1-0-3.jsonl").write_text("".join(_row(a, n, "j2", 1) for n in range(2, 5)))
    (sink / ".j2-0-0-4.jsonl.tmp").write_text(_row(b, 2, "j2", 0))  # not complete: not counted
    assert sink_truth(sink, (a, b), 5, "j1") == (
        FileTruth(flink_path(a), 5, 6, 3, 1, 0, (1,)),
        FileTruth(flink_path(b), 5, 2, 2, 0, 3, ()),
    )
