"""An aggregating sink reconciled against its source across a restore: the expected aggregate per key from the
source records between two savepoints, against what the restored job emitted after the first.

A job that counts or sums per key writes no record identity: no row-level check sees a count inflated by a
double read. Over the span between SP0 and SP1 (per partition, SP0's next offset to SP1's), the source side
computes per key the aggregate the job should have emitted (`--aggregate count|sum:EXPR` over the records, keyed
by `--group-key`, an expression or an array of keys); the sink side reads each emitted key and value
(`--sink-group-key`, `--sink-value`) from the sink records written after SP0 and reduces its panes
(accumulating: the last pane of each window and key; discarding: their sum). One aggregation per side and one
full outer join on the key; nothing row-level reaches the driver but bounded samples of the largest keys.

With event-time windows (`--event-time`, `--window-size`) the key is (window start, key): each record's window
is computed as Beam's FixedWindows does (`start = t - (t - offset) mod size`). With processing-time windows the
window a record fell in depends on when it was read, which no record carries: keys are compared over the whole
span, summed over the sink's windows.

The same source aggregation also predicts, per twin-start hypothesis (`audit.hypotheses`), each key's excess
(the records from that start to the span's end) and counts the keys each hypothesis gets wrong: one that gets
none wrong is reported as `double_assignment` of those offset ranges, `classified_by: "inferred"`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType

from splitaudit.audit.checks.findings import (
    AGGREGATE_DEFICIT,
    AGGREGATE_EXCESS,
    AGGREGATE_UNAUDITABLE,
    DOUBLE_ASSIGNMENT,
    ERROR,
    INFERRED,
    WARNING,
    AggregateTotals,
    Finding,
)
from splitaudit.audit.checks.hypotheses import Choice, Hypothesis, Partition, choose
from splitaudit.audit.request import AggregateMatch
from splitaudit.errors import printable

SAMPLE_KEYS = 5  # largest keys shown with each aggregate finding
ORDER = "_order"  # the sink column ordering a window's panes (the caller's: a Kafka sink's time and offset)
_KEY, _WINDOW, _VALUE = "_key", "_window", "_value"
_DECIMAL = "decimal(38,9)"  # sums compared exactly, not as floating point
PROCESSING_TIME_NOTE = (
    "processing-time windows: keys compared over the whole span from SP0 to SP1, not per window (which window a "
    "record fell in depends on when the job read it, which no record carries)"
)


@dataclass(frozen=True)
class Span:
    """The source offsets reconciled: per partition, from SP0's next offset (`start`) to SP1's (`end`)."""

    start: Mapping[Partition, int]
    end: Mapping[Partition, int]

    @property
    def partitions(self) -> tuple[Partition, ...]:
        return tuple(sorted(tp for tp in self.start if tp in self.end))


@dataclass(frozen=True)
class Reconciliation:
    """What reconciling found: the findings, the totals for the JSON's `aggregate`, and how it was judged."""

    findings: tuple[Finding, ...]
    totals: AggregateTotals
    notes: tuple[str, ...]


def unauditable(match: AggregateMatch) -> Finding:
    """An idempotent aggregate: what the audit says instead of "clean"."""
    detail = (
        f"--aggregate {match.function}: a record read twice leaves a {match.function} as it was, so no "
        "reconciliation with the source can show a double read; this sink is not audited (not clean)"
    )
    return Finding(AGGREGATE_UNAUDITABLE, WARNING, None, None, 0, detail=detail)


def reconcile(
    records: DataFrame,
    sink: DataFrame,
    match: AggregateMatch,
    span: Span,
    hypotheses: tuple[Hypothesis, ...],
    boundary: str,
) -> Reconciliation:
    """Reconcile `sink` (the records written after SP0, with an ORDER column when panes accumulate) with the
    source `records` (Spark's Kafka columns) over `span`, testing each of `hypotheses`. `boundary` says how the
    sink's records after SP0 were chosen, for the notes."""
    expected = _source_side(records, match, span, hypotheses)
    emitted = _sink_side(sink, match)
    keys = [_WINDOW, _KEY] if match.event_windows else [_KEY]
    joined = (
        expected.join(emitted, keys, "full_outer")
        .select(
            *keys,
            # a key only the hypotheses' earlier starts read (before the span, never emitted) is no key of the span
            (F.col("expected").isNotNull() | F.col("emitted").isNotNull()).alias("_seen"),
            F.coalesce("expected", F.lit(0).cast(_value_type(match))).alias("expected"),
            F.coalesce("emitted", F.lit(0).cast(_value_type(match))).alias("emitted"),
            *[F.coalesce(f"_h{i}", F.lit(0).cast(_value_type(match))).alias(f"_h{i}") for i in range(len(hypotheses))],
        )
        .withColumn("diff", F.col("emitted") - F.col("expected"))
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    try:
        stats = joined.agg(
            F.count_if(F.col("_seen")).alias("keys"),
            F.sum("expected").alias("expected"),
            F.sum("emitted").alias("emitted"),
            F.sum(F.when(F.col("diff") > 0, F.col("diff"))).alias("excess"),
            F.count_if(F.col("diff") > 0).alias("excess_keys"),
            F.sum(F.when(F.col("diff") < 0, -F.col("diff"))).alias("deficit"),
            F.count_if(F.col("diff") < 0).alias("deficit_keys"),
            *[F.count_if(F.col("diff") != F.col(f"_h{i}")).alias(f"wrong_{i}") for i in range(len(hypotheses))],
        ).collect()[0]
        excess_sample = _sample(joined.where(F.col("diff") > 0).orderBy(F.col("diff").desc(), *keys), keys)
        deficit_sample = _sample(joined.where(F.col("diff") < 0).orderBy(F.col("diff").asc(), *keys), keys)
    finally:
        joined.unpersist()
    totals = AggregateTotals(
        function=match.function,
        windows="event_time" if match.event_windows else "processing_time",
        boundary=boundary,
        keys=stats["keys"],
        expected_total=_number(stats["expected"]),
        emitted_total=_number(stats["emitted"]),
        excess_total=_number(stats["excess"]),
        excess_keys=stats["excess_keys"],
        deficit_total=_number(stats["deficit"]),
        deficit_keys=stats["deficit_keys"],
    )
    wrong = tuple(stats[f"wrong_{i}"] for i in range(len(hypotheses)))
    choice = choose(hypotheses, wrong, totals.excess_keys)
    tested = tuple(
        h.to_json() | {"keys_wrong": w, "chosen": h is choice.chosen} for h, w in zip(hypotheses, wrong, strict=True)
    )
    totals = replace(totals, hypotheses=tested)
    findings = [*_total_findings(totals, excess_sample, deficit_sample), *_double_assignment(choice, span)]
    notes = [f"aggregate reconciled over {_span_text(span)}; the sink's records after SP0: {boundary}"]
    if not match.event_windows:
        notes.append(PROCESSING_TIME_NOTE)
    if totals.excess_keys and choice.chosen is None:
        notes.append(f"no one twin start per partition explains every key's excess: {choice.rejected_text}")
    return Reconciliation(tuple(findings), totals, tuple(notes))


def _source_side(
    records: DataFrame, match: AggregateMatch, span: Span, hypotheses: tuple[Hypothesis, ...]
) -> DataFrame:
    """Per (window,) key: the aggregate of the span's records (`expected`) and, per hypothesis i, of the records
    from its start to the span's end (`_h{i}`). One scan of the source from the lowest start, one aggregation."""
    lowest = {
        tp: min([span.start[tp], *(dict(h.starts).get(tp, span.start[tp]) for h in hypotheses)])
        for tp in span.partitions
    }
    offset = F.col("offset")
    read = records.where(
        _per_partition(lowest).isNotNull() & (offset >= _per_partition(lowest)) & (offset < _per_partition(span.end))
    )
    value = F.lit(1).cast("long") if match.function == "count" else F.expr(str(match.expression)).cast(_DECIMAL)
    key = F.expr(match.group_key)
    if isinstance(read.select(key).schema.fields[0].dataType, ArrayType):
        key = F.explode(key)
    columns = [key.alias(_KEY), value.alias(_VALUE), offset, _per_partition(span.start).alias("_span_start")]
    if match.event_windows:
        columns.append(_window_start(F.expr(str(match.event_time)), match).alias(_WINDOW))
    starts = [_per_partition(dict(h.starts)).alias(f"_start{i}") for i, h in enumerate(hypotheses)]
    # A generator (explode) cannot be nested in a cast: the key is made text (as the sink's is) after the select.
    rows = read.select(*columns, *starts).withColumn(_KEY, F.col(_KEY).cast("string"))
    keys = [_WINDOW, _KEY] if match.event_windows else [_KEY]
    return rows.groupBy(*keys).agg(
        F.sum(F.when(F.col("offset") >= F.col("_span_start"), F.col(_VALUE))).alias("expected"),
        *[
            F.sum(F.when(F.col("offset") >= F.col(f"_start{i}"), F.col(_VALUE))).alias(f"_h{i}")
            for i in range(len(hypotheses))
        ],
    )


def _sink_side(sink: DataFrame, match: AggregateMatch) -> DataFrame:
    """Per (window,) key: what the job emitted, its panes reduced (accumulating: the last pane of each window and
    key, by ORDER; discarding: the sum of the panes), then, for processing-time windows, summed over windows."""
    value = F.expr(match.sink_value).cast(_value_type(match)).alias(_VALUE)
    key = F.expr(match.sink_group_key).cast("string").alias(_KEY)
    window = F.expr(match.sink_window).cast("long").alias(_WINDOW) if match.sink_window else F.lit(None).alias(_WINDOW)
    rows = sink.select(key, window, value, *([F.col(ORDER)] if match.panes == "accumulating" else []))
    pane = F.max_by(_VALUE, ORDER) if match.panes == "accumulating" else F.sum(_VALUE)
    panes = rows.groupBy(_WINDOW, _KEY).agg(pane.alias("emitted"))
    if match.event_windows:
        return panes
    return panes.groupBy(_KEY).agg(F.sum("emitted").alias("emitted"))


def _window_start(event_time: Column, match: AggregateMatch) -> Column:
    """Beam's FixedWindows.assignWindow: start = t - (t - offset) mod size, in epoch ms (a positive modulus)."""
    size = round(float(match.window_size or 0) * 1000)
    offset = round(match.window_offset * 1000) % size
    t = event_time.cast("long")
    return t - F.pmod(t - F.lit(offset), F.lit(size))


def _per_partition(values: Mapping[Partition, int]) -> Column:
    """An offset per source (topic, partition) as a column (null for partitions it does not name)."""
    cases = [
        ((F.col("topic") == topic) & (F.col("partition") == partition), F.lit(offset).cast("long"))
        for (topic, partition), offset in sorted(values.items())
    ]
    if not cases:
        return F.lit(None).cast("long")
    column = F.when(*cases[0])
    for condition, offset in cases[1:]:
        column = column.when(condition, offset)
    return column


def _value_type(match: AggregateMatch) -> str:
    return "long" if match.function == "count" else _DECIMAL


def _sample(rows: DataFrame, keys: list[str]) -> tuple[dict[str, Any], ...]:
    """The largest keys of a finding, bounded: key (and window start), expected, emitted, difference."""
    shown = []
    for r in rows.limit(SAMPLE_KEYS).collect():
        row: dict[str, Any] = {"key": printable(str(r[_KEY]))}
        if _WINDOW in keys:
            row["window_start"] = r[_WINDOW]
        row |= {"expected": _number(r["expected"]), "emitted": _number(r["emitted"]), "difference": _number(r["diff"])}
        shown.append(row)
    return tuple(shown)


def _number(value: Any) -> int | float:
    """A total for the JSON: an int for counts and whole sums, else a float."""
    if value is None:
        return 0
    return int(value) if int(value) == value else float(value)


def _total_findings(
    totals: AggregateTotals, excess: tuple[dict[str, Any], ...], deficit: tuple[dict[str, Any], ...]
) -> list[Finding]:
    found = []
    if totals.excess_keys:
        detail = (
            f"{totals.excess_keys} of {totals.keys} keys emitted above the source's {totals.function}: "
            f"{totals.excess_total} in excess in all (records the restored job counted twice)"
        )
        found.append(Finding(AGGREGATE_EXCESS, ERROR, None, None, totals.excess_keys, sample=excess, detail=detail))
    if totals.deficit_keys:
        detail = (
            f"{totals.deficit_keys} of {totals.keys} keys emitted below the source's {totals.function}: "
            f"{totals.deficit_total} short in all (records the restored job did not count)"
        )
        found.append(Finding(AGGREGATE_DEFICIT, ERROR, None, None, totals.deficit_keys, sample=deficit, detail=detail))
    return found


def _double_assignment(choice: Choice, span: Span) -> list[Finding]:
    """The chosen hypothesis's offset ranges, one finding per partition, inferred."""
    if choice.chosen is None:
        return []
    evidence = (
        f"a twin reader starting at {choice.chosen.start_is} on every partition explains every key's excess "
        f"exactly; rejected: {choice.rejected_text}"
    )
    found = []
    for (topic, partition), (first, last) in sorted(choice.chosen.ranges(span.end).items()):
        detail = f"offsets {first}..{last} counted twice by a second reader of the restored split"
        found.append(
            Finding(
                DOUBLE_ASSIGNMENT, ERROR, topic, partition, last - first + 1, ((first, last),), detail=detail,
                classified_by=INFERRED, evidence=evidence,
            )
        )  # fmt: skip
    return found


def _span_text(span: Span) -> str:
    return ", ".join(f"{t}/{p} {span.start[(t, p)]}..{span.end[(t, p)] - 1}" for t, p in span.partitions)
