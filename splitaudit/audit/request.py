"""What an audit is asked to do: the inputs and how to read them. Kept free of Spark so the CLI starts fast."""

from __future__ import annotations

from dataclasses import dataclass, field

from splitaudit.savepoint.fileio import DEFAULT_MAX_FILE_SIZE

FILE_FORMATS = ("parquet", "json", "csv", "orc", "avro", "text")  # text: one `value` row per line
SINK_FORMATS = (*FILE_FORMATS, "kafka")  # kafka: --sink names a topic of the --bootstrap cluster


@dataclass(frozen=True)
class SinkColumns:
    """Which sink columns hold the Kafka coordinates of each record."""

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

    @property
    def described(self) -> str:
        return f"sink {self.sink_key} = source {self.source_key}"


@dataclass(frozen=True)
class SavepointOptions:
    """How to read savepoints: which operators (uids of 1.x files) and whether state outside the dir is read."""

    uids: tuple[str, ...] = ()
    allow_external_state: bool = False
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # the largest _metadata or state file read (`--max-file-size`)


@dataclass(frozen=True)
class AuditRequest:
    """What the user asked to audit (a savepoint, a sink, or both; optionally an earlier savepoint and the
    topics' partition counts), and how to run Spark."""

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
    watermark_delay: float = 10.0  # seconds a job's watermark may trail its records' Kafka time (--watermark-delay)
