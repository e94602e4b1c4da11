"""The users'-job scenario's console and JSON reports: one table per output, each partition's phases, the offsets
read twice and missing as ranges (for the file sinks also masked duplicates and losses by rewrite), the files the
restored job replaced with their windows, files never finalized, and the verdict."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from splitaudit.guard.results import GuardReport
from splitaudit.guard.twin import AUTO_OFFSET_RESET, LOG_END_AT_RESTORE, TwinStart
from splitaudit.patch.jar import JarFacts
from splitaudit_lab.report.console import LabConsoleOutput
from splitaudit_lab.report.output import LabJsonOutput
from splitaudit_lab.scenario.users_job_results import (
    FileSinkTruth,
    MidWindowOffset,
    OutputTruth,
    PartitionTruth,
    ReplacedFile,
    TempFile,
    UsersJobReport,
)

JAR = JarFacts("users-job-stock.jar", "2.62.0", "beam-runners-flink-1.19", True, False, False, False, True)
TWIN = TwinStart("in", 0, 200, None, LOG_END_AT_RESTORE, AUTO_OFFSET_RESET, "auto.offset.reset is latest")


WINDOW = (1748736002000, 1748736004000)  # 2025-06-01T00:00:02Z, two seconds
TEXT_FILE = "weather2025-06-01T00:00:02.000Z-2025-06-01T00:00:04.000Z-pane-0-last-00000-of-00001.json"


def _report() -> UsersJobReport:
    twice = OutputTruth(rows=800, produced_offsets=600, read_twice=((400, 599),), read_more=(), missing=())
    # A file sink after a twin started mid-window at 75: 50..74 lost, 75..199 read twice but once in the sink.
    files = OutputTruth(
        rows=975, produced_offsets=600, read_twice=((200, 599),), read_more=(), missing=((50, 74),),
        masked_duplicates=((75, 199),), lost_by_rewrite=((50, 74),),
    )  # fmt: skip
    text = FileSinkTruth(
        "text", "/runs/r/text", 3, 8, (ReplacedFile(TEXT_FILE, WINDOW, 400, 300),), (TempFile(".temp-beam-1/x", 17),)
    )
    return UsersJobReport(
        variant="stock",
        consumer="group",
        group_offsets="mid-window",
        lineage=False,
        window_seconds=2,
        jar="users-job-stock.jar",
        run_dir="/runs/r",
        input_topic="in",
        output_topic="in-out",
        text_dir="/runs/r/text",
        parquet_dir="/runs/r/parquet",
        job_id_before="j0",
        job_id_after="j1",
        savepoint_before="/sp0",
        savepoint_after="/sp1",
        records=(200, 200, 200),
        partitions=tuple(PartitionTruth(p, (0, 199), (200, 399), (400, 599), twice, files, files) for p in range(2)),
        unmatched_rows=(0, 0, 0),
        windows_before=((1748736000000, 1748736002000), WINDOW),
        mid_window=tuple(MidWindowOffset(p, 75, WINDOW, (50, 99)) for p in range(2)),
        file_sinks=(text, FileSinkTruth("parquet", "/runs/r/parquet", 3, 8, (), ())),
        steps=(),
        guard=GuardReport("/sp0", JAR, "127.0.0.1:9092", None, (), (), (), twins=(TWIN,)),
    )


def test_console_shows_phases_and_the_offsets_read_twice_per_output() -> None:
    output = LabConsoleOutput()
    output.console = Console(file=io.StringIO(), width=200, markup=False, emoji=False, highlight=False)
    output.users_job_report(_report())
    text = output.console.file.getvalue()  # type: ignore[attr-defined]
    rows = [line.split("│")[1:-1] for line in text.splitlines() if line.startswith("│ ")]
    phases = [["0..199", "200..399", "400..599"]]
    assert [[cell.strip() for cell in row] for row in rows] == [
        *([str(p), *phases[0], "800", "200: 400..599", "0: -"] for p in range(2)),
        *(
            [str(p), *phases[0], "975", "400: 200..599", "25: 50..74", "125: 75..199", "25: 50..74"]
            for _ in range(2)
            for p in range(2)
        ),
        [TEXT_FILE, "2025-06-01T00:00:02.000Z-2025-06-01T00:00:04.000Z", "400", "300"],
    ]
    assert "NOT CLEAN: offsets read twice or missing, or files replaced" in text
    assert "text: 3 files after the first job, 8 at the end, 1 replaced (2 s windows)" in text
    assert "parquet: 3 files after the first job, 8 at the end, 0 replaced (2 s windows)" in text
    assert "never finalized: .temp-beam-1/x (17 bytes)" in text
    assert (
        "group offset of partition 1 set to 75, in window 2025-06-01T00:00:02.000Z-2025-06-01T00:00:04.000Z "
        "(offsets 50..99)"
    ) in text
    assert (
        "in/0: a second reader starts at the log end at the restore (auto.offset.reset is latest): nothing already in "
        "the topic (the backlog from 200 is read once); every record produced after the restore is read twice"
    ) in " ".join(text.split())  # rich wraps long lines


def test_json_carries_ranges_and_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    LabJsonOutput().users_job_report(_report())
    document = json.loads(capsys.readouterr().out)
    assert document["clean"] is False
    assert document["records_per_partition"] == {"before": 200, "down": 200, "after": 200}
    assert document["partitions"][1]["produced"] == {"before": [0, 199], "down": [200, 399], "after": [400, 599]}
    assert document["partitions"][1]["output_topic"] == {
        "rows": 800, "extra_rows": 200, "read_twice": 200, "read_twice_ranges": [[400, 599]], "read_more_ranges": [],
        "missing": 0, "missing_ranges": [], "masked_duplicates": 0, "masked_duplicates_ranges": [],
        "lost_by_rewrite": 0, "lost_by_rewrite_ranges": [],
    }  # fmt: skip
    assert document["partitions"][1]["text"] == {
        "rows": 975, "extra_rows": 400, "read_twice": 400, "read_twice_ranges": [[200, 599]], "read_more_ranges": [],
        "missing": 25, "missing_ranges": [[50, 74]], "masked_duplicates": 125, "masked_duplicates_ranges": [[75, 199]],
        "lost_by_rewrite": 25, "lost_by_rewrite_ranges": [[50, 74]],
    }  # fmt: skip
    assert document["group_offsets"] == "mid-window"
    assert document["unmatched_rows"] == {"output_topic": 0, "text": 0, "parquet": 0}
    assert document["file_sinks"][0]["replaced"] == [
        {"name": TEXT_FILE, "window": list(WINDOW), "window_text": "2025-06-01T00:00:02.000Z-2025-06-01T00:00:04.000Z",
         "rows_before": 400, "rows_after": 300}
    ]  # fmt: skip
    assert document["file_sinks"][0]["temp_files"] == [{"path": ".temp-beam-1/x", "size": 17}]
    assert document["mid_window"][0] == {
        "partition": 0, "offset": 75, "window": list(WINDOW),
        "window_text": "2025-06-01T00:00:02.000Z-2025-06-01T00:00:04.000Z", "window_offsets": [50, 99],
    }  # fmt: skip
    assert document["guard"]["twins"][0]["start_is"] == LOG_END_AT_RESTORE
