"""The watch's console report: the final figure of each finding, the final tally (exact or a lower bound with
why), how the job ended, and the REST answers it retried in one escaped line (Flink's trace only with --debug)."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from rich.console import Console

from splitaudit.audit.checks.findings import ERROR, Finding
from splitaudit.guard.positions import NOT_READ, READ, PartitionPositions
from splitaudit.guard.results import JobEnd, RestFault, WatchEvent, WatchReport
from splitaudit.guard.tally import PartitionTally
from splitaudit.guard.watch import READ_MORE_THAN_AVAILABLE
from splitaudit.report.console import ConsoleOutput

TRACE = "java.util.concurrent.CancellationException\n\tat org.apache.flink.X.y(X.java:70)\x1b[2J"


def _report() -> WatchReport:
    early = Finding(READ_MORE_THAN_AVAILABLE, ERROR, "t", 0, 307)
    later = Finding(READ_MORE_THAN_AVAILABLE, ERROR, "t", 0, 1000)
    events = (WatchEvent(1.0, early), WatchEvent(2.0, later))
    tally = (PartitionTally("t", 0, 2000, 1000, True), PartitionTally("t", 1, 1500, 500, False, "still reading"))
    fault = RestFault(
        "GET /jobs/j", "HTTP 500: Internal server error. (java.util.concurrent.CancellationException)", 3, TRACE
    )
    return WatchReport("j", "file:/sp", 9, 3.0, events, "report", None, JobEnd("finished", "FINISHED"), tally=tally,
                       rest_faults=(fault,))  # fmt: skip


def _shown(debug: bool) -> str:
    output = ConsoleOutput(debug)
    output.console = Console(file=io.StringIO(), width=200, markup=False, emoji=False, highlight=False)
    output.watch_report(_report())
    return output.console.file.getvalue()  # type: ignore[no-any-return, attr-defined]


@pytest.mark.parametrize("debug", [False, True])
def test_the_report_shows_final_figures_and_a_retried_trace_in_one_line_unless_debug(debug: bool) -> None:
    text = _shown(debug)
    assert "1000" in text
    assert "307" not in text  # the early figure was updated, not kept
    assert "exact" in text
    assert "lower bound: still reading" in text
    assert "job finished (Flink state FINISHED)" in text
    assert (
        "retried GET /jobs/j → HTTP 500: Internal server error. (java.util.concurrent.CancellationException) "
        "(3 times)" in text
    )
    assert ("org.apache.flink.X.y(X.java:70)\\x1b[2J" in text) is debug
    assert "\x1b" not in text
    assert text.rstrip().splitlines()[-1] == (
        "splitaudit-watch: ERROR kinds=read_more_than_available after=1s action=report state=finished job=j"
    )


def test_a_kafka_sources_tally_shows_its_positions_per_partition() -> None:
    positions = (
        PartitionPositions("t\x1b[2J", 0, 100, 199, (100, 199), (100, 199), READ),
        PartitionPositions("t", 2, None, None, None, (0, 49), NOT_READ),
    )
    output = ConsoleOutput()
    output.console = Console(file=io.StringIO(), width=200, markup=False, emoji=False, highlight=False)
    output.watch_report(replace(_report(), tally=(), positions=positions))
    text = output.console.file.getvalue()  # type: ignore[attr-defined]
    assert "final tally: positions per partition (KafkaSource)" in text
    rows = [line.split() for line in text.splitlines() if line.startswith("│")]
    assert [
        "│",
        "t\\x1b[2J",
        "│",
        "0",
        "│",
        "100",
        "│",
        "199",
        "│",
        "100..199",
        "│",
        "100..199",
        "│",
        "read",
        "│",
    ] in rows
    assert ["│", "t", "│", "2", "│", "-", "│", "-", "│", "-", "│", "0..49", "│", "not_read", "│"] in rows
    assert "\x1b" not in text
