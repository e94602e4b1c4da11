"""The KafkaSource side of `splitaudit watch`: what Flink's own Kafka connector reports of each partition it reads
(`KafkaSourceReaderMetrics`, flink-connector-kafka 3.3.0), and the findings those positions prove against the
offsets the job restored.

The connector registers, per subtask, one metric group per partition its reader holds,
`KafkaSourceReader.topic.<topic>.partition.<p>`, with two gauges: `currentOffset`, the offset of the last record
the split reader fetched (`INITIAL_OFFSET` -1 until its first; set before the record is emitted), and
`committedOffset`, the next offset committed to the group at the last completed checkpoint (-1 before). A
partition no reader holds has no group on any subtask. With the source operator's `numRecordsOut` (records
emitted this attempt; Flink's `MetricDumpSerialization.MetricDumpSerializer` reads every counter before the
gauges, so a poll's count never covers records fetched after its positions) they prove three things:

- `partition_read_twice`: a partition's group on two subtasks is two readers of it;
- `read_below_restored`: a reader at an offset below the one the job restored the partition from (last fetched,
  or committed at a checkpoint), or a subtask that emitted more records than its partitions advanced past their
  restored offsets (one reader starting at the restored offset emits at most what it fetched): the partition was
  rewound, its offsets below the restored one read a second time (e.g. the source's state dropped by a restore
  with another uid and `--allowNonRestoredState`: the source starts from its starting offsets);
- `partition_not_read` (when the watch ends): a partition the savepoint resumes, or (with `--bootstrap`) one of
  the topic's partitions holding records, that no reader held at any poll.

The source is found by the savepoint's state, not by name (SQL jobs give their operators no uids): Flink's
vertex id is its head operator's id, the id the savepoint keys the source's split state by
(`source_vertex`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from splitaudit.audit.checks.findings import ERROR, Finding
from splitaudit.audit.checks.savepoint_tables import SavepointTables
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.guard.positions import PartitionPositions, PositionsSeen, position_tally
from splitaudit.guard.tally import Key
from splitaudit.guard.watch.judging import PARTITION_READ_TWICE, RECORDS_OUT

READ_BELOW_RESTORED = "read_below_restored"
PARTITION_NOT_READ = "partition_not_read"
SOURCE_STATE_DROPPED = "source_state_dropped"

READER_GROUP = ".KafkaSourceReader."  # KafkaSourceReaderMetrics.KAFKA_SOURCE_READER_METRIC_GROUP
# The Kafka client's own metrics the connector mirrors (hundreds per subtask): never asked for.
CONSUMER_GROUP = ".KafkaSourceReader.KafkaConsumer."
PARTITION_METRIC = re.compile(
    r"\.KafkaSourceReader\.topic\.(?P<topic>.+)\.partition\.(?P<partition>\d+)\.(?P<gauge>currentOffset|committedOffset)$"
)
NOT_YET = -1  # KafkaSourceReaderMetrics.INITIAL_OFFSET: nothing fetched (current) or committed yet


def wanted(name: str) -> bool:
    """Whether the watch asks Flink for a source metric: all but the Kafka client's own (too many for one GET)."""
    return CONSUMER_GROUP not in name


@dataclass(frozen=True)
class ReaderPosition:
    """One partition's gauges on one subtask: the last offset fetched and the next one committed (-1: none yet)."""

    current: int
    committed: int


@dataclass(frozen=True)
class PositionSample:
    """What one source subtask's KafkaSourceReader metrics say at one poll."""

    subtask: int
    positions: Mapping[Key, ReaderPosition]
    records_out: int | None  # the source operator's numRecordsOut this attempt (None: not reported yet)


def position_sample(subtask: int, metrics: Mapping[str, str]) -> PositionSample | None:
    """Read a source subtask's metrics (the watch's `Source__` prefix); None when it has no KafkaSourceReader
    metric at all (not a KafkaSource, e.g. Beam's reader)."""
    gauges: dict[Key, dict[str, int]] = {}
    records_out, kafka_source = None, False
    for name, value in metrics.items():
        kafka_source |= READER_GROUP in name
        match = PARTITION_METRIC.search(name)
        if match and _integer(value) is not None:
            key = (match["topic"], int(match["partition"]))
            gauges.setdefault(key, {})[match["gauge"]] = int(value)
        elif name.endswith(RECORDS_OUT) and value.isdigit():
            records_out = int(value)
    if not kafka_source:
        return None
    positions = {
        key: ReaderPosition(g.get("currentOffset", NOT_YET), g.get("committedOffset", NOT_YET))
        for key, g in gauges.items()
    }
    return PositionSample(subtask, positions, records_out)


def judge_positions(
    samples: Sequence[PositionSample], start: Mapping[Key, int] | None, kafka: Mapping[Key, PartitionOffsets]
) -> list[Finding]:
    """The findings of one poll of a KafkaSource: partitions two subtasks hold, and (unless `start` is None)
    readers below the offset the attempt restored (`start`) and subtasks that emitted more than their partitions
    advanced past it. A partition `start` lacks (new since the savepoint) starts at its log start (`kafka`), else
    0: the lowest it can."""
    findings: list[Finding] = []
    holders: dict[Key, list[int]] = {}
    for sample in samples:
        for key in sample.positions:
            holders.setdefault(key, []).append(sample.subtask)
    for (topic, partition), subtasks in sorted(holders.items()):
        if len(subtasks) > 1:
            detail = (
                f"subtasks {' and '.join(map(str, sorted(subtasks)))} both hold a reader of this partition "
                "(the KafkaSourceReader's metric group of it on each)"
            )
            findings.append(Finding(PARTITION_READ_TWICE, ERROR, topic, partition, len(subtasks), detail=detail))
    if start is not None:
        for sample in samples:
            findings += _below(sample, start, kafka)
    return findings


def _below(sample: PositionSample, start: Mapping[Key, int], kafka: Mapping[Key, PartitionOffsets]) -> list[Finding]:
    """One subtask's rewound partitions. Three lower bounds of where a rewound reader started, the lowest kept: its
    last fetched offset or the next offset its last checkpoint committed, when below the restored offset, and
    (a subtask holding one partition) the restored offset less what it emitted beyond what it advanced. A subtask
    of several partitions that emitted too much, with none of them seen below, is one finding of its own."""
    advanced, lowest = 0, {}
    for key, position in sorted(sample.positions.items()):
        offsets = kafka.get(key)
        first = start.get(key, offsets.log_start if offsets else 0)
        if position.current != NOT_YET:
            advanced += position.current + 1 - first
        seen = [o for o in (position.current, position.committed) if key in start and 0 <= o < first]
        if seen:
            lowest[key] = (min(seen), f"its reader on subtask {sample.subtask} was seen at offset {min(seen)}")
    excess = (sample.records_out or 0) - advanced
    emitted = (
        f"subtask {sample.subtask} emitted {sample.records_out} records, but its readers advanced {advanced} past "
        f"the restored offsets"
    )
    readers = sorted(sample.positions)
    if excess > 0 and len(readers) == 1 and readers[0] in start:
        first = start[readers[0]] - excess
        if first < lowest.get(readers[0], (first + 1, ""))[0]:
            lowest[readers[0]] = (first, emitted)
    findings = []
    for (topic, partition), (offset, why) in sorted(lowest.items()):
        restored = start[(topic, partition)]
        detail = (
            f"{why}, below the restored offset {restored}: offsets {offset}..{restored - 1} (at least) are read a "
            "second time"
        )
        ranges = ((offset, restored - 1),)
        findings.append(Finding(READ_BELOW_RESTORED, ERROR, topic, partition, restored - offset, ranges, detail=detail))
    if findings or excess <= 0:
        return findings
    held = ", ".join(f"{t}-{p}" for t, p in readers)
    detail = f"{emitted}: at least {excess} were read from below them (one of {held})"
    return [Finding(READ_BELOW_RESTORED, ERROR, None, None, excess, detail=detail)]


def not_read(held: frozenset[Key], start: Mapping[Key, int], kafka: Mapping[Key, PartitionOffsets]) -> list[Finding]:
    """When the watch ends: the partitions the job restored (`start`) or (`kafka`) holding records past where it
    would start them, that no reader held at any poll."""
    findings: list[Finding] = []
    for topic, partition in sorted(set(start) | set(kafka)):
        if (topic, partition) in held:
            continue
        offsets = kafka.get((topic, partition))
        first = start.get((topic, partition), offsets.log_start if offsets else 0)
        end = offsets.end if offsets else None
        if end is not None and end <= first and (topic, partition) not in start:
            continue  # empty, and not in the savepoint: nothing to read
        count = max(0, end - first) if end is not None else 0
        ranges = ((first, end - 1),) if end is not None and end > first else ()
        why = "restored from offset" if (topic, partition) in start else "holding records from offset"
        left = f" ({count} records up to end offset {end})" if end is not None else ""
        detail = f"no reader held this partition, {why} {first}{left}, at any poll"
        findings.append(Finding(PARTITION_NOT_READ, ERROR, topic, partition, count, ranges, detail=detail))
    return findings


def split_operators(savepoint: SavepointTables) -> tuple[str, ...]:
    """The ids of the operators whose state in `savepoint` holds Kafka splits (the sources), in table order."""
    return tuple(dict.fromkeys(str(r["operator_id"]) for r in savepoint.splits if r["topic"] is not None))


def source_vertex(vertices: Sequence[Mapping[str, Any]], operators: Sequence[str]) -> Mapping[str, Any] | None:
    """The job's vertex whose head operator is a source the savepoint holds splits of (a vertex's id is its head
    operator's); None when none is."""
    return next((v for op in operators for v in vertices if v.get("id") == op), None)


def dropped(operators: Sequence[str], source: Mapping[str, Any], job: str) -> Finding:
    """The savepoint's sources are no vertex of the job: their splits were not restored."""
    detail = (
        f"the savepoint holds Kafka splits of operator {', '.join(operators)}, which is no vertex of job {job}: "
        f"its source {source.get('id')} ({source.get('name')}) restored none of them (another uid, restored with "
        "allowNonRestoredState) and starts from its starting offsets"
    )
    return Finding(SOURCE_STATE_DROPPED, ERROR, None, None, len(operators), detail=detail)


@dataclass
class KafkaSourceReaders:
    """The KafkaSource readers the watch followed: each poll's samples, and every partition held at any poll."""

    samples: tuple[PositionSample, ...] = ()
    held: set[Key] = field(default_factory=set)
    last_read: dict[Key, int] = field(default_factory=dict)  # per partition the last `currentOffset` seen
    seen: bool = False  # the source reported KafkaSourceReader metrics at some poll

    def polled(self, subtasks: Sequence[Mapping[str, str]]) -> None:
        """Take one poll's metrics, subtask by subtask."""
        samples = [position_sample(i, metrics) for i, metrics in enumerate(subtasks)]
        self.samples = tuple(s for s in samples if s is not None)
        self.seen |= bool(self.samples)
        self.held.update(key for s in self.samples for key in s.positions)
        self.last_read.update(
            (key, p.current) for s in self.samples for key, p in s.positions.items() if p.current != NOT_YET
        )

    def positions(
        self, restored: Mapping[Key, int], findings: Iterable[Finding], kafka: Mapping[Key, PartitionOffsets]
    ) -> tuple[PartitionPositions, ...]:
        """The final tally in positions (`guard/positions.py`): per partition where the job resumed it
        (`restored`), the last offset read, the range read (from further down where `findings` hold a
        `read_below_restored` of it) and the range it had to read up to its end offset (`kafka`)."""
        below = {
            (f.topic, f.partition): f.offset_ranges[0][0]
            for f in findings
            if f.kind == READ_BELOW_RESTORED and f.topic is not None and f.partition is not None and f.offset_ranges
        }
        seen = PositionsSeen(restored, self.last_read, frozenset(self.held), below)
        return position_tally(seen, {key: (o.log_start, o.end) for key, o in kafka.items()})


def _integer(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None
