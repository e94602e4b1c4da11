"""What every split decoder returns, and how a decoded state describes itself to the audit.

A decoded reader split is a `SplitState`, a decoded enumerator checkpoint an `EnumeratorState`: frozen
dataclasses with a `type` (the JSON contract's name), their `inspect` JSON, and the flat rows the audit's
tables are made of. Each family module implements them, so the audit never asks which family a state is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

PENDING = "pending"  # an enumerator holds it back: not yet handed to a reader
ASSIGNED = "assigned"  # an enumerator has handed it to a reader
FINISHED = "finished"  # an enumerator names it done (a file source's processed path no split holds): not read again


@dataclass(frozen=True)
class PartitionRow:
    """One topic partition a split covers, as the `splits` and `enumerator` tables show it.

    A split that names no partition (a number sequence, an unknown or non-Kafka source) is one row with
    `topic` and `partition` None. `next_offset` is the next offset (or value) to read; negative values are
    Flink's symbolic offsets kept as they are. `stopping_offset` None means unbounded. `cluster` is the Kafka
    cluster id of a source that reads several clusters (DynamicKafkaSource), else None.
    """

    split_type: str
    split_id: str | None
    topic: str | None
    partition: int | None
    next_offset: int | None
    stopping_offset: int | None = None
    cluster: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "split_type": self.split_type,
            "split_id": self.split_id,
            "topic": self.topic,
            "partition": self.partition,
            "next_offset": self.next_offset,
            "stopping_offset": self.stopping_offset,
            "cluster": self.cluster,
        }


@dataclass(frozen=True)
class EnumeratorEntry:
    """One split or partition an enumerator checkpoint names: its status and the partitions it covers.

    `subtask` is the reader a pending split waits for, when the state records it. A `FINISHED` entry's rows name
    a whole topic (a file), partition None: nothing of it is read again, whether it was read to its end or a reader
    lost its split (the state cannot tell; the sink can).
    """

    subtask: int | None
    status: str  # PENDING, ASSIGNED or FINISHED
    rows: tuple[PartitionRow, ...]


class DecodedState(Protocol):
    """A decoded reader split or enumerator checkpoint: its family's name and its `inspect` JSON."""

    type: ClassVar[str]

    def to_json(self) -> dict[str, Any]: ...


class SplitState(DecodedState, Protocol):
    """A decoded reader split of one source family."""

    def partition_rows(self) -> tuple[PartitionRow, ...]:
        """The partitions the split covers; at least one row, so every split shows in the tables."""
        ...


class EnumeratorState(DecodedState, Protocol):
    """A decoded enumerator checkpoint of one source family."""

    def enumerator_entries(self) -> tuple[EnumeratorEntry, ...]:
        """Every split or partition the checkpoint names, pending or assigned."""
        ...


@dataclass(frozen=True)
class SourceFile:
    """A file a split of a file source reads: its path as the source names it, the local file system's path when
    the source names a local file (None for a remote scheme), and the size and modification time (epoch
    milliseconds) the source recorded when it made the split. The guard checks them against the file system."""

    path: str
    local_path: str | None
    size: int
    modification_time: int


@runtime_checkable
class ReadsFiles(Protocol):
    """A decoded split or enumerator checkpoint whose splits read files (a file source's)."""

    def source_files(self) -> tuple[SourceFile, ...]:
        """The files its splits still have to read (a finished file is none of them)."""
        ...


def source_files(state: DecodedState) -> tuple[SourceFile, ...]:
    """The files a decoded split or enumerator checkpoint still has to read; none for a family that reads no
    files."""
    return state.source_files() if isinstance(state, ReadsFiles) else ()


@dataclass(frozen=True)
class UnknownState:
    """Bytes no decoder recognised: kept whole, shown as hex, never a crash."""

    type: ClassVar[str] = "unknown"
    raw: bytes

    def to_json(self) -> dict[str, Any]:
        return {"hex": self.raw.hex()}

    def partition_rows(self) -> tuple[PartitionRow, ...]:
        return (PartitionRow(self.type, None, None, None, None),)

    def enumerator_entries(self) -> tuple[EnumeratorEntry, ...]:
        return ()
