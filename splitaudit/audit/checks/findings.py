"""The findings model: what every check returns and every renderer (console, JSON, HTML) shows.

JSON shape (the `audit` contract in docs/audit.md): `{"summary": {duplicate_records, missing_records,
double_assigned_partitions, missing_partitions, rewound_partitions}, "findings": [{kind, severity, topic,
partition, …}], "coverage": […], "notes": […], "assignment": [{operator, subtasks, partitions_from,
partitions: [{topic, partition, status, holders}]}], "ledger": [{path, family, window_start, window_end, pane,
pane_last, shard, shards, size, modified, rows, rewritten}], and with --aggregate only "aggregate": {function, windows,
boundary, keys, expected_total, emitted_total, excess_total, excess_keys, deficit_total, deficit_keys,
hypotheses: [{start_is, starts, keys_wrong, chosen}]}}`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from splitaudit.errors import EXIT_CLEAN, EXIT_FINDINGS

ERROR = "error"
WARNING = "warning"
INFO = "info"

# Finding kinds of the sink checks. A generation is one run of the job's readers: (job_id, attempt) when the sink
# records the job id, else the attempt alone.
DOUBLE_ASSIGNMENT = "double_assignment"  # one offset emitted by two readers of one generation: a bug
REPLAY = "replay"  # one offset emitted in more than one generation (restore, failover): at-least-once
DUPLICATE = "duplicate_records"  # one offset emitted twice with no lineage (or one reader) to tell why
MISSING = "missing_records"  # offsets that exist in the source but not in the sink
INVALID = "invalid_rows"  # sink rows whose topic, partition or offset is null or negative
NOT_IN_SOURCE = "offsets_not_in_source"  # sink offsets the source (given to the audit) does not hold
PAST_SAVEPOINT = "past_savepoint"  # sink offsets at or past the savepoint's next offset: read again on restore
NOT_A_SOURCE_TOPIC = "not_a_source_topic"  # sink rows naming a topic no source reads: not judged

# Finding kinds of a file sink's ledger (the windows, panes and shards its file names say: `ledger`).
UNFINALIZED = "unfinalized_files"  # files left in Beam's temporary folders: records a finalize never published
MISSING_SHARDS = "missing_shards"  # a window's pane names n shards and some of them are absent
MISSING_PANES = "missing_panes"  # a window's pane indexes skip one
REWRITTEN = "rewritten_files"  # a window that closed before the restored savepoint, written again after it
LOST_BY_REWRITE = "lost_by_rewrite"  # records the replaced file held and its replacement lacks
MASKED_DUPLICATES = "masked_duplicates"  # records read twice (before the savepoint and again) but present once
UNDECIDED_WINDOWS = "undecided_windows"  # files of windows written after the savepoint, not known closed or open

# Finding kinds of a sink mapped to source records by identity (--sink-key/--source-key, `identity`).
UNMATCHED = "unmatched_sink_rows"  # sink rows whose identity no source record holds
AMBIGUOUS_IDENTITY = "ambiguous_source_identity"  # one identity held by several source records: not judged
NO_IDENTITY = "source_records_without_identity"  # source records whose identity expression is null: not judged

# Finding kinds of an aggregating sink reconciled against its source (--aggregate, `aggregate`).
AGGREGATE_EXCESS = "aggregate_excess"  # keys emitted above the source's aggregate: records counted twice
AGGREGATE_DEFICIT = "aggregate_deficit"  # keys emitted below the source's aggregate: records not counted
AGGREGATE_UNAUDITABLE = "aggregate_unauditable"  # max, min, latest, distinct: a double read leaves them unchanged

# How a duplicate's class was decided: from the sink's lineage columns, or inferred from evidence without them.
BY_LINEAGE = "lineage"
INFERRED = "inferred"

# Finding kinds of the savepoint checks (one savepoint, or two with --before).
ASSIGNED_TWICE = "partition_assigned_twice"  # held by more than one split or subtask
ASSIGNED_AND_PENDING = "partition_assigned_and_pending"  # held by a reader and pending in the enumerator
UNASSIGNED = "partition_unassigned"  # in the topic, held by nobody
REWIND = "rewind"  # next offset lower than in the earlier savepoint
DROPPED_PARTITION = "partition_dropped"  # in the earlier savepoint, not in the later one
NEW_PARTITION = "partition_new"  # in the later savepoint only
FINISHED_PARTITION = "partition_finished"  # in the earlier savepoint; in the later, held by nobody and named done

# Finding kinds of the Kafka offset checks (--bootstrap, --group).
EXPIRED_UNREAD = "expired_unread"  # log-start offset above the offset the job restores from: loss
COMMITTED_OFFSET = "committed_offset_mismatch"  # the group's committed offset disagrees with the job's
LAG = "lag"  # records in the topic past the job's next offset

# Kind groups, for every place that counts or asserts on a kind of trouble rather than on one check's finding.
SAVEPOINT_ASSIGNMENT_KINDS = frozenset({ASSIGNED_TWICE, ASSIGNED_AND_PENDING, UNASSIGNED})  # one savepoint's errors
DOUBLE_ASSIGNMENT_KINDS = frozenset({DOUBLE_ASSIGNMENT, ASSIGNED_TWICE, ASSIGNED_AND_PENDING})  # read twice
MISSING_PARTITION_KINDS = frozenset({UNASSIGNED, DROPPED_PARTITION})  # partitions nobody reads

MAX_RANGES = 100  # offset ranges a finding lists (then `ranges_truncated`); its count is always exact


def offset_range(first: int, last: int) -> str:
    """One range of offsets for people: "7" or "7..9" (both ends included)."""
    return str(first) if first == last else f"{first}..{last}"


@dataclass(frozen=True)
class Finding:
    """One anomaly of one (topic, partition): how many records, where, and a bounded sample of rows.

    Attributes:
        kind: What was found: one of this module's kind constants (`DOUBLE_ASSIGNMENT`, `UNASSIGNED`, …).
        severity: `ERROR`, `WARNING` or `INFO`; an error makes the audit exit 1.
        topic: The Kafka topic; None for a finding about no one partition.
        partition: The Kafka partition; None likewise.
        count: How many records (or offsets, keys, files: as the kind counts) are concerned; always exact.
        offset_ranges: The offsets concerned, as inclusive (first, last) ranges: at most `MAX_RANGES` of them.
        ranges_truncated: True when there were more ranges than `offset_ranges` keeps.
        sample: A few of the sink rows concerned, as column-to-value dicts.
        detail: What it means, for people.
        classified_by: For a duplicate, how its class was decided: `BY_LINEAGE` (the sink's lineage columns) or
            `INFERRED` (evidence without them); None when not classified.
        evidence: For an `INFERRED` class, the facts it was inferred from.
    """

    kind: str
    severity: str
    topic: str | None
    partition: int | None
    count: int
    offset_ranges: tuple[tuple[int, int], ...] = ()
    ranges_truncated: bool = False
    sample: tuple[dict[str, Any], ...] = ()
    detail: str = ""
    classified_by: str | None = None  # duplicates: BY_LINEAGE or INFERRED; None when not classified
    evidence: str = ""  # INFERRED: the facts the class was inferred from

    def ranges_text(self, limit: int | None = None) -> str:
        """The offset ranges for people ("5, 7..9"), the first `limit` of them (all by default), ending in "…"
        when there are more. The console, the HTML page and the pytest plugin all show ranges this way."""
        shown = self.offset_ranges if limit is None else self.offset_ranges[:limit]
        text = ", ".join(offset_range(first, last) for first, last in shown)
        return text + (", …" if len(shown) < len(self.offset_ranges) or self.ranges_truncated else "")

    @property
    def explanation(self) -> str:
        """The detail, and for an inferred class the evidence it was inferred from: what people are shown."""
        return f"{self.detail}; evidence: {self.evidence}" if self.evidence else self.detail

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity,
            "topic": self.topic,
            "partition": self.partition,
            "count": self.count,
            "offset_ranges": [list(r) for r in self.offset_ranges],
            "ranges_truncated": self.ranges_truncated,
            "sample": list(self.sample),
            "detail": self.detail,
            "classified_by": self.classified_by,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class PartitionCoverage:
    """What the sink holds of one (topic, partition): rows, distinct offsets and their span."""

    topic: str
    partition: int
    rows: int
    distinct: int
    first_offset: int
    last_offset: int
    missing: int

    @property
    def duplicates(self) -> int:
        return self.rows - self.distinct

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "rows": self.rows,
            "distinct": self.distinct,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "missing": self.missing,
            "duplicates": self.duplicates,
        }


@dataclass(frozen=True)
class SinkFile:
    """One file of a file sink's ledger: what its name says (window, pane, shard) and what the store says."""

    path: str  # relative to the sink directory
    family: str  # the files of one sink: their directory, prefix and suffix around Beam's fields (`dir/prefix*.json`)
    window_start: int | None  # epoch milliseconds; None for the global window
    window_end: int | None
    pane: int
    pane_last: bool | None  # None: the name does not say
    shard: int
    shards: int
    size: int
    modified: float  # seconds since the epoch
    rows: int | None = None  # None: not counted
    rewritten: bool = False  # written after the restored savepoint for a window that closed before it

    @property
    def window(self) -> tuple[int, int] | None:
        return None if self.window_start is None or self.window_end is None else (self.window_start, self.window_end)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "family": self.family,
            "window_start": self.window_start,
            "window_end": self.window_end,
            "pane": self.pane,
            "pane_last": self.pane_last,
            "shard": self.shard,
            "shards": self.shards,
            "size": self.size,
            "modified": self.modified,
            "rows": self.rows,
            "rewritten": self.rewritten,
        }


@dataclass(frozen=True)
class Holder:
    """One holder of a partition in a savepoint: a reader subtask's split, or the enumerator's pending list."""

    subtask: int | None  # None: pending in the enumerator, not yet given to a reader
    split_id: str
    next_offset: int | None

    def to_json(self) -> dict[str, Any]:
        return {"subtask": self.subtask, "split_id": self.split_id, "next_offset": self.next_offset}


@dataclass(frozen=True)
class PartitionAssignment:
    """Who holds one (topic, partition) in a savepoint: exactly one holder is healthy. A DynamicKafkaSource reads
    partitions of several Kafka clusters: the same topic and partition on two clusters are two partitions, told
    apart by `cluster` (None for every other source)."""

    topic: str
    partition: int
    holders: tuple[Holder, ...]
    cluster: str | None = None

    @property
    def status(self) -> str:
        """`ok`, `double` (two or more holders, readers or pending) or `missing` (none)."""
        return "missing" if not self.holders else "ok" if len(self.holders) == 1 else "double"

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "topic": self.topic,
            "partition": self.partition,
            "status": self.status,
            "holders": [h.to_json() for h in self.holders],
        }


@dataclass(frozen=True)
class AssignmentMatrix:
    """The partition x subtask assignment of one source operator, and where the list of partitions came from."""

    operator: str  # uid when known, else the operator id
    subtasks: int  # the operator's parallelism
    partitions_from: str  # e.g. "Kafka admin API at 127.0.0.1:9092", "--partitions", "the sink", "the savepoint"
    partitions: tuple[PartitionAssignment, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "operator": self.operator,
            "subtasks": self.subtasks,
            "partitions_from": self.partitions_from,
            "partitions": [p.to_json() for p in self.partitions],
        }


@dataclass(frozen=True)
class Summary:
    """The headline counts of the JSON contract."""

    duplicate_records: int = 0
    missing_records: int = 0
    double_assigned_partitions: int = 0
    missing_partitions: int = 0
    rewound_partitions: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "duplicate_records": self.duplicate_records,
            "missing_records": self.missing_records,
            "double_assigned_partitions": self.double_assigned_partitions,
            "missing_partitions": self.missing_partitions,
            "rewound_partitions": self.rewound_partitions,
        }


@dataclass(frozen=True)
class AggregateTotals:
    """An aggregating sink's reconciliation in figures (the JSON's `aggregate`): keys compared, the source's and
    the sink's totals, the excess and deficit over the keys above and below, how the sink's records after SP0
    were chosen, and each twin-start hypothesis tested with the keys it got wrong."""

    function: str  # count or sum
    windows: str  # event_time (per window and key) or processing_time (per key over the span)
    boundary: str
    keys: int
    expected_total: int | float
    emitted_total: int | float
    excess_total: int | float
    excess_keys: int
    deficit_total: int | float
    deficit_keys: int
    hypotheses: tuple[dict[str, Any], ...] = ()  # {start_is, starts: [[topic, partition, offset]], keys_wrong, chosen}

    def to_json(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "windows": self.windows,
            "boundary": self.boundary,
            "keys": self.keys,
            "expected_total": self.expected_total,
            "emitted_total": self.emitted_total,
            "excess_total": self.excess_total,
            "excess_keys": self.excess_keys,
            "deficit_total": self.deficit_total,
            "deficit_keys": self.deficit_keys,
            "hypotheses": list(self.hypotheses),
        }


@dataclass(frozen=True)
class Findings:
    """Everything one audit found, with the coverage it was judged on and notes on how it was judged.

    Attributes:
        summary: The headline counts.
        findings: Every finding of every check that ran.
        coverage: What the sink holds of each partition (empty without a sink).
        notes: How it was judged: what the partition lists came from, what was assumed, what was not checked.
        assignment: Each source operator's partition x subtask assignment (empty without a savepoint).
        ledger: A file sink's files as Beam named them (empty: no windowed names).
        aggregate: An aggregating sink's reconciliation (`--aggregate`); None otherwise.
    """

    summary: Summary
    findings: tuple[Finding, ...]
    coverage: tuple[PartitionCoverage, ...] = ()
    notes: tuple[str, ...] = field(default=())
    assignment: tuple[AssignmentMatrix, ...] = ()
    ledger: tuple[SinkFile, ...] = ()  # a file sink's files as Beam named them (empty: no windowed names)
    aggregate: AggregateTotals | None = None  # an aggregating sink's reconciliation (--aggregate)

    @property
    def exit_code(self) -> int:
        """1 when any finding is an error, else 0 (the one place the audit's exit code is decided)."""
        return EXIT_FINDINGS if any(f.severity == ERROR for f in self.findings) else EXIT_CLEAN

    def to_json(self) -> dict[str, Any]:
        """The contract's document; `aggregate` only for a reconciliation of an aggregating sink."""
        document = {
            "summary": self.summary.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "coverage": [c.to_json() for c in self.coverage],
            "notes": list(self.notes),
            "assignment": [a.to_json() for a in self.assignment],
            "ledger": [f.to_json() for f in self.ledger],
        }
        return document if self.aggregate is None else document | {"aggregate": self.aggregate.to_json()}
