"""The users' job (beam_pipelines/java/users-job) through a savepoint restore, stock and patched, for each consumer
configuration: what it really reads twice, found by matching every output (the output topic, the TextIO JSON
lines files and the Parquet files, none with Kafka coordinates) back to the input by each record's unique
`timestamp`; and what the file sinks made of it, from snapshots of their files after the first job and at the end.

Per partition: N records before the savepoint (offsets 0..N-1), M while the job is down (N..N+M-1), K once the
restored job runs (N+M..N+M+K-1); parallelism 2. Where the stock build's twin reader (beam#31313: a fresh split
of every partition beside the restored one) starts decides what is read twice (the output topic shows it all):

- `none` (no group.id, so Kafka's auto.offset.reset=latest): at the log end at the restore, so the backlog is
  read once (by the restored reader) and every record produced after the restore twice: N+M..N+M+K-1.
- `group` (a group, commitOffsetsInFinalize, earliest): at the group's committed offset, N (the first job
  committed what its checkpoints covered): the backlog and everything after, N..N+M+K-1.
- `earliest` (no group, earliest): at 0, every offset: 0..N+M+K-1.

The file sinks window the records by their log-append time (2 s windows; each phase is produced in 4 batches a
second apart, so the N records span several windows, all closed before the savepoint). A twin reading records of
those closed windows makes them fire again, and both sinks write the same file names again: each such file is
replaced, its records show once although read twice (masked duplicates). With `group`, the group's committed
offsets can be treated between the savepoint and the restore:

- `committed` (left as the job committed them, N): nothing before the savepoint is re-read, no file is replaced;
  N..N+M+K-1 twice in the file sinks too (plain duplicates);
- `deleted` (the group deleted: the twin starts at the log start, as with `earliest`): every closed window's
  files are replaced with the same records, 0..N-1 masked, nothing lost;
- `mid-window` (set to X, half-way through a partition's offsets a..b in a closed window): that window's files
  are replaced holding only X..b of each partition: a..X-1 lost; the later closed windows' files replaced whole,
  X..N-1 masked.

Patched: every offset exactly once, in every output, and no file replaced, whatever happened to the group's
offsets. Every first savepoint is taken as soon as the outputs settle, moments after the last window ended: which
windows had closed at it, the audit reads from the savepoint's own window state (each judged window's note names
the rule). One run (`deleted`, 4 s windows) savepoints between two windows on purpose: one closed (its files
written) seconds before, one open (its first records read).

`make test` runs stock and patched with `none`, and stock `group` with `mid-window`; `make users-job` (marker
`users_job`) the other configurations, the run either side of a window's end and the one with the lineage kit's
columns.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from pyspark.sql import SparkSession

from splitaudit.audit.checks.beam_names import instant_text
from splitaudit.audit.checks.findings import (
    BY_LINEAGE,
    DOUBLE_ASSIGNMENT,
    INFERRED,
    LOST_BY_REWRITE,
    MASKED_DUPLICATES,
    REWRITTEN,
    UNFINALIZED,
)
from splitaudit.audit.checks.window_evidence import TIMESTAMP_POLICY, StateWindows, judge_windows, policy_watermark
from splitaudit.guard.twin import COMMITTED, LOG_END_AT_RESTORE, LOG_START
from splitaudit.guard.windows import REREADS_CLOSED_WINDOWS
from splitaudit.progress import Progress
from splitaudit.savepoint.fileio import SavepointOptions, metadata_written_at
from splitaudit_lab.scenario.users_job import UsersJobSettings, run_users_job_scenario, users_job_jar
from splitaudit_lab.scenario.users_job_results import OffsetRange, UsersJobReport, Window, window_text
from splitaudit_lab.stack.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.needs_build]

N, M, K = 200, 200, 200  # per partition: before the savepoint, while the job is down, after the restore
PARTITIONS = 4
LONG = pytest.mark.users_job

SOURCE_KEY = "get_json_object(CAST(value AS STRING), '$.timestamp')"  # the input record's identity

# Where the guard, asked before the restore, says each stock twin starts: (start_is, twin_start, the offsets
# already in the topic that it reads twice).
STOCK_TWIN: dict[str, tuple[str, int | None, tuple[OffsetRange, ...]]] = {
    "none": (LOG_END_AT_RESTORE, None, ()),
    "group": (COMMITTED, N, ((N, N + M - 1),)),
    "earliest": (LOG_START, 0, ((0, N + M - 1),)),
}

# Why the audit says the duplicates are a second reader's, not a replay: where their run starts against the
# savepoint's next offset N (at N itself only the jar tells a twin from a replay).
AT_N = "there too, and Beam 2.62.0 with beam-runners-flink-1.19, unpatched re-initialises restored splits"
STOCK_EVIDENCE = {"none": "above it", "group": AT_N, "earliest": AT_N}

# The offsets of every partition that the stock build's restored job reads twice (all in the output topic), per
# consumer configuration; and of those, the ones read before the savepoint, whose windows had closed: in the file
# sinks once (masked), the rest twice.
STOCK_READ_TWICE: dict[str, OffsetRange] = {
    "none": (N + M, N + M + K - 1),
    "group": (N, N + M + K - 1),
    "earliest": (0, N + M + K - 1),
}
STOCK_MASKED: dict[str, OffsetRange | None] = {"none": None, "group": None, "earliest": (0, N - 1)}
SINKS = ("text", "parquet")
LEDGER_KINDS = {UNFINALIZED, REWRITTEN, LOST_BY_REWRITE, MASKED_DUPLICATES}  # the findings of a sink's file names


def _run(
    stack: Stack,
    tmp_path: Path,
    variant: str,
    consumer: str,
    lineage: bool = False,
    group_offsets: str = "committed",
    open_window: int = 0,
    window_seconds: int = 2,
) -> UsersJobReport:
    settings = UsersJobSettings(
        consumer=consumer, group_offsets=group_offsets, window_seconds=window_seconds, partitions=PARTITIONS,
        before=N, down=M, after=K, parallelism=2, lineage=lineage, open_window=open_window,
    )  # fmt: skip
    jar = users_job_jar(variant)
    run_dir = tmp_path / f"{variant}-{consumer}-{group_offsets}"
    started = time.monotonic()
    report = run_users_job_scenario(stack, run_dir, jar, variant, Progress(), settings)
    print(f"{variant} {consumer} {group_offsets}: {time.monotonic() - started:.0f} s")  # shown with -s
    return report


def _truth(report: UsersJobReport) -> list[tuple[object, ...]]:
    """Per partition and output: phases, rows, offsets read twice, read more often, missing, masked, lost."""
    return [
        (p.partition, p.before, p.down, p.after, name, out.rows, out.read_twice, out.read_more, out.missing,
         out.masked_duplicates, out.lost_by_rewrite)
        for p in report.partitions
        for name, out in (("topic", p.topic), ("text", p.text), ("parquet", p.parquet))
    ]  # fmt: skip


def _runs(run: OffsetRange | None) -> tuple[OffsetRange, ...]:
    return () if run is None or run[0] > run[1] else (run,)


def _size(run: OffsetRange | None) -> int:
    return 0 if run is None else run[1] - run[0] + 1


def _every(run: OffsetRange | None) -> dict[int, OffsetRange]:
    """The same offsets of every partition."""
    return {} if run is None else dict.fromkeys(range(PARTITIONS), run)


def _expected(
    read_twice: dict[int, OffsetRange],
    masked: dict[int, OffsetRange] | None = None,
    lost: dict[int, OffsetRange] | None = None,
) -> list[tuple[object, ...]]:
    """Every partition's truth when the restored job read `read_twice[p]` of it (all in the output topic), the file
    sinks hold `masked[p]` of those once, and lost `lost[p]` (offsets before the twin's start in the window it
    re-read in part); the rest of `read_twice[p]` twice."""
    rows: list[tuple[object, ...]] = []
    for p in range(PARTITIONS):
        gone, hidden, read = (lost or {}).get(p), (masked or {}).get(p), read_twice.get(p)
        twice_in_files = read if hidden is None or read is None else (hidden[1] + 1, read[1])
        for name in ("topic", *SINKS):
            twice = read if name == "topic" else twice_in_files
            missing = () if name == "topic" else _runs(gone)  # the output topic lost nothing
            files = ((), ()) if name == "topic" else (_runs(hidden), _runs(gone))
            rows_in = N + M + K + _size(twice) - (0 if name == "topic" else _size(gone))
            rows.append(
                (p, (0, N - 1), (N, N + M - 1), (N + M, N + M + K - 1), name, rows_in,
                 _runs(twice), (), missing, *files)
            )  # fmt: skip
    return rows


def _dropped_late(report: UsersJobReport) -> dict[tuple[str, int], tuple[OffsetRange, ...]]:
    """Per (file sink, partition): the backlog's records a stock `none` restore's file sinks never got.

    Seen on real runs (the lineage one, 132 records of one partition): both file sinks lack records of the backlog
    produced while the job was down, which the output topic holds. The twin starts at the log end and at once
    reads records with current log-append times while the restored reader is still on the backlog's older ones;
    as far as the runs show, the windows' watermark then passes some backlog windows before their records arrive,
    and the windows drop them as late (allowed lateness 0). How many depends on timing; that they lie in the
    backlog N..N+M-1, and that nothing else is missing, is asserted."""
    dropped = {}
    for p in report.partitions:
        for name, out in (("text", p.text), ("parquet", p.parquet)):
            assert all(N <= first <= last <= N + M - 1 for first, last in out.missing), (name, p.partition, out)
            dropped[(name, p.partition)] = out.missing
    return dropped


def _minus_dropped(
    expected: list[tuple[object, ...]], dropped: dict[tuple[str, int], tuple[OffsetRange, ...]]
) -> list[tuple[object, ...]]:
    """Expected truth rows with the file sinks' late-dropped records missing."""
    rows = []
    for row in expected:
        gone = dropped.get((str(row[4]), int(str(row[0]))), ())
        if gone:
            count = sum(last - first + 1 for first, last in gone)
            row = (*row[:5], int(str(row[5])) - count, row[6], row[7], gone, *row[9:])
        rows.append(row)
    return rows


def _missing_findings(dropped: dict[tuple[str, int], tuple[OffsetRange, ...]], sink: str) -> list[tuple[Any, ...]]:
    """The audit's missing_records findings for a sink's late-dropped records, as `_row_findings` lists them."""
    return [
        ("missing_records", p, sum(b - a + 1 for a, b in gone), [list(r) for r in gone], None)
        for (name, p), gone in sorted(dropped.items())
        if name == sink and gone
    ]


def _replaced(report: UsersJobReport) -> list[tuple[str, Window | None, int, int]]:
    """Per file sink, each replaced file: its sink, window, rows before and after."""
    return [(sink.name, f.window, f.rows_before, f.rows_after) for sink in report.file_sinks for f in sink.replaced]


def _window_rows(report: UsersJobReport, window: Window) -> int:
    """Rows of a closed window's file after the first job (every record of the window, once)."""
    rows = {f.window: f.rows_before for sink in report.file_sinks for f in sink.replaced}
    return rows[window]


def _assert_file_names(report: UsersJobReport) -> None:
    """Each replaced file carries its window in Beam's default name: TextIO's `weather<start>-<end>-pane-...` and
    FileIO's `weather-<start>-<end>-...`."""
    for sink in report.file_sinks:
        assert sink.temp_files == ()
        for file in sink.replaced:
            assert file.window is not None
            window = window_text(file.window)
            expected = f"weather{window}-pane-0-last-00000-of-00001.json" if sink.name == "text" else (
                f"weather-{window}-00000-of-00001.parquet"
            )  # fmt: skip
            assert file.name == expected


@pytest.mark.parametrize(
    ("variant", "consumer"),
    [
        ("stock", "none"),
        ("patched", "none"),
        pytest.param("stock", "group", marks=LONG),
        pytest.param("patched", "group", marks=LONG),
        pytest.param("stock", "earliest", marks=LONG),
        pytest.param("patched", "earliest", marks=LONG),
    ],
)
def test_restore_reads_twice_where_the_twin_starts(stack: Stack, tmp_path: Path, variant: str, consumer: str) -> None:
    report = _run(stack, tmp_path, variant, consumer)
    stock = variant == "stock"
    expected = _expected(
        _every(STOCK_READ_TWICE[consumer] if stock else None), _every(STOCK_MASKED[consumer] if stock else None)
    )
    dropped = _dropped_late(report) if stock and consumer == "none" else {}
    assert _truth(report) == _minus_dropped(expected, dropped), _truth(report)
    assert report.unmatched_rows == (0, 0, 0)
    assert report.clean == (variant == "patched")
    # A twin at the log start (stock `earliest`) re-opens every window closed before the savepoint: each file of
    # both sinks is replaced by one with the same rows. Nothing else replaces a file.
    replaced_windows = report.windows_before if stock and consumer == "earliest" else ()
    assert len(report.windows_before) >= 2
    assert _replaced(report) == [
        (name, w, _window_rows(report, w), _window_rows(report, w)) for name in SINKS for w in replaced_windows
    ]
    _assert_file_names(report)

    # The guard, asked just before the restore (the topic then ended at N + M), predicted exactly that: the
    # twin's start, the part already in the topic read twice, and every record produced after the restore.
    assert report.guard.safe == (variant == "patched")
    predicted = [(t.partition, t.restored_from, t.start_is, t.twin_start, t.read_twice) for t in report.guard.twins]
    assert predicted == ([] if variant == "patched" else [(p, N, *STOCK_TWIN[consumer]) for p in range(PARTITIONS)])
    if variant == "stock":
        first, last = STOCK_READ_TWICE[consumer]
        assert first == (N + M if consumer == "none" else STOCK_TWIN[consumer][1])  # the log end at the restore
        assert last == N + M + K - 1  # and on to the last record produced after the restore

    # The audit of the Parquet output, which has no coordinates: mapped to the input by the record's timestamp,
    # every offset twice in it found, as double assignment inferred from where the run starts and ends (with
    # `earliest` the masked duplicates below N are not in the sink twice: the run starts at N).
    code, audit = _audit_identity(stack, report)
    if variant == "patched":
        assert (code, audit["findings"], audit["summary"]["duplicate_records"]) == (0, [], 0)
        return
    first, last = STOCK_READ_TWICE[consumer]
    masked = STOCK_MASKED[consumer]
    first = first if masked is None else masked[1] + 1
    assert code == 1
    assert _row_findings(audit) == _missing_findings(dropped, "parquet") + [
        (DOUBLE_ASSIGNMENT, p, last - first + 1, [[first, last]], INFERRED) for p in range(PARTITIONS)
    ]
    # The Parquet sink's ledger: with `earliest` every closed window's file rewritten, 0..N-1 masked; else none.
    from_names = [(f["kind"], f["partition"], f["count"], f["offset_ranges"]) for f in audit["findings"]]
    expected_names = [] if masked is None else [
        (REWRITTEN, None, len(report.windows_before), []),
        *[(MASKED_DUPLICATES, p, _size(masked), [list(masked)]) for p in range(PARTITIONS)],
    ]  # fmt: skip
    assert [f for f in from_names if f[0] in LEDGER_KINDS] == expected_names
    assert audit["summary"]["missing_records"] == sum(f[2] for f in _missing_findings(dropped, "parquet"))
    assert audit["summary"]["duplicate_records"] == PARTITIONS * (last - first + 1)
    (evidence,) = {f["evidence"] for f in audit["findings"] if f["kind"] == DOUBLE_ASSIGNMENT and f["partition"] == 0}
    assert f"every offset {first}..{last} is in the sink at least twice" in evidence
    assert "the next offset of the savepoint the job was restored from" in evidence
    assert f" is {N}, the run starts {STOCK_EVIDENCE[consumer]}" in evidence


def _audit_identity(stack: Stack, report: UsersJobReport, *, by_identity: bool = True) -> tuple[int, dict[str, Any]]:
    """`splitaudit audit` of the run's Parquet output against its input topic, restored from the first savepoint
    with the run's jar: by the records' timestamp, or by the lineage kit's coordinates."""
    identity = ["--sink-key", "timestamp", "--source-key", SOURCE_KEY] if by_identity else []
    command = [
        sys.executable, "-m", "splitaudit", "--json", "audit", "--master", "local[1]",
        "--sink", report.parquet_dir, "--bootstrap", stack.kafka.bootstrap, "--topic", report.input_topic,
        "--before", report.savepoint_before, "--savepoint", report.savepoint_after, "--jar", report.jar, *identity,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, document


@LONG
def test_lineage_columns_name_the_two_readers(stack: Stack, spark: SparkSession, tmp_path: Path) -> None:
    """The same job with the lineage kit's columns in its Parquet rows: the same offsets read twice, and each of
    them by two readers of the restored job, one each; everything else by one reader. Spark reads the files (with
    ':' in their names)."""
    report = _run(stack, tmp_path, "stock", "none", lineage=True)
    dropped = _dropped_late(report)
    assert _truth(report) == _minus_dropped(_expected(_every(STOCK_READ_TWICE["none"])), dropped), _truth(report)
    late = sum(f[2] for f in _missing_findings(dropped, "parquet"))
    assert spark.read.parquet(report.parquet_dir).count() == PARTITIONS * (N + M + 2 * K) - late
    rows = ds.dataset(report.parquet_dir, format="parquet").to_table()
    assert rows.column_names[-7:] == ["topic", "partition", "offset", "subtask", "reader_id", "attempt", "job_id"]
    assert set(rows["topic"].to_pylist()) == {report.input_topic}
    assert set(rows["job_id"].to_pylist()) == {report.job_id_before, report.job_id_after}
    assert set(rows["attempt"].to_pylist()) == {0}
    per_offset = rows.group_by(["partition", "offset"]).aggregate(
        [("reader_id", "count_distinct"), ("job_id", "count_distinct"), ("offset", "count")]
    )
    twice = per_offset.filter(pc.equal(per_offset["offset_count"], 2))
    assert twice.num_rows == PARTITIONS * K
    assert set(twice["reader_id_count_distinct"].to_pylist()) == {2}  # two readers ...
    assert set(twice["job_id_count_distinct"].to_pylist()) == {1}  # ... of one job: double assignment
    assert sorted(twice["offset"].to_pylist()) == sorted(list(range(N + M, N + M + K)) * PARTITIONS)

    # The audit by the kit's coordinates classifies the same offsets from lineage: two readers of one job.
    code, audit = _audit_identity(stack, report, by_identity=False)
    assert code == 1
    assert _row_findings(audit) == _missing_findings(dropped, "parquet") + [
        (DOUBLE_ASSIGNMENT, p, K, [[N + M, N + M + K - 1]], BY_LINEAGE) for p in range(PARTITIONS)
    ]
    assert audit["summary"]["missing_records"] == late


@LONG
def test_deleted_group_offsets_replace_every_closed_window(stack: Stack, tmp_path: Path) -> None:
    """The group deleted before the restore: the stock twin starts at the log start and re-reads every record of the
    closed windows; both sinks write each of those windows' files again with the same records. The output topic
    holds 0..N-1 twice, the file sinks once (masked), nothing lost; N.. twice everywhere."""
    report = _run(stack, tmp_path, "stock", "group", group_offsets="deleted")
    expected = _expected(_every((0, N + M + K - 1)), masked=_every((0, N - 1)))
    assert _truth(report) == expected, _truth(report)
    assert len(report.windows_before) >= 2
    assert _replaced(report) == [
        (name, w, _window_rows(report, w), _window_rows(report, w)) for name in SINKS for w in report.windows_before
    ]
    assert sum(_window_rows(report, w) for w in report.windows_before) == PARTITIONS * N
    _assert_file_names(report)
    assert report.unmatched_rows == (0, 0, 0)
    # The guard, asked after the group was deleted: the twin starts at the log start.
    twins = [(t.partition, t.start_is, t.twin_start) for t in report.guard.twins]
    assert twins == [(p, LOG_START, 0) for p in range(PARTITIONS)]
    # The audit of the text sink as Beam wrote it: every closed window's file rewritten, 0..N-1 masked, none lost.
    code, audit = _audit_file_sink(stack, report, report.text_dir, "json")
    assert code == 1
    _assert_ledger_verdict(report, "text", audit, {}, _every((0, N - 1)), None)


def test_mid_window_group_offsets_lose_the_part_of_the_window_not_re_read(stack: Stack, tmp_path: Path) -> None:
    """The group's offsets set, before the restore, half-way through each partition's offsets a..b in a window that
    closed before the savepoint (X = a + (b - a + 1) // 2): the stock twin re-reads X.. of each partition, the
    window fires again with X..b only and its files are replaced by smaller ones: a..X-1 lost from both sinks,
    although read once and never by the restored job. The later closed windows' files are replaced whole: X..N-1
    masked."""
    report = _run(stack, tmp_path, "stock", "group", group_offsets="mid-window")
    mids = {m.partition: m for m in report.mid_window}
    assert sorted(mids) == list(range(PARTITIONS))
    (window,) = {m.window for m in report.mid_window}  # one window, cut in every partition
    assert window in report.windows_before[:-1]  # closed before the savepoint, and not the last one
    for m in mids.values():
        first, last = m.window_offsets
        assert 0 <= first < m.offset == first + (last - first + 1) // 2 <= last < N
    lost = {p: (m.window_offsets[0], m.offset - 1) for p, m in mids.items()}
    masked = {p: (m.offset, N - 1) for p, m in mids.items()}
    read_twice = {p: (m.offset, N + M + K - 1) for p, m in mids.items()}
    assert _truth(report) == _expected(read_twice, masked, lost), _truth(report)
    assert report.unmatched_rows == (0, 0, 0)

    # The files of the cut window and of every closed window after it are replaced, in both sinks; only the cut
    # window's lost rows: exactly a..X-1 of each partition.
    later = [w for w in report.windows_before if w >= window]
    taken = metadata_written_at(report.savepoint_before) - report.windows_before[-1][1] / 1000
    print(f"savepoint {taken:.1f} s after the last window ended")  # shown with -s
    gone = sum(m.offset - m.window_offsets[0] for m in mids.values())
    assert _replaced(report) == [
        (name, w, _window_rows(report, w), _window_rows(report, w) - (gone if w == window else 0))
        for name in SINKS
        for w in later
    ]
    _assert_file_names(report)
    # The guard, asked after the offsets were set: the twin starts at them, re-reading X..N-1 of each partition,
    # read before the savepoint; with the text sink it names the window files that will be written again (the cut
    # window's and every later closed one's) and the window re-read from inside (the cut one).
    twins = [(t.partition, t.start_is, t.twin_start, t.read_twice) for t in report.guard.twins]
    assert twins == [(p, COMMITTED, mids[p].offset, ((mids[p].offset, N + M - 1),)) for p in range(PARTITIONS)]
    closed = [f for f in report.guard.findings if f.kind == REREADS_CLOSED_WINDOWS]
    assert [(f.partition, f.count, f.offset_ranges) for f in closed] == [
        (p, N - mids[p].offset, ((mids[p].offset, N - 1),)) for p in range(PARTITIONS)
    ]
    for finding in closed:
        assert f"{len(later)} files of {len(later)} windows ({instant_text(later[0][0])}.." in finding.detail
        assert f"re-read from inside: {instant_text(window[0])}..{instant_text(window[1])}" in finding.detail

    # The audit of both file sinks as Beam wrote them (':' in every name): the ledger names the replaced files, and
    # the records of their windows read before the savepoint are counted exactly, lost or masked, per partition.
    unfinished = _leave_unfinalized_bundle(report)
    audits = {}
    for sink, sink_format in (("text", "json"), ("parquet", "parquet")):
        code, audits[sink] = _audit_file_sink(stack, report, getattr(report, f"{sink}_dir"), sink_format)
        assert code == 1
        _assert_ledger_verdict(report, sink, audits[sink], lost, masked, unfinished if sink == "text" else None)
        # Savepointed as soon as the outputs settled (no longer waiting for the old 10 s --watermark-delay margin
        # to pass): each window told closed by the savepoint's window state.
        assert _decided(audits[sink]) == {w: ("closed", "state") for w in later}
    # A copy of the text sink with ':' renamed and the temporary folder left out (what a user had to make before):
    # the same findings of the rows; its names no longer say a window (read as Beam's unwindowed `-SSSSS-of-NNNNN`
    # names), so nothing is judged rewritten.
    copy = _renamed_copy(Path(report.text_dir), tmp_path / "text-renamed")
    _, renamed = _audit_file_sink(stack, report, str(copy), "json")
    assert _row_findings(renamed) == _row_findings(audits["text"])
    assert {(f["window_start"], f["rewritten"]) for f in renamed["ledger"]} == {(None, False)}
    assert {f["kind"] for f in audits["text"]["findings"]} - {f["kind"] for f in renamed["findings"]} == LEDGER_KINDS


OPEN = 50  # records per partition produced into the window closing just before the savepoint, and the one after


@LONG
def test_windows_either_side_of_the_savepoint_are_told_apart_by_its_state(stack: Stack, tmp_path: Path) -> None:
    """Savepointed moments after a window closed (its files written: OPEN records per partition, offsets
    N..N+OPEN-1) and with the next window's first records read (OPEN more, buffered in the window operators'
    state): inside the old 10 s `--watermark-delay` margin, where the ledger used to see no rewrite. The group
    deleted, the stock twin re-reads every offset: the closed windows fire again and their files are replaced
    (0..N+OPEN-1 masked); the open window fires for the first time after the restore with its records twice (the
    restored state's and the twin's). The audit of each file sink, against what the files and the source measured,
    finds exactly the replaced files and the masked records, each window decided by the savepoint's state."""
    report = _run(stack, tmp_path, "stock", "group", group_offsets="deleted", open_window=OPEN, window_seconds=4)
    *closed, still_open = report.windows_before
    # The open window had no file at the savepoint (the job had not fired it), the closed ones had theirs.
    assert [s.files_before for s in report.file_sinks] == [len(closed)] * 2
    taken = metadata_written_at(report.savepoint_before)
    print(f"savepoint {taken - closed[-1][1] / 1000:.1f} s after the last closed window ended")  # shown with -s
    assert taken - closed[-1][1] / 1000 < 10  # inside the old margin
    # The truth, from the files and the source: every closed window's files replaced with the same rows, their
    # records in the file sinks once though read twice, the open window's records and everything after twice.
    assert _replaced(report) == [(name, w, _window_rows(report, w), _window_rows(report, w)) for name in SINKS
                                 for w in closed]  # fmt: skip
    masked, twice = (0, N + OPEN - 1), (N + OPEN, N + 2 * OPEN + M + K - 1)
    for p in report.partitions:
        for out in (p.text, p.parquet):
            assert (out.masked_duplicates, out.read_twice, out.lost_by_rewrite) == ((masked,), (twice,), ())
    for sink, sink_format in (("text", "json"), ("parquet", "parquet")):
        code, audit = _audit_file_sink(stack, report, getattr(report, f"{sink}_dir"), sink_format)
        assert code == 1
        _assert_ledger_verdict(report, sink, audit, {}, _every(masked), None, twice)
        decided = {w: ("closed", "state") for w in closed} | {still_open: ("open", "state")}
        assert _decided(audit) == decided
    # Where the state could not say, the job's timestamp policy's watermark at the savepoint (its KafkaIO
    # checkpoint marks') decides these windows the same way.
    policy = policy_watermark(report.savepoint_before, SavepointOptions())
    unread = StateWindows(frozenset(), (), 0, "not read")
    verdicts = judge_windows(report.windows_before, unread, policy, None)
    assert [(v.closed, v.rule) for v in verdicts] == [(True, TIMESTAMP_POLICY)] * len(closed) + [
        (False, TIMESTAMP_POLICY)
    ]


# A ledger note on one judged window (`ledger._window_notes`): its bounds, what it was at the savepoint, the rule.
WINDOW_NOTE = re.compile(
    r"^window (\S+)\.\.(\S+) \(\d+ files written after the savepoint\): (closed|open|undecided)\b.*"
    r"\(decided by ([^)]+)\)$"
)


def _decided(audit: dict[str, Any]) -> dict[Window, tuple[str, str]]:
    """Per window the ledger judged (from its notes): closed, open or undecided at the savepoint, and the rule."""
    decided = {}
    for note in audit["notes"]:
        match = WINDOW_NOTE.match(note)
        if match:
            start, end, what, rule = match.groups()
            decided[(_millis(start), _millis(end))] = (what, rule)
    return decided


def _millis(instant: str) -> int:
    """Joda's `Instant.toString()` (`2026-11-25T11:50:20.000Z`) as epoch milliseconds."""
    return int(datetime.strptime(instant, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000)


def _audit_file_sink(stack: Stack, report: UsersJobReport, sink: str, sink_format: str) -> tuple[int, dict[str, Any]]:
    """`splitaudit audit` of a file sink as Beam wrote it, by the records' timestamp, restored from the first
    savepoint with the run's jar, against the input topic."""
    command = [
        sys.executable, "-m", "splitaudit", "--json", "audit", "--master", "local[1]",
        "--sink", sink, "--sink-format", sink_format, "--bootstrap", stack.kafka.bootstrap,
        "--topic", report.input_topic, "--before", report.savepoint_before, "--savepoint", report.savepoint_after,
        "--jar", report.jar, "--sink-key", "timestamp", "--source-key", SOURCE_KEY,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, document


def _leave_unfinalized_bundle(report: UsersJobReport) -> tuple[str, int]:
    """What a crash between a bundle's write and its finalize leaves in the text sink: a bundle file in a
    `.temp-beam-<uuid>` folder (here one of the run's own finished files, copied there once the run was over: the
    crash cannot be timed on a real job). Its path relative to the sink, and its size."""
    sink = Path(report.text_dir)
    source = sorted(p for p in sink.iterdir() if p.is_file())[-1]
    folder = sink / ".temp-beam-5f1c2a9e-0b6e-4a2f-9f00-1b2c3d4e5f60"
    folder.mkdir()
    shutil.copy2(source, folder / "7c1d0e2f-3a4b-4c5d-8e9f-a0b1c2d3e4f5")
    return f"{folder.name}/7c1d0e2f-3a4b-4c5d-8e9f-a0b1c2d3e4f5", source.stat().st_size


def _renamed_copy(sink: Path, target: Path) -> Path:
    target.mkdir()
    for path in sink.iterdir():
        if path.is_file():
            shutil.copy2(path, target / path.name.replace(":", "_"))
    return target


def _row_findings(audit: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The findings of the sink's rows (not of its file names), as compared between two copies of a sink."""
    return [
        (f["kind"], f["partition"], f["count"], f["offset_ranges"], f["classified_by"])
        for f in audit["findings"]
        if f["kind"] not in LEDGER_KINDS
    ]


def _assert_ledger_verdict(
    report: UsersJobReport,
    sink: str,
    audit: dict[str, Any],
    lost: dict[int, OffsetRange],
    masked: dict[int, OffsetRange],
    unfinished: tuple[str, int] | None,
    twice: OffsetRange = (N, N + M + K - 1),
) -> None:
    """The audit of one file sink against the run's truth: the replaced files marked in the ledger and counted,
    the lost and masked records of each partition exactly, the plain duplicates (`twice`) as the twin's."""
    (truth,) = [s for s in report.file_sinks if s.name == sink]
    rewritten = sorted(f["path"] for f in audit["ledger"] if f["rewritten"])
    assert rewritten == sorted(f.name for f in truth.replaced)
    kinds: dict[str, list[tuple[Any, ...]]] = {}
    for f in audit["findings"]:
        kinds.setdefault(f["kind"], []).append((f["partition"], f["count"], f["offset_ranges"]))
    assert kinds.get(REWRITTEN, []) == ([(None, len(truth.replaced), [])] if truth.replaced else [])
    assert kinds.get(LOST_BY_REWRITE, []) == [(p, _size(run), [list(run)]) for p, run in sorted(lost.items())]
    assert kinds.get(MASKED_DUPLICATES, []) == [(p, _size(run), [list(run)]) for p, run in sorted(masked.items())]
    assert kinds.get("missing_records", []) == kinds.get(LOST_BY_REWRITE, [])  # the gaps, and why
    if report.variant == "stock":  # read twice by the twin after the savepoint, in the sink twice
        assert kinds[DOUBLE_ASSIGNMENT] == [(p, _size(twice), [list(twice)]) for p in range(PARTITIONS)]
    else:
        assert DOUBLE_ASSIGNMENT not in kinds
    if unfinished is None:
        assert UNFINALIZED not in kinds
    else:
        (finding,) = [f for f in audit["findings"] if f["kind"] == UNFINALIZED]
        assert (finding["count"], finding["sample"]) == (1, [{"path": unfinished[0], "size": unfinished[1]}])
    per_window = sum(f["rows"] for f in audit["ledger"])
    assert per_window == sum(p.text.rows if sink == "text" else p.parquet.rows for p in report.partitions)


@LONG
@pytest.mark.parametrize("group_offsets", ["deleted", "mid-window"])
def test_patched_reads_once_whatever_the_group_offsets(stack: Stack, tmp_path: Path, group_offsets: str) -> None:
    """Patched, the restored job has no twin: the group's offsets, deleted or cut mid-window, change nothing. No
    file replaced, every record once in every output."""
    report = _run(stack, tmp_path, "patched", "group", group_offsets=group_offsets)
    assert _truth(report) == _expected({}), _truth(report)
    assert (report.clean, _replaced(report), report.guard.safe) == (True, [], True)
    assert len(report.mid_window) == (PARTITIONS if group_offsets == "mid-window" else 0)
    # The audit of the text sink as Beam wrote it: no file rewritten, nothing masked or lost, clean.
    code, audit = _audit_file_sink(stack, report, report.text_dir, "json")
    assert (code, audit["findings"]) == (0, [])
    _assert_ledger_verdict(report, "text", audit, {}, {}, None)
