"""What the guard says of a twin re-reading records read before the savepoint: windows closed, files rewritten."""

from splitaudit.audit.checks.beam_names import NamingTemplate, instant_text
from splitaudit.audit.checks.findings import WARNING
from splitaudit.audit.checks.ledger import ledger_of
from splitaudit.guard.twin import AUTO_OFFSET_RESET, COMMITTED, LOG_END_AT_RESTORE, LOG_START, TwinStart
from splitaudit.guard.windows import REREADS_CLOSED_WINDOWS, closed_window_findings, reread_before_savepoint
from splitaudit.savepoint.fileio import ListedFile

T0 = 1_764_000_000_000  # epoch millis; windows of 10 s


def twin(start: int | None, restored: int = 100, start_is: str = LOG_START) -> TwinStart:
    return TwinStart("t", 1, restored, start, start_is, AUTO_OFFSET_RESET, "auto.offset.reset=earliest")


def window_file(index: int) -> ListedFile:
    start, end = T0 + 10_000 * index, T0 + 10_000 * (index + 1)
    return ListedFile(f"w{instant_text(start)}-{instant_text(end)}-pane-0-last-00000-of-00001.json", 10, 0.0)


def test_only_twins_below_the_savepoint_offset_reread_closed_windows() -> None:
    assert reread_before_savepoint(twin(0)) == (0, 99)
    assert reread_before_savepoint(twin(40, start_is=COMMITTED)) == (40, 99)
    assert reread_before_savepoint(twin(100, start_is=COMMITTED)) is None  # committed at the savepoint's offset
    assert reread_before_savepoint(twin(None, start_is=LOG_END_AT_RESTORE)) is None


def test_the_finding_names_the_sink_windows_and_the_one_reread_from_inside() -> None:
    ledger = ledger_of([window_file(i) for i in range(6)], NamingTemplate.beam_defaults())
    # offsets 40..99 have Kafka times T0+15 s .. T0+42 s: windows 1 (from inside) to 4
    times = {("t", 1, 40): T0 + 15_000, ("t", 1, 99): T0 + 42_000}
    twins = [twin(40, start_is=COMMITTED), twin(None, start_is=LOG_END_AT_RESTORE)]
    [finding] = closed_window_findings(twins, times, ledger)
    assert (finding.kind, finding.severity, finding.topic, finding.partition) == (
        REREADS_CLOSED_WINDOWS,
        WARNING,
        "t",
        1,
    )
    assert (finding.count, finding.offset_ranges) == (60, ((40, 99),))
    assert f"Kafka time {instant_text(T0 + 15_000)}..{instant_text(T0 + 42_000)}" in finding.detail
    assert f"4 files of 4 windows ({instant_text(T0 + 10_000)}..{instant_text(T0 + 50_000)})" in finding.detail
    assert f"re-read from inside: {instant_text(T0 + 10_000)}..{instant_text(T0 + 20_000)}" in finding.detail


def test_without_a_ledger_or_times_the_finding_still_says_the_hazard() -> None:
    [finding] = closed_window_findings([twin(0)], {}, None)
    assert finding.count == 100
    assert "rewrites those windows' files" in finding.detail
    assert "(Kafka time " not in finding.detail
