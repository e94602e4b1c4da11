"""What a predicted twin's re-read does to windows that closed before the savepoint, and to a file sink's files.

A twin that starts below the savepoint's next offset S (at a committed offset the group left behind, at the log
start) reads [T, S) again: records the first job read before the savepoint. A job that windows by the records'
Kafka time (KafkaIO's `withLogAppendTime()` / `withCreateTime()`) puts them in windows that closed before the
savepoint, and fires those windows again. A file sink with deterministic names (Beam's windowed TextIO and
FileIO names, or a custom `FileNaming` by window) writes the same names again and replaces the files: the
windows re-read whole keep their records once (masked duplicates); the window holding T, re-read from inside,
keeps only the part from T on (records lost *because* they were read again). A job that windows by processing
time puts the re-read records in new windows instead: duplicates, no rewrite.

`closed_window_findings` says this per partition from the Kafka times of T and S-1; given the sink's ledger
(`guard --sink DIR`) it names the windows whose files will be rewritten.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from splitaudit.audit.checks.beam_names import instant_text
from splitaudit.audit.checks.findings import WARNING, Finding, offset_range
from splitaudit.audit.checks.ledger import Ledger
from splitaudit.guard.twin import TwinStart

REREADS_CLOSED_WINDOWS = "rereads_closed_windows"  # a twin re-reads records of windows closed before the savepoint


def reread_before_savepoint(twin: TwinStart) -> tuple[int, int] | None:
    """The offsets [T, S-1] a twin reads again that the first job read before the savepoint; None if none."""
    if twin.twin_start is None or twin.restored_from is None or twin.twin_start >= twin.restored_from:
        return None
    return twin.twin_start, twin.restored_from - 1


def closed_window_findings(
    twins: Sequence[TwinStart], times: Mapping[tuple[str, int, int], int], ledger: Ledger | None
) -> list[Finding]:
    """One warning per partition whose twin re-reads records read before the savepoint (`times`: the Kafka time
    of each re-read range's first and last record), naming the sink's windows when `ledger` is given."""
    findings = []
    for twin in twins:
        reread = reread_before_savepoint(twin)
        if reread is None:
            continue
        first, last = reread
        start = times.get((twin.topic, twin.partition, first))
        end = times.get((twin.topic, twin.partition, last))
        when = "" if start is None or end is None else f" (Kafka time {instant_text(start)}..{instant_text(end)})"
        detail = (
            f"the second reader re-reads offsets {offset_range(first, last)}{when}, read before the savepoint: a job "
            "that windows by the records' Kafka time fires their windows, closed before the savepoint, again; a file "
            "sink with deterministic names (Beam's windowed TextIO/FileIO names) rewrites those windows' files: "
            "records re-read whole are held once (masked duplicates), and the window holding offset "
            f"{first}, re-read from inside, loses its records before it"
        )
        if ledger is not None and start is not None and end is not None:
            detail += "; " + _named_windows(ledger, start, end)
        findings.append(
            Finding(
                REREADS_CLOSED_WINDOWS, WARNING, twin.topic, twin.partition, last - first + 1, (reread,), detail=detail
            )
        )
    return findings


def _named_windows(ledger: Ledger, start: int, end: int) -> str:
    """The ledger's windows holding Kafka times [start, end]: their count and files, the first one by name."""
    hit = sorted(
        {f.window for f in ledger.files if f.window is not None and f.window[0] <= end and f.window[1] > start}
    )
    if not hit:
        return "the sink's ledger has no window file of those times"
    files = [f.path for f in ledger.files if f.window in hit]
    inside = next((w for w in hit if w[0] < start), None)
    partial = "" if inside is None else f"; re-read from inside: {instant_text(inside[0])}..{instant_text(inside[1])}"
    return (
        f"{len(files)} files of {len(hit)} windows ({instant_text(hit[0][0])}..{instant_text(hit[-1][1])}) will be "
        f"written again, e.g. {files[0]}{partial}"
    )
