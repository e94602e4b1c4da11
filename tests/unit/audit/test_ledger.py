"""The file ledger's pure checks over listings of a sink directory: temp files, shards, panes, rewrites; and the
savepoint evidence of which windows had closed, on savepoints other runs made (fixtures/)."""

from pathlib import Path

from splitaudit.audit.checks.beam_names import NamingTemplate, instant_text
from splitaudit.audit.checks.findings import (
    INFO,
    MISSING_PANES,
    MISSING_SHARDS,
    REWRITTEN,
    UNDECIDED_WINDOWS,
    UNFINALIZED,
)
from splitaudit.audit.checks.ledger import check_ledger, closure, find_rewrites, ledger_of, windows_after
from splitaudit.audit.checks.window_evidence import (
    OVERRIDE,
    STATE,
    TIMESTAMP_POLICY,
    UNDECIDED,
    PolicyWatermark,
    StateWindows,
    judge_windows,
    policy_watermark,
    state_windows,
)
from splitaudit.savepoint.fileio import ListedFile, SavepointOptions

DEFAULTS = NamingTemplate.beam_defaults()
T0 = 1_764_000_000  # seconds; windows of 10 s from here
SP_TIME = T0 + 100.0  # the savepoint's time
FIXTURES = Path(__file__).parents[3] / "fixtures"
KEYED_FIXTURE = FIXTURES / "keyed" / "1.19.3-heap-savepoint-canonical-inline" / "savepoint-aa688c-f3cac33821d0"
SDF_FIXTURE = FIXTURES / "beam_sdf" / "heap_after" / "savepoint-074d2e-82370e8eaa40"
BEAM_FIXTURE = FIXTURES / "beam_flink_source" / "consumer_auto_commit"
NO_POLICY = PolicyWatermark(None, 0, "no KafkaIO checkpoint mark")


def textio(window: int, pane: int = 0, shard: int = 0, shards: int = 1, last: bool = True) -> str:
    start, end = (T0 + 10 * window) * 1000, (T0 + 10 * window + 10) * 1000
    tail = "-last" if last else ""
    return f"out{instant_text(start)}-{instant_text(end)}-pane-{pane}{tail}-{shard:05d}-of-{shards:05d}.json"


def listed(name: str, modified: float, size: int = 100) -> ListedFile:
    return ListedFile(name, size, modified)


def test_temporary_folders_are_reported_and_hidden_files_skipped() -> None:
    ledger = ledger_of(
        [
            listed(textio(0), T0 + 11.5),
            listed(".temp-beam-5d1c/0b6e-4a2f", T0 + 12, 321),
            listed(".temp-beam-5d1c/9f00-1b2c", T0 + 12, 79),
            listed(f".{textio(0)}.crc", T0 + 11.5),
            listed("_SUCCESS", T0 + 12, 0),
            listed("notes.txt", T0 + 12),
        ],
        DEFAULTS,
    )
    assert [f.path for f in ledger.files] == [textio(0)]
    assert ledger.unnamed == 1
    [finding] = check_ledger(ledger)
    assert (finding.kind, finding.count) == (UNFINALIZED, 2)
    assert finding.sample == (
        {"path": ".temp-beam-5d1c/0b6e-4a2f", "size": 321},
        {"path": ".temp-beam-5d1c/9f00-1b2c", "size": 79},
    )
    assert "400 bytes" in finding.detail


def test_missing_shards_and_panes() -> None:
    names = [
        textio(0, shard=0, shards=3),
        textio(0, shard=2, shards=3),
        textio(1, pane=0, last=False),
        textio(1, pane=2),
    ]
    ledger = ledger_of([listed(n, T0 + 30) for n in names], DEFAULTS)
    shards, panes = check_ledger(ledger)
    assert (shards.kind, shards.count) == (MISSING_SHARDS, 1)  # window 0 lacks shard 1; window 1 panes are whole
    window0 = f"{instant_text((T0) * 1000)}..{instant_text((T0 + 10) * 1000)}"
    assert {
        "file_family": "out*.json",
        "window": window0,
        "pane": 0,
        "shards": 3,
        "missing_shards": [1],
    } in shards.sample
    assert (panes.kind, panes.count) == (MISSING_PANES, 1)
    assert panes.sample[0]["missing_panes"] == [1]


def window(w: int) -> tuple[int, int]:
    return (T0 + 10 * w) * 1000, (T0 + 10 * w + 10) * 1000


def test_rewritten_windows_are_those_closed_at_the_savepoint_and_written_after_it() -> None:
    # windows 0..8 written before the savepoint; after the restore windows 2 and 3 are written again (T0+105),
    # window 9 (open at the savepoint, as its state says) written for the first time then, window 12 (no record
    # read before the savepoint) too
    files = [listed(textio(w), T0 + 10 * w + 11.5) for w in range(9) if w not in (2, 3)]
    files += [listed(textio(w), T0 + 105) for w in (2, 3)]
    files += [listed(textio(9), T0 + 101.5), listed(textio(12), T0 + 131.5)]
    ledger = ledger_of(files, DEFAULTS)
    assert windows_after(ledger, SP_TIME) == (window(2), window(3), window(9), window(12))
    state = StateWindows(frozenset({window(9)}), ("op",), 1)
    verdicts = judge_windows([window(2), window(3), window(9)], state, NO_POLICY, None)
    assert [(v.closed, v.rule) for v in verdicts] == [(True, STATE), (True, STATE), (False, STATE)]
    rewrites = find_rewrites(ledger, "sp0", SP_TIME, verdicts, "the evidence")
    assert rewrites.windows == (window(2), window(3))
    [finding] = rewrites.findings
    assert (finding.kind, finding.count, finding.evidence) == (REWRITTEN, 2, "decided by state: the evidence")
    assert [s["decided_by"] for s in finding.sample] == [STATE, STATE]
    assert sorted(f.path for f in rewrites.ledger.files if f.rewritten) == [textio(2), textio(3)]
    assert rewrites.notes == (
        "which windows had closed at the savepoint: the evidence",
        f"window {instant_text(window(2)[0])}..{instant_text(window(2)[1])} (1 files written after the savepoint): "
        "closed at the savepoint: rewritten (decided by state)",
        f"window {instant_text(window(3)[0])}..{instant_text(window(3)[1])} (1 files written after the savepoint): "
        "closed at the savepoint: rewritten (decided by state)",
        f"window {instant_text(window(9)[0])}..{instant_text(window(9)[1])} (1 files written after the savepoint): "
        "open at the savepoint: first firing (decided by state)",
    )


def test_without_state_the_timestamp_policy_watermark_decides() -> None:
    # the lowest partition watermark at the savepoint is window 3's last instant: 3 had fired, 4 had not
    refused = StateWindows(frozenset(), (), 0, "keyed state unread")
    policy = PolicyWatermark(window(3)[1] - 1, 4)
    verdicts = judge_windows([window(4), window(3)], refused, policy, None)
    assert [(v.window, v.closed, v.rule) for v in verdicts] == [
        (window(3), True, TIMESTAMP_POLICY),
        (window(4), False, TIMESTAMP_POLICY),
    ]


def test_windows_nothing_decides_are_named_not_taken_as_not_rewritten() -> None:
    refused = StateWindows(frozenset(), (), 0, "keyed state unread")
    ledger = ledger_of([listed(textio(8), SP_TIME + 5, 120)], DEFAULTS)
    verdicts = judge_windows([window(8)], refused, NO_POLICY, None)
    assert [(v.closed, v.rule) for v in verdicts] == [(None, UNDECIDED)]
    rewrites = find_rewrites(ledger, "sp0", SP_TIME, verdicts, "nothing to go on")
    [finding] = rewrites.findings
    assert (finding.kind, finding.severity, finding.count) == (UNDECIDED_WINDOWS, INFO, 1)
    assert finding.sample[0]["path"] == textio(8)
    assert rewrites.windows == ()


def test_the_watermark_delay_override_decides_over_the_evidence() -> None:
    # window 8 ends at T0+90, 10 s before the savepoint: closed by the override though the state has it open
    state = StateWindows(frozenset({window(8)}), ("op",), 1)
    closed = closure("sp0", SP_TIME, 10.0, {("t", 0): None, ("t", 1): None})
    assert closed.closed_by == SP_TIME - 10
    verdicts = judge_windows([window(8), window(9)], state, NO_POLICY, closed.closed_by)
    assert [(v.closed, v.rule) for v in verdicts] == [(True, OVERRIDE), (False, OVERRIDE)]
    assert "every source partition had been read to its end" in closed.basis


def test_a_partition_behind_at_the_savepoint_holds_its_watermark_back() -> None:
    # partition 1 had read records up to Kafka time T0+25 s only: windows ending by T0+15 s had closed
    closed = closure("sp0", SP_TIME, 10.0, {("t", 0): None, ("t", 1): (T0 + 25) * 1000})
    assert closed.closed_by == T0 + 15
    assert "t-1 had read records up to Kafka time" in closed.basis


def test_without_the_source_every_partition_is_taken_as_read_to_its_end() -> None:
    closed = closure("sp0", SP_TIME, 2.0, None)
    assert closed.closed_by == SP_TIME - 2
    assert "give --bootstrap to check" in closed.basis


def test_savepoints_without_a_beam_window_operator_leave_the_state_rule_undecided() -> None:
    # Flink's own event-time windows (KeyedStateFixtureJob's `window-sum`), and the Python pipeline's SDF read on
    # the portable runner (Beam's timers, no GroupByKey buffer): neither is a Beam window operator
    for location in (KEYED_FIXTURE, SDF_FIXTURE):
        state = state_windows(str(location), SavepointOptions())
        assert (state.decides, state.open) == (False, frozenset())
        assert state.refused is not None
        assert "no operator of it is a Beam window operator" in state.refused
    # nor does either hold a KafkaIO checkpoint mark (the SDF read keeps its offsets in its restriction)
    assert policy_watermark(str(SDF_FIXTURE), SavepointOptions()).watermark is None


def test_the_timestamp_policy_watermark_is_the_lowest_of_the_checkpoint_marks() -> None:
    # the reference pipeline's savepoint: KafkaIO (withLogAppendTime) over 4 partitions, one mark each
    policy = policy_watermark(str(BEAM_FIXTURE), SavepointOptions())
    assert (policy.partitions, policy.refused) == (4, None)
    assert policy.watermark is not None
    assert policy.watermark > 1_700_000_000_000
