"""The KafkaSource restore failures `splitaudit watch` sees in the connector's own metrics while the restored job
runs (docs/flink-kafka-jobs.md, "Restore failures"): the same failures the guard predicts before the restore
(`splitaudit.guard.kafka_restore`) and the audit finds after it, under the same kinds, proven here by what the
readers did. Pure functions of the polls' `KafkaSourceReaderMetrics` positions (`kafka_source.PositionSample`,
flink-connector-kafka 3.3.0 to 5.0.0: `currentOffset` is the offset of the last record fetched, -1 before the
first), the savepoint's reader splits and, with `--bootstrap`, the topics' offsets when the watch started:

- `removed_topic_read` (FLINK-34089): a reader holds a partition of a topic the restored job no longer subscribes
  to (`--kafka-topics`, as the guard is told) and fetched records of it: count and range the offsets read;
- `bounded_restore_never_finishes` (FLINK-31006): the savepoint's splits are bounded and, for at least
  `BOUNDED_GRACE` seconds of polls of the running job, every one's reader has fetched the record before its
  stopping offset: nothing is left to read, and the job has not finished;
- `offset_past_log_end` (a topic deleted and re-created behind the savepoint): the restored offset is past the
  partition's log end, so `auto.offset.reset` decided. A reader seen below the restored offset read the new log
  from its start (warning, in place of the generic `read_below_restored`, which would call it a second read);
  one that fetched nothing of the new log by the watch's end skipped it (error, at the end). Such a partition's
  final tally (`read_twice`: what its readers read against its offsets from the restored one to the log end) is
  dropped: a restored offset past the log end makes it count the new log's records as read twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from splitaudit.audit.checks.findings import ERROR, WARNING, Finding
from splitaudit.audit.checks.recreated_topics import OFFSET_PAST_LOG_END
from splitaudit.audit.checks.removed_topics import REMOVED_TOPIC_READ
from splitaudit.audit.checks.savepoint_tables import SavepointTables
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.guard.kafka_restore import BOUNDED_NEVER_FINISHES
from splitaudit.guard.tally import Key
from splitaudit.guard.watch.judging import READ_TWICE
from splitaudit.guard.watch.kafka_source import NOT_YET, READ_BELOW_RESTORED, PositionSample

# Seconds every bounded reader must have stood at its stopping offset, polled in a running job, before the watch
# says the job will not finish: a job that does finish ends within a poll or two of its last record.
BOUNDED_GRACE = 10.0


def stopping_offsets(tables: SavepointTables) -> dict[Key, int]:
    """The savepoint's bounded reader splits: per (topic, partition) the stopping offset (the first offset not
    read). A negative one (`KafkaPartitionSplit.LATEST_OFFSET`, resolved by the reader) is left out."""
    return {
        (str(r["topic"]), int(r["partition"])): int(r["stopping_offset"])
        for r in tables.splits
        if r["topic"] is not None and r["stopping_offset"] is not None and int(r["stopping_offset"]) >= 0
    }


def removed_topics_read(
    samples: Sequence[PositionSample], subscription: frozenset[str], start: Mapping[Key, int]
) -> list[Finding]:
    """Partitions of topics outside `subscription` whose reader fetched records: from the restored offset (`start`;
    else the first record fetched is all the watch knows) to the last fetched."""
    findings = []
    for sample in samples:
        for (topic, partition), position in sorted(sample.positions.items()):
            if topic in subscription or position.current == NOT_YET:
                continue
            first = start.get((topic, partition), position.current)
            count = max(0, position.current + 1 - first)
            detail = (
                f"the restored job subscribes to {', '.join(sorted(subscription))}, yet its reader on subtask "
                f"{sample.subtask} holds this partition (restored from the savepoint) and fetched up to offset "
                f"{position.current} (FLINK-34089)"
            )
            ranges = ((first, position.current),) if count else ()
            findings.append(Finding(REMOVED_TOPIC_READ, ERROR, topic, partition, count, ranges, detail=detail))
    return findings


def bounded_at_end(samples: Sequence[PositionSample], stopping: Mapping[Key, int], start: Mapping[Key, int]) -> bool:
    """Whether every bounded split (`stopping`) has nothing left to read at this poll: its reader fetched the
    offset before the stopping offset, or it was restored at (or past) its stopping offset."""
    current = {key: p.current for s in samples for key, p in s.positions.items()}
    return bool(stopping) and all(
        current.get(key, NOT_YET) >= stop - 1 or start.get(key, -1) >= stop for key, stop in stopping.items()
    )


def bounded_not_finished(stopping: Mapping[Key, int], seconds: float) -> list[Finding]:
    """FLINK-31006 seen: every bounded split at its stopping offset for `seconds`, the job still running."""
    stops = ", ".join(f"{t}-{p} at {stop}" for (t, p), stop in sorted(stopping.items()))
    detail = (
        f"every bounded split's reader has read up to its stopping offset ({stops}) and the job still runs "
        f"{seconds:.0f} s later: the restored enumerator never says that no more splits come (FLINK-31006)"
    )
    return [Finding(BOUNDED_NEVER_FINISHES, ERROR, None, None, len(stopping), detail=detail)]


def past_log_end(start: Mapping[Key, int], kafka: Mapping[Key, PartitionOffsets]) -> dict[Key, PartitionOffsets]:
    """The restored partitions whose log now ends below the restored offset (another log: re-created)."""
    return {key: kafka[key] for key, offset in start.items() if key in kafka and kafka[key].end < offset}


def offset_resets(
    findings: Sequence[Finding],
    samples: Sequence[PositionSample],
    start: Mapping[Key, int],
    kafka: Mapping[Key, PartitionOffsets],
) -> list[Finding]:
    """`findings` with each `read_below_restored` of a partition restored past its log end replaced by
    `offset_past_log_end` (warning): its reader reset to the new log's start and read it from there."""
    reset = past_log_end(start, kafka)
    current = {key: p.current for s in samples for key, p in s.positions.items()}
    kept = [f for f in findings if f.kind != READ_BELOW_RESTORED or (str(f.topic), f.partition) not in reset]
    for (topic, partition), offsets in sorted(reset.items()):
        seen = current.get((topic, partition), NOT_YET)
        if seen == NOT_YET or seen >= start[(topic, partition)]:
            continue
        restored = start[(topic, partition)]
        detail = (
            f"restored at offset {restored}, past the log's end {offsets.end} (the topic was deleted and re-created, "
            f"or truncated): auto.offset.reset sent the reader to offset {offsets.log_start}; it fetched up to "
            f"{seen} of this other log"
        )
        count, ranges = seen + 1 - offsets.log_start, ((offsets.log_start, seen),)
        kept.append(Finding(OFFSET_PAST_LOG_END, WARNING, topic, partition, count, ranges, detail=detail))
    return kept


def resets_unread(
    fetched: Mapping[Key, int], start: Mapping[Key, int], kafka: Mapping[Key, PartitionOffsets]
) -> list[Finding]:
    """When the watch ends: partitions restored past their log end whose reader fetched nothing (`fetched`: the
    last offset a reader was seen to fetch per partition, `KafkaSourceReaders.last_read`), though the log holds
    records: auto.offset.reset skipped them (latest)."""
    findings = []
    for (topic, partition), offsets in sorted(past_log_end(start, kafka).items()):
        if fetched.get((topic, partition), NOT_YET) != NOT_YET or offsets.end <= offsets.log_start:
            continue
        count = offsets.end - offsets.log_start
        detail = (
            f"restored at offset {start[(topic, partition)]}, past the log's end {offsets.end}: auto.offset.reset "
            f"sent the reader elsewhere and it fetched none of the {count} records the log held"
        )
        ranges = ((offsets.log_start, offsets.end - 1),)
        findings.append(Finding(OFFSET_PAST_LOG_END, ERROR, topic, partition, count, ranges, detail=detail))
    return findings


def without_reset_tallies(
    findings: Sequence[Finding], start: Mapping[Key, int], kafka: Mapping[Key, PartitionOffsets]
) -> list[Finding]:
    """The final tally's `findings` less the `read_twice` of partitions restored past their log end (`kafka`: the
    offsets when the watch started): counted from an offset of another log, the figure means nothing."""
    reset = past_log_end(start, kafka)
    return [f for f in findings if f.kind != READ_TWICE or (str(f.topic), f.partition) not in reset]


@dataclass
class KafkaRestoreWatch:
    """What the watch keeps between polls for these judgments: the restored job's subscription (None: not told),
    the savepoint's stopping offsets, and since when (the watch's clock) every bounded reader stood at its stopping
    offset."""

    subscription: frozenset[str] | None = None
    stopping: Mapping[Key, int] = field(default_factory=dict)
    at_end_since: float | None = None

    @classmethod
    def of(cls, tables: SavepointTables, subscription: Sequence[str] | None) -> KafkaRestoreWatch:
        """The judgments of a job restored from `tables`, subscribing to `subscription` (None: not told)."""
        return cls(None if subscription is None else frozenset(subscription), stopping_offsets(tables))

    def judge(
        self,
        findings: Sequence[Finding],
        samples: Sequence[PositionSample],
        start: Mapping[Key, int],
        kafka: Mapping[Key, PartitionOffsets],
        now: float,
    ) -> list[Finding]:
        """One poll of the running job: `findings` (the generic judgment's) explained and extended."""
        judged = offset_resets(findings, samples, start, kafka)
        if self.subscription is not None:
            judged += removed_topics_read(samples, self.subscription, start)
        if not bounded_at_end(samples, self.stopping, start):
            self.at_end_since = None
        elif self.at_end_since is None:
            self.at_end_since = now
        elif now - self.at_end_since >= BOUNDED_GRACE:
            judged += bounded_not_finished(self.stopping, now - self.at_end_since)
        return judged
