"""The watch's final tally of a Flink `KafkaSource` job, in positions: per partition, where the job resumed it, the
last offset its reader was seen at, the range of offsets that says it read, and whether that is the range it
had to read.

The connector reports positions, not counts (`KafkaSourceReaderMetrics`: `currentOffset`, the offset of the last
record fetched), so this tally states ranges where Beam's (`tally.py`) states records read twice. A partition the
job resumed at offset S (the savepoint's; one the savepoint lacks, from its log start) and whose log ends at E had
to read S..E-1; its reader last seen at offset L read S..L, from further down when the watch saw it rewound below S
(`read_below_restored`: the lowest offset that finding proves read).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any

Key = tuple[str, int]
Range = tuple[int, int]

READ = "read"  # the range read is the range to read
NOT_READ = "not_read"  # no reader held the partition, which had records to read
SHORT = "short"  # its reader stopped before the partition's end
BELOW_RESTORED = "read_below_restored"  # its reader read offsets below the restored one again
PAST_END = "past_end"  # its reader was seen past the end offset last read (the end offsets were older)
NOTHING_TO_READ = "nothing_to_read"  # no record past where it resumed, and none read


@dataclass(frozen=True)
class PartitionPositions:
    """One partition's positions as the watch saw them when it ended, and the verdict on them."""

    topic: str
    partition: int
    restored: int | None  # the offset the job resumed it from (None: not in the savepoint, from its log start)
    last_read: int | None  # the last `currentOffset` seen (None: no reader fetched a record of it at any poll)
    read: Range | None  # the offsets the positions say were read, first and last (None: none)
    expected: Range | None  # the offsets it had to read: from where it resumed to its end offset - 1 (None: none)
    verdict: str  # READ, NOT_READ, SHORT, BELOW_RESTORED, PAST_END or NOTHING_TO_READ

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "restored": self.restored,
            "last_read": self.last_read,
            "read": None if self.read is None else list(self.read),
            "expected": None if self.expected is None else list(self.expected),
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class PositionsSeen:
    """What the watch saw of a KafkaSource's partitions: the offsets they resumed from, per partition the last
    `currentOffset` seen, the partitions a reader held at any poll and the lowest offset a rewound reader read."""

    restored: Mapping[Key, int]
    last_read: Mapping[Key, int]
    held: Set[Key]
    below: Mapping[Key, int]  # per partition found `read_below_restored`, the lowest offset it proves read


def position_tally(seen: PositionsSeen, log: Mapping[Key, tuple[int, int]]) -> tuple[PartitionPositions, ...]:
    """Per partition the job resumed, a reader held or `log` lists (its log start and end offsets now), the
    positions and their verdict; a partition with nothing to read that no one held is left out."""
    tallies = []
    for key in sorted({*seen.restored, *seen.held, *log}):
        log_start, end = log.get(key, (0, 0))
        restored = seen.restored.get(key)
        first = log_start if restored is None else restored
        expected = (first, end - 1) if end > first else None
        if expected is None and key not in seen.held and restored is None:
            continue
        last = seen.last_read.get(key)
        low = min(first, seen.below.get(key, first))
        read = (low, last) if last is not None and last >= low else None
        verdict = _verdict(read, expected, first)
        tallies.append(PartitionPositions(key[0], key[1], restored, last, read, expected, verdict))
    return tuple(tallies)


def _verdict(read: Range | None, expected: Range | None, first: int) -> str:
    """The verdict on a range read against the range to read, which starts at `first`."""
    if read is not None and read[0] < first:
        return BELOW_RESTORED
    if read == expected:
        return READ if read is not None else NOTHING_TO_READ
    if read is None:
        return NOT_READ
    if expected is None or read[1] > expected[1]:
        return PAST_END
    return SHORT
