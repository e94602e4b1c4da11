"""The aggregate reconciliation on Spark (local[2]), over source records shaped as Spark's Kafka source gives them
and sink rows written by hand: exact per-key figures, pane reduction and the twin-start inference.

Every expected figure below is counted by hand from the records the test builds (a value `w{offset % 3} all` per
record; words are keys), not by the code under test."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession

from splitaudit.audit.checks.findings import (
    AGGREGATE_DEFICIT,
    AGGREGATE_EXCESS,
    AGGREGATE_UNAUDITABLE,
    DOUBLE_ASSIGNMENT,
    INFERRED,
)
from splitaudit.audit.checks.hypotheses import hypotheses_of
from splitaudit.audit.passes.aggregate import ORDER, Span, reconcile, unauditable
from splitaudit.audit.request import AggregateMatch

pytestmark = pytest.mark.integration


def _source(spark: SparkSession, partitions: int) -> DataFrame:
    rows = [("in", p, o, f"w{o % 3} all", o * 1000) for p in range(partitions) for o in range(10)]
    return spark.createDataFrame(rows, "topic string, partition int, offset long, value string, t long")


def test_processing_time_counts_a_committed_offset_twin_exactly(spark: SparkSession) -> None:
    # SP0 resumes partition 0 at 4 and 1 at 6; SP1 at 10 and 10. A twin started at the committed offsets (2, 8)
    # counted offsets 2..9 of partition 0 and 8..9 of partition 1 again. Expected over the span: all 10, w0 4,
    # w1 3, w2 3; the twin's: all 10, w0 4, w1 2, w2 4. The sink's windows (discarding panes) add up to the sum.
    sink = spark.createDataFrame(
        [("all", 12, 1), ("all", 8, 2), ("w0", 8, 1), ("w1", 5, 2), ("w2", 7, 2)], "k string, n long, w long"
    )
    match = AggregateMatch("count", "split(value, ' ')", "k", "n", sink_window="w")
    span = Span({("in", 0): 4, ("in", 1): 6}, {("in", 0): 10, ("in", 1): 10})
    hypotheses = hypotheses_of(span.start, {("in", 0): 0, ("in", 1): 0}, {("in", 0): 2, ("in", 1): 8})
    result = reconcile(_source(spark, 2), sink, match, span, hypotheses, "by hand")
    totals = result.totals
    assert (totals.keys, totals.expected_total, totals.emitted_total) == (4, 20, 40)
    assert (totals.excess_total, totals.excess_keys, totals.deficit_total, totals.deficit_keys) == (20, 4, 0, 0)
    assert [(h["start_is"], h["keys_wrong"], h["chosen"]) for h in totals.hypotheses] == [
        ("savepoint_offset", 2, False),  # predicts w1 3 (2 seen) and w2 3 (4 seen)
        ("log_start", 4, False),  # predicts all 20, w0 8, w1 6, w2 6
        ("committed_offset", 0, True),
    ]
    excess = next(f for f in result.findings if f.kind == AGGREGATE_EXCESS)
    assert excess.count == 4
    assert [(s["key"], s["expected"], s["emitted"], s["difference"]) for s in excess.sample] == [
        ("all", 10, 20, 10),
        ("w0", 4, 8, 4),
        ("w2", 3, 7, 4),
        ("w1", 3, 5, 2),
    ]
    doubles = [f for f in result.findings if f.kind == DOUBLE_ASSIGNMENT]
    assert [(f.partition, f.offset_ranges, f.count, f.classified_by) for f in doubles] == [
        (0, ((2, 9),), 8, INFERRED),
        (1, ((8, 9),), 2, INFERRED),
    ]
    assert "savepoint_offset: 2 keys wrong; log_start: 4 keys wrong" in doubles[0].evidence
    assert not [f for f in result.findings if f.kind == AGGREGATE_DEFICIT]
    assert any("processing-time windows" in n for n in result.notes)


def test_event_time_windows_reduce_accumulating_panes_to_the_last(spark: SparkSession) -> None:
    # Partition 0, span 0..9, 5 s windows on t = offset s: window 0 holds w0 2, w1 2, w2 1; window 5000 holds
    # w0 2, w1 1, w2 2. The sink's last panes: (0, w1) says 3 (one too many), (5000, w0) is absent (two short);
    # (0, w0)'s panes 1 then 2 are right as accumulating panes (discarding would make them 3).
    sink = spark.createDataFrame(
        [
            ("w0", 1, 0, 1),
            ("w0", 2, 0, 2),
            ("w1", 2, 0, 1),
            ("w1", 3, 0, 2),
            ("w2", 1, 0, 1),
            ("w2", 2, 5000, 1),
            ("w1", 1, 5000, 1),
        ],
        f"k string, n long, w long, {ORDER} long",
    )
    match = AggregateMatch(
        "count", "split(value, ' ')[0]", "k", "n", event_time="t", window_size=5, sink_window="w", panes="accumulating"
    )
    span = Span({("in", 0): 0}, {("in", 0): 10})
    result = reconcile(_source(spark, 1), sink, match, span, hypotheses_of(span.start, {}, {}), "by hand")
    totals = result.totals
    assert (totals.windows, totals.keys, totals.expected_total, totals.emitted_total) == ("event_time", 6, 10, 9)
    assert (totals.excess_total, totals.excess_keys, totals.deficit_total, totals.deficit_keys) == (1, 1, 2, 1)
    assert [h["keys_wrong"] for h in totals.hypotheses] == [6]
    kinds = {f.kind: f for f in result.findings}
    assert set(kinds) == {AGGREGATE_EXCESS, AGGREGATE_DEFICIT}
    assert kinds[AGGREGATE_EXCESS].sample == (
        {"key": "w1", "window_start": 0, "expected": 2, "emitted": 3, "difference": 1},
    )
    assert kinds[AGGREGATE_DEFICIT].sample == (
        {"key": "w0", "window_start": 5000, "expected": 2, "emitted": 0, "difference": -2},
    )
    assert any("no one twin start" in n for n in result.notes)


def test_a_sum_is_compared_exactly(spark: SparkSession) -> None:
    # sum of offset per word over partition 0's 0..9: w0 0+3+6+9=18, w1 1+4+7=12, w2 2+5+8=15; the sink says
    # w1 12.5 (a half too many as a decimal, not a float's approximation).
    sink = spark.createDataFrame([("w0", 18.0), ("w1", 12.5), ("w2", 15.0)], "k string, n double")
    match = AggregateMatch("sum:offset", "split(value, ' ')[0]", "k", "n")
    span = Span({("in", 0): 0}, {("in", 0): 10})
    result = reconcile(_source(spark, 1), sink, match, span, (), "by hand")
    assert (result.totals.expected_total, result.totals.excess_total, result.totals.excess_keys) == (45, 0.5, 1)


def test_an_idempotent_aggregate_is_unauditable_not_clean() -> None:
    finding = unauditable(AggregateMatch("max:offset", "value", "k", "n"))
    assert (finding.kind, finding.severity) == (AGGREGATE_UNAUDITABLE, "warning")
    assert "not clean" in finding.detail


def test_a_key_only_an_earlier_start_reads_is_no_key_of_the_span(spark: SparkSession) -> None:
    # Partition 0, span 6..9 (w0 2: offsets 6, 9; w1 1; w2 1; all 4). The log-start hypothesis reads 0..9, where
    # "early" is at offset 0 only: it predicts an excess of 1 on it, but it is neither in the span nor emitted, so
    # the span has the 4 keys, not 5, and the sink that equals the span is clean.
    rows = [("in", 0, o, "early" if o == 0 else f"w{o % 3} all", o * 1000) for o in range(10)]
    source = spark.createDataFrame(rows, "topic string, partition int, offset long, value string, t long")
    sink = spark.createDataFrame([("all", 4), ("w0", 2), ("w1", 1), ("w2", 1)], "k string, n long")
    span = Span({("in", 0): 6}, {("in", 0): 10})
    hypotheses = hypotheses_of(span.start, {("in", 0): 0}, {})
    result = reconcile(source, sink, AggregateMatch("count", "split(value, ' ')", "k", "n"), span, hypotheses, "")
    totals = result.totals
    assert (totals.keys, totals.expected_total, totals.excess_keys, totals.deficit_keys) == (4, 8, 0, 0)
    # SP0's offset predicts the span again on each of the 4 keys; the log start early 1, all 9, w0 3, w1 3, w2 3
    assert [h["keys_wrong"] for h in totals.hypotheses] == [4, 5]
    assert not result.findings
