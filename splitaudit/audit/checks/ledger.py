"""A file sink's ledger: its files as Beam named them, and what the names and times say went wrong.

Beam's file sinks keep no commit log; their names are the ledger (`beam_names`): the window each file holds, its
pane and its shard of the pane; the store adds each file's size and time. Read from a listing of the sink
directory (the filesystem seam, local or object store), the ledger shows:

- files left in Beam's temporary folders (`.temp-beam…`, `.temp-…`): written by a bundle whose finalize never
  moved them into place, so their records are in no finished file (`unfinalized_files`);
- shards of a window's pane absent (`k of n` names n shards: `missing_shards`) and pane indexes skipped
  (`missing_panes`);
- with the savepoint a job was restored from, the files **written after it for windows that had closed at
  it** (`rewritten_files`): a restored job that read those windows' records again fired them again, and a
  sink with deterministic names wrote the same name again, replacing the file. Which windows had closed is
  told by the savepoint itself (`window_evidence`: its window operators' state, else its KafkaIO timestamp
  policy's watermark), or by `--watermark-delay` when given (`closure`); files of windows nothing decides are
  named as such (`undecided_windows`, info), never taken as not rewritten.

The records those replaced files held or lost are counted against the source topic by `rewrites`.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from splitaudit.audit.checks.beam_names import NamingTemplate, instant_text
from splitaudit.audit.checks.findings import (
    ERROR,
    INFO,
    MISSING_PANES,
    MISSING_SHARDS,
    REWRITTEN,
    UNDECIDED_WINDOWS,
    UNFINALIZED,
    WARNING,
    Finding,
    SinkFile,
)
from splitaudit.audit.checks.window_evidence import WindowVerdict
from splitaudit.savepoint.fileio import ListedFile

if TYPE_CHECKING:
    pass

SAMPLE_FILES = 20  # files a ledger finding names (its count is always exact)
TEMP_FOLDER_PREFIXES = (".temp-beam", ".temp-")  # Beam's FileBasedSink.TEMP_DIRECTORY_PREFIX, and older forms


@dataclass(frozen=True)
class Ledger:
    """The sink directory as the ledger sees it: its windowed files, its unfinalized ones, and how it was named."""

    files: tuple[SinkFile, ...]  # the finished files whose names the naming reads, by path
    unnamed: int  # finished files whose names it does not read
    temporary: tuple[ListedFile, ...]  # files in Beam's temporary folders
    naming: str

    @property
    def windowed(self) -> bool:
        """Whether the ledger has anything to say of windows: most finished files carry Beam's names."""
        return bool(self.files) and len(self.files) >= self.unnamed


def ledger_of(listing: Iterable[ListedFile], naming: NamingTemplate) -> Ledger:
    """The ledger of a sink directory's listing: finished files are those Spark reads (no path component
    starting with '.' or '_'), temporary ones those under a folder of Beam's temporary prefixes."""
    files, temporary, unnamed = [], [], 0
    for listed in listing:
        parts = listed.relative.split("/")
        if any(part.startswith(TEMP_FOLDER_PREFIXES) for part in parts[:-1]):
            temporary.append(listed)
            continue
        if any(part.startswith((".", "_")) for part in parts):
            continue  # hidden: Spark reads none of it (checksums, _SUCCESS markers)
        name = naming.parse(parts[-1])
        if name is None:
            unnamed += 1
            continue
        files.append(
            SinkFile(
                path=listed.relative,
                family=posixpath.join(posixpath.dirname(listed.relative), f"{name.prefix}*{name.suffix}"),
                window_start=name.window_start,
                window_end=name.window_end,
                pane=name.pane,
                pane_last=name.pane_last,
                shard=name.shard,
                shards=name.shards,
                size=listed.size,
                modified=listed.modified,
            )
        )
    return Ledger(tuple(files), unnamed, tuple(temporary), naming.described)


def check_ledger(ledger: Ledger) -> list[Finding]:
    """The findings the names alone give: unfinalized files, absent shards, skipped panes."""
    findings = []
    if ledger.temporary:
        size = sum(f.size for f in ledger.temporary)
        findings.append(
            Finding(
                kind=UNFINALIZED,
                severity=WARNING,
                topic=None,
                partition=None,
                count=len(ledger.temporary),
                sample=tuple({"path": f.relative, "size": f.size} for f in ledger.temporary[:SAMPLE_FILES]),
                detail=(
                    f"{len(ledger.temporary)} files ({size} bytes) in Beam's temporary folders, not in the sink's "
                    "finished files: a bundle's finalize never moved them into place (a crash, or a job still "
                    "writing); their records are not judged"
                ),
            )
        )
    if not ledger.windowed:
        return findings
    panes: dict[tuple[str, int | None, int | None, int], list[SinkFile]] = defaultdict(list)
    for f in ledger.files:
        panes[(f.family, f.window_start, f.window_end, f.pane)].append(f)
    absent = []
    for (family, start, end, pane), files in sorted(panes.items(), key=lambda item: str(item[0])):
        counts = {f.shards for f in files}
        present = {f.shard for f in files}
        for shards in sorted(counts):
            missing = sorted(set(range(shards)) - present)
            if missing:
                absent.append(
                    {
                        "file_family": family,
                        "window": _window(start, end),
                        "pane": pane,
                        "shards": shards,
                        "missing_shards": missing[:SAMPLE_FILES],
                    }
                )
    if absent:
        findings.append(
            Finding(
                kind=MISSING_SHARDS,
                severity=ERROR,
                topic=None,
                partition=None,
                count=len(absent),
                sample=tuple(absent[:SAMPLE_FILES]),
                detail=(
                    f"{len(absent)} window panes lack shards their names count ('k of n'): the records of a "
                    "missing shard are in no file"
                ),
            )
        )
    skipped = []
    windows: dict[tuple[str, int | None, int | None], set[int]] = defaultdict(set)
    for family, start, end, pane in panes:
        windows[(family, start, end)].add(pane)
    for (family, start, end), indexes in sorted(windows.items(), key=lambda item: str(item[0])):
        gaps = sorted(set(range(max(indexes) + 1)) - indexes)
        if gaps:
            skipped.append({"file_family": family, "window": _window(start, end), "missing_panes": gaps[:20]})
    if skipped:
        findings.append(
            Finding(
                kind=MISSING_PANES,
                severity=WARNING,
                topic=None,
                partition=None,
                count=len(skipped),
                sample=tuple(skipped[:SAMPLE_FILES]),
                detail=f"{len(skipped)} windows skip pane indexes: a firing of theirs wrote no file",
            )
        )
    return findings


@dataclass(frozen=True)
class Rewrites:
    """The windows a restored job wrote again, judged against the savepoint it was restored from."""

    ledger: Ledger  # with each rewritten file marked
    windows: tuple[tuple[int, int], ...]  # (start, end) epoch millis of every rewritten window
    findings: tuple[Finding, ...]  # rewritten_files, undecided_windows
    notes: tuple[str, ...]  # which windows had closed, and which rule decided each


@dataclass(frozen=True)
class Closure:
    """Which windows had closed (fired) at a savepoint by the `--watermark-delay` override: those ending by
    `closed_by` (seconds), and why."""

    savepoint: str
    written_at: float  # the savepoint's time (its _metadata's), seconds since the epoch
    closed_by: float
    basis: str


def closure(
    savepoint: str, written_at: float, watermark_delay: float, last_read: Mapping[tuple[str, int], int | None] | None
) -> Closure:
    """The windows a job had fired by its savepoint as `--watermark-delay` says: a Kafka read's watermark trails the
    Kafka time of the records it read by at most `watermark_delay` seconds, and a partition read to its end
    (nothing produced before the savepoint left unread) trails the savepoint's own time. `last_read` is, per
    source partition, the Kafka time (ms) of the last record read before the savepoint, or None for a partition
    read to its end; None altogether when the source cannot be asked (every partition is then taken as read to its
    end, and the basis says so)."""
    behind = {tp: millis for tp, millis in (last_read or {}).items() if millis is not None}
    watermark = min([written_at, *(millis / 1000 for millis in behind.values())])
    if last_read is None:
        why = "the job taken as having read every record produced before it (give --bootstrap to check)"
    elif behind:
        slowest = min(behind, key=lambda tp: behind[tp])
        why = f"{slowest[0]}-{slowest[1]} had read records up to Kafka time {_time(behind[slowest] / 1000)} only"
    else:
        why = "every source partition had been read to its end"
    basis = (
        f"windows ending by {_time(watermark - watermark_delay)} had closed at the savepoint {savepoint} "
        f"({_time(written_at)}): {why}, and a watermark trails the records' Kafka time by at most "
        f"{watermark_delay:g} s (--watermark-delay, given)"
    )
    return Closure(savepoint, written_at, watermark - watermark_delay, basis)


def windows_after(ledger: Ledger, written_at: float) -> tuple[tuple[int, int], ...]:
    """The windows of the files written after a savepoint's time (`written_at`, seconds)."""
    return tuple(sorted({f.window for f in ledger.files if f.window is not None and f.modified > written_at}))


def find_rewrites(
    ledger: Ledger, savepoint: str, written_at: float, verdicts: Iterable[WindowVerdict], evidence: str
) -> Rewrites:
    """The files written after the savepoint for windows that had closed at it: a restored job wrote them again.
    `verdicts` judge the windows written after it that hold records read before it (every other window's files are
    its first firing); `evidence` says what the rules had to go on. Files of undecided windows are named (info)."""
    judged = {v.window: v for v in verdicts}
    after = [f for f in ledger.files if f.window in judged and f.modified > written_at]
    rewritten = [f for f in after if f.window is not None and judged[f.window].closed]
    undecided = [f for f in after if f.window is not None and judged[f.window].closed is None]
    marked = {f.path for f in rewritten}
    files = tuple(replace(f, rewritten=True) if f.path in marked else f for f in ledger.files)
    windows = tuple(sorted({f.window for f in rewritten if f.window is not None}))
    notes = [f"which windows had closed at the savepoint: {evidence}", *_window_notes(judged.values(), after)]
    findings = []
    if rewritten:
        rules = sorted({judged[w].rule for w in windows})
        findings.append(
            Finding(
                kind=REWRITTEN,
                severity=ERROR,
                topic=None,
                partition=None,
                count=len(rewritten),
                sample=tuple(_file_sample(f, judged) for f in rewritten[:SAMPLE_FILES]),
                detail=(
                    f"{len(rewritten)} files of {len(windows)} windows that had closed at the savepoint {savepoint} "
                    f"were written after it ({_time(written_at)}): the restored job fired those windows again and "
                    "replaced their files; a file now holds only what the restored job read of its window"
                ),
                evidence=f"decided by {' and '.join(rules)}: {evidence}",
            )
        )
    if undecided:
        count = len({f.window for f in undecided})
        findings.append(
            Finding(
                kind=UNDECIDED_WINDOWS,
                severity=INFO,
                topic=None,
                partition=None,
                count=len(undecided),
                sample=tuple(_file_sample(f, judged) for f in undecided[:SAMPLE_FILES]),
                detail=(
                    f"{len(undecided)} files of {count} windows holding records read before the savepoint {savepoint} "
                    "were written after it, and nothing tells whether those windows had closed at it: they may have "
                    "been replaced (give --watermark-delay to decide by the job's watermark lag)"
                ),
                evidence=evidence,
            )
        )
    return Rewrites(replace(ledger, files=files), windows, tuple(findings), tuple(notes))


def _file_sample(f: SinkFile, judged: Mapping[tuple[int, int], WindowVerdict]) -> dict[str, object]:
    assert f.window is not None
    return {
        "path": f.path,
        "window": _window(f.window_start, f.window_end),
        "pane": f.pane,
        "modified": _time(f.modified),
        "rows": f.rows,
        "decided_by": judged[f.window].rule,
    }


def _window_notes(verdicts: Iterable[WindowVerdict], after: list[SinkFile]) -> list[str]:
    """One note per judged window (the first SAMPLE_FILES): what it was at the savepoint, and by which rule."""
    files: dict[tuple[int, int], int] = defaultdict(int)
    for f in after:
        if f.window is not None:
            files[f.window] += 1
    ordered = sorted(verdicts, key=lambda v: v.window)
    notes = []
    for verdict in ordered[:SAMPLE_FILES]:
        what = {True: "closed at the savepoint: rewritten", False: "open at the savepoint: first firing",
                None: "undecided"}[verdict.closed]  # fmt: skip
        notes.append(
            f"window {_window(*verdict.window)} ({files[verdict.window]} files written after the savepoint): "
            f"{what} (decided by {verdict.rule})"
        )
    if len(ordered) > SAMPLE_FILES:
        notes.append(f"and {len(ordered) - SAMPLE_FILES} more windows holding records read before the savepoint")
    return notes


def _window(start: int | None, end: int | None) -> str:
    return "global" if start is None or end is None else f"{instant_text(start)}..{instant_text(end)}"


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
