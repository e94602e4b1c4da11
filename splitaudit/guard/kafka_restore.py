"""The restore failures of Flink's own `KafkaSource` (flink-connector-kafka 3.3.0) that the guard predicts from a
savepoint's split and enumerator state, what the restored job is told (`KafkaSourceJob`: its subscription and
starting offsets, from its arguments) and, with `--bootstrap`, the topics' offsets now.

Each prediction names the fact that decided it. The connector's behaviour cited is 3.3.0's
(`KafkaSourceEnumerator`, `KafkaSourceBuilder`, `KafkaPartitionSplitReader`), measured on the stack's Flink
1.19.3 (tests/integration/test_flink_kafka_restore_bugs.py, docs/flink-kafka-jobs.md):

- `bounded_restore_never_finishes` (FLINK-31006): a bounded source restored with nothing new to list;
- `removed_topic_still_read` (FLINK-34089): splits of a topic the restored job no longer subscribes to;
- `offset_past_log_end` (a topic deleted and re-created behind the savepoint): a split's next offset above the
  partition's end offset now, so the consumer's `auto.offset.reset` decides where it reads;
- `starting_offsets_ignored_on_restore`: the restored splits resume at the savepoint's offsets, whatever the
  restored job's `setStartingOffsets` says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from splitaudit.audit.checks.findings import ERROR, INFO, WARNING, Finding
from splitaudit.audit.checks.recreated_topics import OFFSET_PAST_LOG_END
from splitaudit.errors import UsageError
from splitaudit.splits.kafka import NO_STOPPING_OFFSET, KafkaEnumeratorState, KafkaPartitionSplit, kafka_source_states

if TYPE_CHECKING:
    from splitaudit.clients.kafka import PartitionOffsets
    from splitaudit.savepoint_view import SavepointView

BOUNDED_NEVER_FINISHES = "bounded_restore_never_finishes"
REMOVED_TOPIC_READ = "removed_topic_still_read"
STARTING_OFFSETS_IGNORED = "starting_offsets_ignored_on_restore"

# `setStartingOffsets` as the guard is told it; KafkaSourceBuilder sets the consumers' auto.offset.reset from it
# (`OffsetsInitializer.getAutoOffsetResetStrategy`: earliest -> earliest, latest -> latest, committedOffsets()
# -> none unless given a strategy).
STARTING_OFFSETS = ("earliest", "latest", "committed")
LATEST_OFFSET = -1  # KafkaPartitionSplit.LATEST_OFFSET: a stopping offset the reader resolves to the log end


@dataclass(frozen=True)
class KafkaSourceJob:
    """What the restored job's KafkaSource is built with, as its arguments say (the savepoint does not hold it).

    `topics`: its `setTopics` (None: not told, the savepoint's topics assumed); `starting_offsets`: its
    `setStartingOffsets`, one of STARTING_OFFSETS (None: not told)."""

    topics: tuple[str, ...] | None = None
    starting_offsets: str | None = None

    def __post_init__(self) -> None:
        if self.starting_offsets is not None and self.starting_offsets not in STARTING_OFFSETS:
            raise UsageError(f"--kafka-starting-offsets is one of {', '.join(STARTING_OFFSETS)}, not "
                             f"{self.starting_offsets!r}")  # fmt: skip


@dataclass(frozen=True)
class KafkaSourceSnapshot:
    """One KafkaSource operator of a savepoint: its reader splits and its enumerator's checkpoint."""

    operator: str  # uid, else id
    splits: tuple[KafkaPartitionSplit, ...]
    enumerator: KafkaEnumeratorState | None

    @property
    def bounded(self) -> bool:
        """Whether its splits carry a stopping offset (a `setBounded` source); False without splits."""
        return any(split.stopping_offset != NO_STOPPING_OFFSET for split in self.splits)


def kafka_source_snapshots(view: SavepointView) -> tuple[KafkaSourceSnapshot, ...]:
    """Every source operator of `view` whose reader splits or enumerator are Flink's KafkaSource's."""
    snapshots = []
    for operator in view.operators:
        source = operator.source
        if source is None:
            continue
        enumerator = source.enumerator
        states = (s.state for s in source.reader_splits)
        splits, kafka_state = kafka_source_states(states, None if enumerator is None else enumerator.state)
        if splits or kafka_state is not None:
            snapshots.append(KafkaSourceSnapshot(operator.uid or operator.operator_id, splits, kafka_state))
    return tuple(snapshots)


def kafka_restore_findings(
    snapshots: Sequence[KafkaSourceSnapshot],
    job: KafkaSourceJob,
    kafka: Mapping[tuple[str, int], PartitionOffsets],
) -> list[Finding]:
    """The guard's findings on restoring `snapshots` into a job built as `job` says, `kafka` the offsets of the
    savepoint's topics now (empty without --bootstrap)."""
    findings: list[Finding] = []
    for snapshot in snapshots:
        findings += _never_finishes(snapshot, job, kafka)
        findings += _removed_topics(snapshot, job, kafka)
        findings += _past_log_end(snapshot, job, kafka)
        findings += _starting_offsets_ignored(snapshot, job, kafka)
    return findings


def _never_finishes(
    snapshot: KafkaSourceSnapshot, job: KafkaSourceJob, kafka: Mapping[tuple[str, int], PartitionOffsets]
) -> list[Finding]:
    """FLINK-31006 on connector 3.3.0: a bounded KafkaSource restored from a savepoint never finishes.

    A reader ends only after the enumerator signals that no more splits come (`SourceReaderBase`); the
    enumerator does so in `assignPendingPartitionSplits` once `noMoreNewPartitionSplits` is set, which only
    `handlePartitionSplitChanges` sets. A bounded source lists its partitions once at start (KafkaSourceBuilder
    forces `partition.discovery.interval.ms` -1); `checkPartitionChanges` compares the listing with the
    restored state's assigned partitions and returns at once when nothing changed, so the flag stays false,
    no reader is told, and the job runs on after its splits reach their stopping offsets. It finishes only if
    the listing differs: a partition added, a topic removed, or a partition the state holds as unassigned
    (not yet handed out: state version 2 on).
    """
    state = snapshot.enumerator
    if not snapshot.bounded or state is None:
        return []
    assigned = {(p.topic, p.partition) for p in state.partitions if p.status == "ASSIGNED"}
    unassigned = len(state.partitions) - len(assigned)
    state_topics = {topic for topic, _ in assigned}
    if unassigned or (job.topics is not None and set(job.topics) != state_topics):
        return []  # the listing names a partition the state does not, or misses one: a change, the flag is set
    listed = {key for key in kafka if key[0] in state_topics}
    if kafka and listed != assigned:
        return []
    told = "its subscription as told" if job.topics is not None else "the savepoint's topics"
    if kafka:
        listing = f"the topics now ({told}) have exactly those {len(listed)} partitions"
    else:
        listing = f"unless {told} gained partitions (no --bootstrap to list them)"
    stops = sorted({s.stopping_offset for s in snapshot.splits if s.stopping_offset != NO_STOPPING_OFFSET})
    stop_text = ", ".join("latest" if s == LATEST_OFFSET else str(s) for s in stops)
    detail = (
        f"source {snapshot.operator}: decided by the savepoint: its splits carry stopping offsets ({stop_text}: a "
        f"bounded source) and its KafkaSourceEnumState (version {state.version}) names all {len(assigned)} "
        f"partitions assigned, none unassigned; {listing}. The restored enumerator's one listing finds no change, "
        "so it never signals that no more splits come (FLINK-31006, measured on connector 3.3.0; the fix, PR #318, "
        "is unreleased): the readers reach their stopping offsets and the job never finishes. Start the bounded "
        "job without the savepoint (its own starting offsets, e.g. the group's committed offsets), or cancel it "
        "once its sink holds the stopping offsets"
    )
    return [Finding(BOUNDED_NEVER_FINISHES, ERROR, None, None, len(assigned), detail=detail)]


def _removed_topics(
    snapshot: KafkaSourceSnapshot, job: KafkaSourceJob, kafka: Mapping[tuple[str, int], PartitionOffsets]
) -> list[Finding]:
    """FLINK-34089 on connector 3.3.0: splits of a topic the restored job no longer subscribes to are read on.

    The readers get their splits back from the savepoint's reader state, whatever the subscription;
    `KafkaSourceEnumerator.getPartitionChange` sees the topic's partitions as removed, and
    `handlePartitionSplitChanges` does nothing with them ("TODO: Handle removed partitions"). With `kafka`, the
    offsets past the split's next offset now are what the restore reads of it at once.
    """
    if job.topics is None:
        return []
    findings = []
    for split in sorted(snapshot.splits, key=lambda s: (s.topic, s.partition)):
        if split.topic in job.topics:
            continue
        offsets = kafka.get((split.topic, split.partition))
        start = split.starting_offset
        count = 0 if offsets is None or start < 0 else max(0, offsets.end - max(start, offsets.log_start))
        ranges = ((max(start, offsets.log_start), offsets.end - 1),) if offsets is not None and count else ()
        now = "" if offsets is None else f"; {count} records past it now (end offset {offsets.end}), and all after"
        detail = (
            f"source {snapshot.operator}: decided by the savepoint's reader split of {split.topic} (next offset "
            f"{start}) and the restored job's topics ({', '.join(job.topics)}), which no longer name it: the "
            f"readers restore the split and read on (FLINK-34089, connector 3.3.0){now}. Restore with a new source "
            "uid (and --allowNonRestoredState) to drop every split, or keep the topic subscribed"
        )
        findings.append(Finding(REMOVED_TOPIC_READ, ERROR, split.topic, split.partition, count, ranges, detail=detail))
    return findings


def _past_log_end(
    snapshot: KafkaSourceSnapshot, job: KafkaSourceJob, kafka: Mapping[tuple[str, int], PartitionOffsets]
) -> list[Finding]:
    """A split whose next offset is above its partition's end offset now: the topic was deleted and re-created
    (or truncated) behind the savepoint, and the savepoint's offsets belong to another log.

    The restored reader seeks to the split's offset (`KafkaPartitionSplitReader`); the broker answers
    OFFSET_OUT_OF_RANGE and the consumer resets as `auto.offset.reset` says, which KafkaSourceBuilder sets
    from `setStartingOffsets`: earliest reads the new log from its start, latest skips to its end (the new
    log's records and every one produced until the reset are never read), committed without a strategy fails.
    """
    findings = []
    for split in sorted(snapshot.splits, key=lambda s: (s.topic, s.partition)):
        offsets = kafka.get((split.topic, split.partition))
        if offsets is None or split.starting_offset <= offsets.end or split.starting_offset < 0:
            continue
        new = offsets.end - offsets.log_start
        ranges = ((offsets.log_start, offsets.end - 1),) if new else ()
        seen = (
            f"source {snapshot.operator}: the savepoint's next offset {split.starting_offset} is past the partition's "
            f"log now ({offsets.log_start}..{offsets.end - 1}): the topic was deleted and re-created (or truncated) "
            "behind the savepoint; the restored reader's offset is out of range and the consumer's "
            "auto.offset.reset decides"
        )
        severity, sentence = _reset_outcome(job.starting_offsets, new, offsets.log_start)
        detail = f"{seen}: {sentence}"
        finding = Finding(OFFSET_PAST_LOG_END, severity, split.topic, split.partition, new, ranges, detail=detail)
        findings.append(finding)
    return findings


def _reset_outcome(starting_offsets: str | None, new: int, log_start: int) -> tuple[str, str]:
    """The severity and sentence of an out-of-range restored offset under the job's `setStartingOffsets`."""
    if starting_offsets == "earliest":
        return WARNING, (
            f"earliest (setStartingOffsets earliest): it reads the new log from {log_start}, {new} records; "
            "the savepoint's offsets meant another log"
        )
    if starting_offsets == "latest":
        return ERROR, f"latest (setStartingOffsets latest): it skips to the log end: the {new} records there are lost"
    if starting_offsets == "committed":
        return ERROR, "none (setStartingOffsets committed, no reset strategy): the reader fails"
    return WARNING, (
        f"earliest reads the new log's {new} records from {log_start}, latest skips them (loss); pass the job's "
        "starting offsets to say which"
    )


def _starting_offsets_ignored(
    snapshot: KafkaSourceSnapshot, job: KafkaSourceJob, kafka: Mapping[tuple[str, int], PartitionOffsets]
) -> list[Finding]:
    """`setStartingOffsets` applies only to partitions the savepoint does not name: a restored split keeps its
    offset (`KafkaSourceReader` restores it as checkpointed; the enumerator's `initializePartitionSplits` uses
    the starting offsets only for partitions it lists as unassigned initial ones). A split past its log end is
    `offset_past_log_end`'s: there the setting decides, through auto.offset.reset."""
    if job.starting_offsets is None:
        return []
    findings = []
    for split in sorted(snapshot.splits, key=lambda s: (s.topic, s.partition)):
        offsets = kafka.get((split.topic, split.partition))
        past_end = offsets is not None and split.starting_offset > offsets.end
        if (job.topics is not None and split.topic not in job.topics) or split.starting_offset < 0 or past_end:
            continue
        detail = (
            f"source {snapshot.operator}: the restored split resumes at the savepoint's next offset "
            f"{split.starting_offset}, not at the job's setStartingOffsets ({job.starting_offsets}), which a "
            "restore applies only to partitions its savepoint does not name"
        )
        findings.append(Finding(STARTING_OFFSETS_IGNORED, INFO, split.topic, split.partition, 0,
                                detail=detail))  # fmt: skip
    return findings
