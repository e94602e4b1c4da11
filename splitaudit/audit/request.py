"""What an audit or a diff is asked to do: the inputs and how to read them, checked against each other when the
request is made (a UsageError, exit 2), so every caller (the CLI, the pytest plugin, the scenarios) gets the
same checks before anything is read or Spark starts. Kept free of Spark so the CLI starts fast."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from splitaudit.audit.checks.beam_names import NamingTemplate
from splitaudit.errors import UsageError
from splitaudit.savepoint.fileio import SavepointOptions

FILE_FORMATS = ("parquet", "json", "csv", "orc", "avro", "text")  # text: one `value` row per line
SINK_FORMATS = (*FILE_FORMATS, "kafka")  # kafka: --sink names a topic of the --bootstrap cluster


@dataclass(frozen=True)
class SinkColumns:
    """Which sink columns hold the Kafka coordinates of each record (`--topic-col`, `--partition-col`,
    `--offset-col`)."""

    topic: str = "topic"
    partition: str = "partition"
    offset: str = "offset"


PAYLOAD = "value"  # the payload mode's identity: the record value on both sides


@dataclass(frozen=True)
class IdentityMatch:
    """How sink rows are mapped back to source records (`audit.identity`): a Spark SQL expression over the
    sink's columns and one over Spark's Kafka source columns, giving the same text for the same record."""

    sink_key: str
    source_key: str

    @classmethod
    def payload(cls, sink_key: str | None = None) -> IdentityMatch:
        """A pass-through job's identity: the record's whole value, in the sink's `value` column (or sink_key)."""
        return cls(sink_key or PAYLOAD, PAYLOAD)

    @classmethod
    def from_options(cls, sink_key: str | None, source_key: str | None, match_payload: bool) -> IdentityMatch | None:
        """How --sink-key, --source-key and --match-payload map the sink to source records; None: by its columns.
        UsageError when they do not combine."""
        if match_payload:
            if source_key:
                raise UsageError("--match-payload compares the record values: give no --source-key with it")
            return cls.payload(sink_key)
        if bool(sink_key) != bool(source_key):
            raise UsageError("give --sink-key and --source-key together (or --match-payload for a pass-through job)")
        return cls(sink_key, source_key) if sink_key and source_key else None

    @property
    def described(self) -> str:
        return f"sink {self.sink_key} = source {self.source_key}"


COUNTING = ("count", "sum")  # aggregates a double read inflates: reconciled against the source
IDEMPOTENT = ("max", "min", "latest", "distinct")  # aggregates a double read leaves as they were: unauditable
PANES = ("accumulating", "discarding")


@dataclass(frozen=True)
class AggregateMatch:
    """An aggregating sink reconciled against its source (`audit.aggregate`): the aggregate (`count`, or
    `sum:EXPR` over the source record; `max|min|latest|distinct:EXPR` are taken only to be reported
    unauditable), the key of each source record (`group_key`, a Spark SQL expression over Spark's Kafka columns,
    or an array of keys) and the sink's key and aggregate. With `event_time` (an expression giving each source
    record's event time in epoch ms) and `window_size` (seconds), the job windows on event time: keys are
    compared per (window, key), the sink's window start (epoch ms) given by `sink_window`, its panes reduced
    as `panes` says. Without, windows are processing-time ones and keys are compared over the whole span."""

    aggregate: str
    group_key: str
    sink_group_key: str
    sink_value: str
    event_time: str | None = None
    window_size: float | None = None
    window_offset: float = 0.0
    sink_window: str | None = None
    panes: str = "discarding"

    @classmethod
    def from_options(cls, aggregate: str | None, **described: Any) -> AggregateMatch | None:
        """What --aggregate and the options `described` (the other fields, by name) ask for; None without
        --aggregate. UsageError when they do not combine."""
        keys = ("group_key", "sink_group_key", "sink_value")
        given = {f"--{name.replace('_', '-')}": described[name] for name in keys}
        if aggregate is None:
            others = [name for name, v in given.items() if v] + (["--event-time"] if described["event_time"] else [])
            if others:
                raise UsageError(f"{', '.join(others)}: only with --aggregate (they describe an aggregating sink)")
            return None
        absent = [name for name, v in given.items() if not v]
        if absent:
            raise UsageError(f"--aggregate needs {', '.join(absent)}")
        return cls(aggregate, **described)

    @property
    def function(self) -> str:
        return self.aggregate.split(":", 1)[0].strip().lower()

    @property
    def expression(self) -> str | None:
        """The EXPR of `sum:EXPR` (and of the idempotent ones); None for count."""
        parts = self.aggregate.split(":", 1)
        return parts[1].strip() if len(parts) == 2 and parts[1].strip() else None

    @property
    def auditable(self) -> bool:
        return self.function in COUNTING

    @property
    def event_windows(self) -> bool:
        return self.event_time is not None

    def __post_init__(self) -> None:
        if self.function not in COUNTING + IDEMPOTENT:
            raise UsageError(f"--aggregate {self.aggregate!r}: give count, or sum|max|min|latest|distinct:EXPR")
        if self.function != "count" and self.expression is None:
            raise UsageError(f"--aggregate {self.function}:EXPR needs the expression it aggregates")
        if self.function == "count" and self.expression is not None:
            raise UsageError("--aggregate count takes no expression: it counts each key's records")
        if (self.event_time is None) != (self.window_size is None) or (self.event_time and not self.sink_window):
            raise UsageError("event-time windows need --event-time, --window-size and --sink-window together")
        if self.window_size is not None and self.window_size <= 0:
            raise UsageError(f"--window-size must be positive, not {self.window_size:g}")
        if self.panes not in PANES:
            raise UsageError(f"--panes {self.panes!r}: one of {', '.join(PANES)}")


@dataclass(frozen=True)
class AuditRequest:
    """What the user asked to audit (a savepoint, a sink, or both; optionally an earlier savepoint and the
    topics' partition counts), and how to run Spark. Made only with options that combine, naming inputs that
    exist (`__post_init__`).

    Each field is one of `splitaudit audit`'s options (docs/audit.md), or an object its options' settings group makes
    (`columns`, `savepoint_options`, `identity`, `aggregate`: `splitaudit/cli/audit.py`).

    Attributes:
        sink: The sink to audit (`--sink`): a directory or file of `sink_format`, or a topic of `bootstrap`.
        sink_format: One of `SINK_FORMATS` (`--sink-format`).
        columns: Which sink columns hold each record's Kafka topic, partition and offset.
        savepoint: The savepoint (or checkpoint) the job would restore from, or took after a restore.
        before: An earlier savepoint of the same job (`--before`): rewinds, dropped and new partitions.
        savepoint_options: How the savepoints are read (uids of Flink 1.x operators, external state, file size).
        topics: The source topics (`--topic`); default: every topic the savepoint's sources read.
        partitions: Partition counts: `(topic, N)` says the topic has partitions 0..N-1; `(None, N)` names the one
            source topic.
        bootstrap: The source topics' Kafka cluster (`--bootstrap`): their partitions, real offsets, group offsets.
        group: A consumer group whose committed offsets are compared with the job's (`--group`).
        exactly_once: The sink is exactly-once (`--exactly-once`): replays after a restore, and sink records past
            the savepoint's next offsets, are errors instead of warnings.
        master: The Spark master of a session the audit starts (`--master`).
        identity: For a sink without Kafka coordinates: how its rows map to source records (`--sink-key`).
        jar: The restored job's jar, evidence for classifying duplicates without lineage (`--jar`).
        sink_naming: A custom FileNaming's template (`--sink-naming`); default: Beam's own file names.
        watermark_delay: Seconds a job's watermark may trail its records' Kafka time (`--watermark-delay`).
        aggregate: An aggregating sink, reconciled against the source (`--aggregate`).
    """

    sink: str | None = None
    sink_format: str = "parquet"
    columns: SinkColumns = field(default_factory=SinkColumns)
    savepoint: str | None = None
    before: str | None = None
    savepoint_options: SavepointOptions = field(default_factory=SavepointOptions)
    topics: tuple[str, ...] = ()  # the source topics; default: every topic the savepoint's sources read
    # Partition counts: (topic, N) says the topic has partitions 0..N-1; (None, N) names the one source topic.
    partitions: tuple[tuple[str | None, int], ...] = ()
    bootstrap: str | None = None  # the source topics' Kafka cluster: their partitions, real offsets, group offsets
    group: str | None = None
    exactly_once: bool = False
    master: str = "local[*]"
    identity: IdentityMatch | None = None  # no coordinates in the sink: map its rows to source records (--sink-key)
    jar: str | None = None  # the restored job's jar: evidence for classifying duplicates without lineage (--jar)
    sink_naming: str | None = None  # a custom FileNaming's template (--sink-naming); default: Beam's own names
    # seconds a job's watermark trails its records' Kafka time, given to override the savepoint's own evidence of
    # which windows had closed (--watermark-delay); None: decided by that evidence (`window_evidence`)
    watermark_delay: float | None = None
    aggregate: AggregateMatch | None = None  # an aggregating sink, reconciled against the source (--aggregate)
    # The restored job's topics (--subscription): a topic SP0 read and the job no longer subscribes to, read on
    # between --before and --savepoint, is found (`removed_topics.py`); empty: not checked
    subscription: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Usage errors before anything is read and before paying for a Spark start."""
        if not self.savepoint and not self.sink:
            raise UsageError("give --savepoint, --sink or both: there is nothing to audit")
        if self.before and not self.savepoint:
            raise UsageError("--before needs --savepoint: it is the earlier savepoint to compare it with")
        for topic, count in self.partitions:
            if count < 1:
                raise UsageError(
                    f"--partitions must be at least 1, not {count}" + (f" (topic {topic})" if topic else "")
                )
        if sum(topic is None for topic, _ in self.partitions) > 1:
            raise UsageError("--partitions N names the one source topic: give it once, or TOPIC=N per topic")
        if self.group and not self.bootstrap:
            raise UsageError("--group needs --bootstrap: the group's offsets are read from the Kafka cluster")
        if self.sink_format == "kafka" and not self.bootstrap:
            raise UsageError("--sink-format kafka needs --bootstrap: --sink names a topic of that cluster")
        if self.bootstrap and not self.topics and not self.savepoint:
            raise UsageError("--bootstrap needs --topic (or a --savepoint whose sources name their topics)")
        if self.identity is not None and not (self.sink and self.bootstrap):
            raise UsageError(
                "--sink-key/--source-key and --match-payload need --sink and --bootstrap: the sink's rows are mapped "
                "to the records of the source topics, read from that cluster"
            )
        if self.sink_naming is not None:
            if not self.sink or self.sink_format == "kafka":
                raise UsageError("--sink-naming needs --sink naming a directory of files: it reads their names")
            NamingTemplate.custom(self.sink_naming)  # a template it cannot read is refused now, not after Spark
        if self.aggregate is not None and not (self.sink and self.bootstrap and self.before and self.savepoint):
            raise UsageError(
                "--aggregate needs --sink, --bootstrap, --before SP0 and --savepoint SP1: the sink's aggregates are "
                "reconciled with the source records from SP0's offsets to SP1's, read from that cluster"
            )
        if self.aggregate is not None and self.identity is not None:
            raise UsageError("--aggregate reconciles aggregates, not records: give no --sink-key/--match-payload")
        if self.subscription and not self.before:
            raise UsageError("--subscription needs --before: the savepoint the job was restored from")
        if self.jar and not self.before:
            raise UsageError("--jar needs --before: it is the jar of the job restored from that savepoint")
        for path, option in ((self.savepoint, "--savepoint"), (self.before, "--before")):
            if path:
                _check_exists(path, option)
        if self.sink and self.sink_format != "kafka":
            _check_exists(self.sink, "--sink")

    @property
    def naming(self) -> NamingTemplate:
        """How the sink's file names are read for its ledger: --sink-naming's template, else Beam's own names."""
        return NamingTemplate.beam_defaults() if self.sink_naming is None else NamingTemplate.custom(self.sink_naming)


@dataclass(frozen=True)
class DiffRequest:
    """Two savepoints of one job to compare (`diff SP0 SP1`: the earlier, then the later), and how to read them.
    Made only with savepoints that exist (`__post_init__`)."""

    before: str
    after: str
    savepoint_options: SavepointOptions = field(default_factory=SavepointOptions)

    def __post_init__(self) -> None:
        for path, argument in ((self.before, "SP0"), (self.after, "SP1")):
            _check_exists(path, argument)


def _check_exists(path: str, named: str) -> None:
    """A local path must exist; URIs (file:, s3://, hdfs://, gs://) are left to the readers. `named`: the option
    or argument that gave it."""
    if len(urlparse(path).scheme) <= 1 and not Path(path).exists():
        raise UsageError(f"{path}: no such file or directory ({named})")
