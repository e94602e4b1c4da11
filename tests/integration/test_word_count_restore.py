"""The windowed word count of the users' job module (`WordCountPipeline`: KafkaIO -> words -> processing-time
panes -> Count.perElement -> a Kafka topic) restored from a savepoint on Flink 1.19.3 with Beam 2.62.0, stock
and patched, and `splitaudit audit --aggregate` of its output topic against its input topic.

Per partition (4, parallelism 2): N lines before SP0 (offsets 0..N-1), M while the job is down (N..N+M-1), K once
the restored job runs (N+M..N+M+K-1); SP1 once the restored job's output has settled. The truth is computed here
with pyarrow from the records read back from both topics (`splitaudit_lab.scenario.word_count.words_in`, `per_key`),
not by the audit: the expected count per word over the span SP0 -> SP1 (offsets N..N+M+K-1), and the excess of
the stock build, every word of the lines from where its twin reader started (beam#31313) to SP1:

- `none` (no group.id: Kafka's latest): the log end when the restore was submitted (N+M, noted by the scenario
  then), so the K lines produced after the restore are counted twice;
- `earliest`: the log start (0), so every line, those read before SP0 included, is counted once more after it;
- `group` with its committed offsets set to 100 while the job is down: the committed offset, lines 100.. again
  (which the audit, reading the group's offsets after the restored job committed its own, cannot infer).

The same with event-time windows (`--eventTime`: 2 s fixed windows of the log-append time, one pane each at the
watermark), `none`: the twin's reads of the K lines fall in the same windows as the restored reader's, so each
(window, word) of those lines counts twice, and the audit reconciles per window (`--event-time`, `--sink-window`).

Before the audit is asserted, the output the restored job wrote is checked against that truth word by word: the
twin's reads are what the job really did, not a model. `make test` runs the stock `none` restore (its run and
audits took 97 s on the 2-core machine when quiet, 4.7 minutes when busy); `make word-count` runs them all (8
minutes quiet, the others marked `users_job`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from splitaudit.audit.checks.findings import AGGREGATE_EXCESS, AGGREGATE_UNAUDITABLE, DOUBLE_ASSIGNMENT, INFERRED
from splitaudit.audit.checks.hypotheses import COMMITTED, LOG_END_AT_RESTORE, LOG_START, SAVEPOINT_OFFSET
from splitaudit.clients import kafka as kafka_client
from splitaudit.progress import Progress
from splitaudit_lab.scenario.users_job import users_job_jar
from splitaudit_lab.scenario.word_count import (
    GLOBAL_WINDOW,
    WindowKey,
    WordCountReport,
    WordCountSettings,
    per_key,
    run_word_count_scenario,
    words_in,
)
from splitaudit_lab.stack.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.needs_build]
LONG = pytest.mark.users_job  # `make word-count`, not `make test`

N, M, K = 250, 250, 250
PARTITIONS = 4
WORDS = "split(CAST(value AS STRING), ' ')"  # --group-key: each line's words
SINK_KEY = "CAST(key AS STRING)"
SINK_VALUE = "get_json_object(CAST(value AS STRING), '$.value')"
# Event time: the source record's Kafka (log-append) time in ms, and the window start the job writes.
EVENT_TIME = ("--event-time", "CAST(timestamp AS DOUBLE) * 1000", "--window-size", "2")
SINK_WINDOW = ("--sink-window", "get_json_object(CAST(value AS STRING), '$.window_start')")


def _run(
    stack: Stack, tmp_path: Path, variant: str, consumer: str, event_time: bool = False, commit_at: int | None = None
) -> WordCountReport:
    settings = WordCountSettings(
        consumer=consumer, event_time=event_time, window_seconds=2, partitions=PARTITIONS, before=N, down=M, after=K,
        commit_at=commit_at,
    )  # fmt: skip
    started = time.monotonic()
    run_dir = tmp_path / f"{variant}-{consumer}-{'event' if event_time else 'processing'}"
    report = run_word_count_scenario(stack, run_dir, users_job_jar(variant), variant, Progress(), settings)
    print(f"word count {variant} {consumer} event time {event_time}: {time.monotonic() - started:.0f} s")  # with -s
    return report


def _audit(stack: Stack, report: WordCountReport, aggregate: str, *extra: str) -> tuple[int, dict[str, Any]]:
    """`splitaudit audit --aggregate` of the run's output topic against its input topic, SP0 -> SP1."""
    command = [
        sys.executable, "-m", "splitaudit", "--json", "audit", "--master", "local[1]",
        "--sink", report.output_topic, "--sink-format", "kafka", "--bootstrap", stack.kafka.bootstrap,
        "--topic", report.input_topic, "--before", report.savepoint_before, "--savepoint", report.savepoint_after,
        "--aggregate", aggregate, "--group-key", WORDS, "--sink-group-key", SINK_KEY, "--sink-value", SINK_VALUE,
        *(EVENT_TIME + SINK_WINDOW if report.settings.event_time else ()),
        *(("--group", report.group) if report.settings.consumer == "group" else ()), *extra,
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    print(f"audit --aggregate {aggregate}: {time.monotonic() - started:.0f} s, exit {done.returncode}")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    print(json.dumps(document.get("aggregate")))  # the figures docs/audit.md shows, with -s
    return done.returncode, document


def _span(report: WordCountReport) -> dict[int, tuple[int, int]]:
    """SP0 -> SP1 per partition; every phase's lines were read before each savepoint, so N and N+M+K."""
    span = {p: (report.sp0_offsets[p], report.sp1_offsets[p]) for p in range(PARTITIONS)}
    assert span == dict.fromkeys(range(PARTITIONS), (N, N + M + K))
    return span


def _truth(report: WordCountReport, twin: dict[int, int] | None) -> tuple[dict[WindowKey, int], dict[WindowKey, int]]:
    """Per (window, word), the expected count over the span and the excess the twin started at `twin` (None: no
    twin) counted; asserted against what the restored job wrote."""
    window_ms = 2000 if report.settings.event_time else None
    expected = words_in(report.source, _span(report), "count", window_ms)
    twice = {} if twin is None else {p: (s, N + M + K) for p, s in twin.items()}
    excess = words_in(report.source, twice, "count", window_ms) if twice else {}
    emitted = per_key(report.sink, report.output_at_restore)
    assert emitted == dict(Counter(expected) + Counter(excess))  # what the job wrote, word by word
    return expected, excess


def _assert_totals(
    report: WordCountReport, document: dict[str, Any], expected: dict[WindowKey, int], excess: dict[WindowKey, int]
) -> None:
    totals = document["aggregate"]
    keys = len(expected.keys() | excess.keys())
    windows = "event_time" if report.settings.event_time else "processing_time"
    assert (totals["function"], totals["windows"], totals["keys"]) == ("count", windows, keys)
    assert (totals["expected_total"], totals["emitted_total"]) == (
        sum(expected.values()),
        sum(expected.values()) + sum(excess.values()),
    )
    assert (totals["excess_total"], totals["excess_keys"]) == (sum(excess.values()), len(excess))
    assert (totals["deficit_total"], totals["deficit_keys"]) == (0, 0)


def _assert_hypotheses(
    report: WordCountReport,
    document: dict[str, Any],
    excess: dict[WindowKey, int],
    chosen: str | None,
    committed: int | None = None,
) -> None:
    """The twin starts tested, each with the keys it mispredicts, counted here from the source: a start predicts
    each key's excess as its count from the start to SP1. The restore's log end is N+M on every partition (nothing
    was produced between the restore and the restored job's first output); `committed`: the group's committed
    offset on every partition when the audit ran (tested with --group)."""
    window_ms = 2000 if report.settings.event_time else None
    tested = []
    group = () if committed is None else ((COMMITTED, committed),)
    for kind, start in ((SAVEPOINT_OFFSET, N), (LOG_START, 0), *group, (LOG_END_AT_RESTORE, N + M)):
        predicted = words_in(report.source, dict.fromkeys(range(PARTITIONS), (start, N + M + K)), "count", window_ms)
        wrong = sum(1 for key in predicted.keys() | excess.keys() if predicted.get(key, 0) != excess.get(key, 0))
        starts = [[report.input_topic, p, start] for p in range(PARTITIONS)]
        tested.append((kind, starts, wrong, kind == chosen))
    hypotheses = document["aggregate"]["hypotheses"]
    assert [(h["start_is"], h["starts"], h["keys_wrong"], h["chosen"]) for h in hypotheses] == tested


def _assert_stock(report: WordCountReport, stack: Stack, twin: dict[int, int], start_is: str) -> dict[str, Any]:
    expected, excess = _truth(report, twin)
    code, document = _audit(stack, report, "count")
    assert code == 1
    _assert_totals(report, document, expected, excess)
    _assert_hypotheses(report, document, excess, start_is)
    findings = document["findings"]
    found = next(f for f in findings if f["kind"] == AGGREGATE_EXCESS)
    assert found["count"] == len(excess)
    largest = sorted(excess.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    shown = [(s.get("window_start", GLOBAL_WINDOW), s["key"], s["expected"], s["difference"]) for s in found["sample"]]
    assert shown == [(*key, expected.get(key, 0), n) for key, n in largest]
    doubles = sorted((f for f in findings if f["kind"] == DOUBLE_ASSIGNMENT), key=lambda f: f["partition"])
    assert [(f["topic"], f["partition"], f["offset_ranges"], f["count"], f["classified_by"]) for f in doubles] == [
        (report.input_topic, p, [[twin[p], N + M + K - 1]], N + M + K - twin[p], INFERRED) for p in range(PARTITIONS)
    ]
    assert start_is in doubles[0]["evidence"]
    return document


def test_stock_counts_the_lines_after_the_restore_twice_from_the_log_end(stack: Stack, tmp_path: Path) -> None:
    """`none`: the twin starts at the log end at the restore, N+M: the K lines after the restore count twice;
    inferred from the excess alone as `log_end_at_restore`. A max of the same output is unauditable, not clean."""
    report = _run(stack, tmp_path, "stock", "none")
    twin = dict(report.log_end_at_restore)
    assert twin == dict.fromkeys(range(PARTITIONS), N + M)
    document = _assert_stock(report, stack, twin, LOG_END_AT_RESTORE)
    assert any("log end at the restore" in note for note in document["notes"])

    code, document = _audit(stack, report, "max:length(value)")
    assert code == 0  # a warning: the exit code says no error was found, the finding that nothing was audited
    assert [f["kind"] for f in document["findings"]] == [AGGREGATE_UNAUDITABLE]
    assert "not clean" in document["findings"][0]["detail"]


@LONG
def test_stock_event_time_counts_the_lines_after_the_restore_twice_in_their_windows(
    stack: Stack, tmp_path: Path
) -> None:
    """Event time (2 s fixed windows of the log-append time), `none`: the twin at the log end at the restore reads
    the K lines after it in the same windows as the restored reader, before the watermark closes them: each
    (window, word) of those lines counts twice, reconciled per window and inferred as `log_end_at_restore`."""
    report = _run(stack, tmp_path, "stock", "none", event_time=True)
    twin = dict(report.log_end_at_restore)
    assert twin == dict.fromkeys(range(PARTITIONS), N + M)
    _assert_stock(report, stack, twin, LOG_END_AT_RESTORE)


@LONG
def test_stock_earliest_counts_every_line_again_from_the_log_start(stack: Stack, tmp_path: Path) -> None:
    """`earliest`: the twin starts at the log start, 0: every line, those before SP0 included, counts once more
    after SP0; inferred as `log_start`."""
    report = _run(stack, tmp_path, "stock", "earliest")
    _assert_stock(report, stack, dict.fromkeys(range(PARTITIONS), 0), LOG_START)


@LONG
def test_stock_group_reset_while_down_is_counted_not_inferred(stack: Stack, tmp_path: Path) -> None:
    """`group` (commitOffsetsInFinalize, earliest), its committed offsets set to 100 while the job is down: the twin
    starts at the group's committed offset, so lines 100.. of every partition count once more after SP0 (the output
    shows it). By the audit the restored job has committed its own offsets on finalize (SP1's, N+M+K): the
    committed offset Kafka gives then is not the one at the restore. The audit reports the excess exactly and
    infers no start (none explains every key) rather than a wrong one."""
    report = _run(stack, tmp_path, "stock", "group", commit_at=100)
    assert dict(report.committed_at_restore) == dict.fromkeys(range(PARTITIONS), 100)
    expected, excess = _truth(report, dict.fromkeys(range(PARTITIONS), 100))
    now = kafka_client.partition_offsets(stack.kafka.bootstrap, report.input_topic, report.group)
    assert {p: o.committed for (_, p), o in now.items()} == dict.fromkeys(range(PARTITIONS), N + M + K)
    code, document = _audit(stack, report, "count")
    assert code == 1
    _assert_totals(report, document, expected, excess)
    _assert_hypotheses(report, document, excess, None, committed=N + M + K)
    assert not [f for f in document["findings"] if f["kind"] == DOUBLE_ASSIGNMENT]
    assert any("no one twin start per partition explains" in note for note in document["notes"])


@LONG
def test_patched_counts_every_word_once(stack: Stack, tmp_path: Path) -> None:
    """Patched, `none`: no twin; the output equals the source over the span on every word, exit 0."""
    report = _run(stack, tmp_path, "patched", "none")
    expected, excess = _truth(report, None)
    code, document = _audit(stack, report, "count")
    assert code == 0
    _assert_totals(report, document, expected, excess)
    assert not [f for f in document["findings"] if f["kind"] in (AGGREGATE_EXCESS, DOUBLE_ASSIGNMENT)]
    _assert_hypotheses(report, document, excess, None)
