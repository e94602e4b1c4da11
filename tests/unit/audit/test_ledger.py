"""The file ledger's pure checks over listings of a sink directory: temp files, shards, panes, rewrites."""

from splitaudit.audit.beam_names import NamingTemplate, instant_text
from splitaudit.audit.findings import MISSING_PANES, MISSING_SHARDS, REWRITTEN, UNFINALIZED
from splitaudit.audit.ledger import check_ledger, closure, find_rewrites, ledger_of
from splitaudit.savepoint.fileio import ListedFile

DEFAULTS = NamingTemplate.beam_defaults()
T0 = 1_764_000_000  # seconds; windows of 10 s from here
SP_TIME = T0 + 100.0  # the savepoint: windows up to T0+90 closed before it


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


def test_rewritten_windows_are_those_closed_at_the_savepoint_and_written_after_it() -> None:
    # windows 0..8 written before the savepoint; after the restore windows 2 and 3 are written again (T0+105),
    # window 9 (end T0+100: open at the savepoint, 10 s watermark delay) written for the first time then
    files = [listed(textio(w), T0 + 10 * w + 11.5) for w in range(9) if w not in (2, 3)]
    files += [listed(textio(2), T0 + 105), listed(textio(3), T0 + 105), listed(textio(9), T0 + 101.5)]
    ledger = ledger_of(files, DEFAULTS)
    closed = closure("sp0", SP_TIME, 10.0, {("t", 0): None, ("t", 1): None})
    assert closed.closed_by == SP_TIME - 10
    rewrites = find_rewrites(ledger, closed)
    assert rewrites.windows == (((T0 + 20) * 1000, (T0 + 30) * 1000), ((T0 + 30) * 1000, (T0 + 40) * 1000))
    assert rewrites.finding is not None
    assert (rewrites.finding.kind, rewrites.finding.count) == (REWRITTEN, 2)
    assert sorted(f.path for f in rewrites.ledger.files if f.rewritten) == [textio(2), textio(3)]
    assert "every source partition had been read to its end" in rewrites.note


def test_a_partition_behind_at_the_savepoint_holds_its_watermark_back() -> None:
    # partition 1 had read records up to Kafka time T0+25 s only: windows ending by T0+15 s had closed
    closed = closure("sp0", SP_TIME, 10.0, {("t", 0): None, ("t", 1): (T0 + 25) * 1000})
    assert closed.closed_by == T0 + 15
    assert "t-1 had read records up to Kafka time" in closed.basis
    ledger = ledger_of([listed(textio(0), SP_TIME + 5), listed(textio(1), SP_TIME + 5)], DEFAULTS)
    assert [f.path for f in find_rewrites(ledger, closed).ledger.files if f.rewritten] == [textio(0)]


def test_without_the_source_every_partition_is_taken_as_read_to_its_end() -> None:
    closed = closure("sp0", SP_TIME, 2.0, None)
    assert closed.closed_by == SP_TIME - 2
    assert "give --bootstrap to check" in closed.basis
