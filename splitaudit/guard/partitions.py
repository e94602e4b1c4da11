"""The topic partitions a savepoint's sources hold, as the guard judges a restore of them: below the guard's results
and its twin-reader prediction, which both take them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HeldPartition:
    """A topic partition a source's splits hold in the savepoint, and the offset a restore resumes it from."""

    topic: str
    partition: int
    next_offset: int | None  # None: only symbolic offsets (earliest, latest, committed)

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "next_offset": self.next_offset}


@dataclass(frozen=True)
class PendingPartition:
    """A topic partition of a split the savepoint's enumerator holds back, and the reader it waits for."""

    topic: str
    partition: int
    subtask: int | None  # None: the enumerator's state does not say which reader

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "subtask": self.subtask}
