"""What an audit is asked to do: the inputs and how to read them. Kept free of Spark so the CLI starts fast."""

from __future__ import annotations

from dataclasses import dataclass, field

SINK_FORMATS = ("parquet", "json", "csv", "orc")


@dataclass(frozen=True)
class SinkColumns:
    """Which sink columns hold the Kafka coordinates of each record."""

    topic: str = "topic"
    partition: str = "partition"
    offset: str = "offset"


@dataclass(frozen=True)
class AuditRequest:
    """What the user asked to audit, and how to run Spark."""

    sink: str
    sink_format: str = "parquet"
    columns: SinkColumns = field(default_factory=SinkColumns)
    exactly_once: bool = False
    master: str = "local[*]"
