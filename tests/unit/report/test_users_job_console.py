"""The users'-job scenario's console and JSON reports: one table per output, each partition's phases, the offsets
read twice and missing as ranges, and the verdict."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from splitaudit.guard.results import GuardReport
from splitaudit.guard.twin import AUTO_OFFSET_RESET, LOG_END_AT_RESTORE, TwinStart
from splitaudit.patch.jar import JarFacts
from splitaudit.report.console import ConsoleOutput
from splitaudit.report.output import JsonOutput
from splitaudit.scenario.users_job_results import OutputTruth, PartitionTruth, UsersJobReport

JAR = JarFacts("users-job-stock.jar", "2.62.0", "beam-runners-flink-1.19", True, False, False, False, True)
TWIN = TwinStart("in", 0, 200, None, LOG_END_AT_RESTORE, AUTO_OFFSET_RESET, "auto.offset.reset is latest")


def _report() -> UsersJobReport:
    twice = OutputTruth(rows=800, produced_offsets=600, read_twice=((400, 599),), read_more=(), missing=())
    return UsersJobReport(
        variant="stock",
        consumer="none",
        lineage=False,
        jar="users-job-stock.jar",
        run_dir="/runs/r",
        input_topic="in",
        output_topic="in-out",
        parquet_dir="/runs/r/parquet",
        job_id_before="j0",
        job_id_after="j1",
        savepoint_before="/sp0",
        savepoint_after="/sp1",
        records=(200, 200, 200),
        partitions=tuple(PartitionTruth(p, (0, 199), (200, 399), (400, 599), twice, twice) for p in range(2)),
        unmatched_rows=(0, 0),
        steps=(),
        guard=GuardReport("/sp0", JAR, "127.0.0.1:9092", None, (), (), (), twins=(TWIN,)),
    )


def test_console_shows_phases_and_the_offsets_read_twice_per_output() -> None:
    output = ConsoleOutput()
    output.console = Console(file=io.StringIO(), width=200, markup=False, emoji=False, highlight=False)
    output.users_job_report(_report())
    text = output.console.file.getvalue()  # type: ignore[attr-defined]
    rows = [line.split("│")[1:-1] for line in text.splitlines() if line.startswith("│ ")]
    assert [[cell.strip() for cell in row] for row in rows] == [
        [str(p), "0..199", "200..399", "400..599", "800", "200: 400..599", "0: -"] for _ in range(2) for p in range(2)
    ]
    assert "NOT CLEAN: offsets read twice or missing" in text
    assert (
        "in/0: a second reader starts at the log end at the restore (auto.offset.reset is latest): nothing already in "
        "the topic (the backlog from 200 is read once); every record produced after the restore is read twice"
    ) in " ".join(text.split())  # rich wraps long lines


def test_json_carries_ranges_and_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    JsonOutput().users_job_report(_report())
    document = json.loads(capsys.readouterr().out)
    assert document["clean"] is False
    assert document["records_per_partition"] == {"before": 200, "down": 200, "after": 200}
    assert document["partitions"][1]["produced"] == {"before": [0, 199], "down": [200, 399], "after": [400, 599]}
    assert document["partitions"][1]["parquet"] == {
        "rows": 800, "extra_rows": 200, "read_twice": 200, "read_twice_ranges": [[400, 599]], "read_more_ranges": [],
        "missing": 0, "missing_ranges": [],
    }  # fmt: skip
    assert document["guard"]["twins"][0]["start_is"] == LOG_END_AT_RESTORE
