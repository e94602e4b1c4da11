"""Where the twin reader of an unfixed FlinkSource restore starts, from the job's own KafkaIO consumer config.

An unfixed FlinkSource (Beam 2.52 up to the fix, beam#31313) re-initialises its splits on restore: besides the
restored reader, which resumes at the savepoint's next offset S, every partition gets a fresh reader with no
checkpoint mark. KafkaIO starts such a reader where `KafkaUnboundedReader.setupInitialOffset` says (Beam
2.54.0-2.70.0, read from the released 2.62.0 class): at `startReadTime` the first offset whose timestamp is at
or after it (`ConsumerSpEL.offsetForTime`, which throws when no record has one); without it at the Kafka
consumer's `position`, which is the group's committed offset when `group.id` is set and the group committed one
inside the log, else what `auto.offset.reset` says (earliest: the log start; latest, KafkaIO's default: the log
end at that moment; none: the consumer throws).

With the twin at T, the restored reader reads [S, ∞) and the twin [T, ∞): every offset from T on is read twice
by the restored job (those in [T, S) a second time after the first job read them), and that includes every
record produced after the restore. `predict_twin` is the pure part: the spec, the jar, the savepoint's offset
and (with `--bootstrap`) the topic's offsets in, the prediction and the fact that decided it out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from splitaudit.audit.checks.findings import offset_range
from splitaudit.audit.checks.hypotheses import COMMITTED as COMMITTED  # re-exported: the guard names these starts
from splitaudit.audit.checks.hypotheses import LOG_END_AT_RESTORE as LOG_END_AT_RESTORE
from splitaudit.audit.checks.hypotheses import LOG_START as LOG_START

if TYPE_CHECKING:
    from splitaudit.clients.kafka import PartitionOffsets
    from splitaudit.guard.partitions import HeldPartition
    from splitaudit.patch.jar import JarFacts
    from splitaudit.splits.beam import ConfigScalar, KafkaIORead

# The fact that decided where the twin starts (`decided_by`).
START_READ_TIME = "start_read_time"
COMMITTED_OFFSET = "committed_offset"
AUTO_OFFSET_RESET = "auto_offset_reset"
NO_SPEC = "no_spec"  # the savepoint's source is not a KafkaIO read: nothing says where a fresh reader starts

# What the twin's start is (`start_is`); `twin_start` holds the offset when it is known now.
# COMMITTED, LOG_START and LOG_END_AT_RESTORE are the audit's hypotheses too (`audit.hypotheses`, which holds them).
OFFSET_FOR_TIME = "offset_for_start_read_time"
READER_FAILS = "reader_fails"  # the twin's consumer throws on start: the restored job fails
UNKNOWN = "unknown"  # needs --bootstrap, or a value the guard does not know

KAFKA_DEFAULT_RESET = "latest"  # Kafka's own default, when the map has no auto.offset.reset


def config_text(value: ConfigScalar | None) -> str | None:
    """A string setting as the Kafka client parses it (ConfigDef trims strings); None when absent or not text."""
    return value.strip() if isinstance(value, str) else None


def config_bool(value: ConfigScalar | None) -> bool | None:
    """A boolean setting as the Kafka client parses it: a Boolean, or the text true/false in any case."""
    if isinstance(value, bool):
        return value
    text = config_text(value)
    return {"true": True, "false": False}.get(text.lower()) if text is not None else None


def group_id(spec: KafkaIORead) -> str | None:
    """The read's `group.id`; None when unset or empty (a Kafka consumer without a group commits nothing)."""
    return config_text(spec.consumer_config.get("group.id")) or None


def auto_offset_reset(spec: KafkaIORead) -> str:
    """The read's `auto.offset.reset`, lower case (the consumer upper-cases it into OffsetResetStrategy); Kafka's
    default `latest` when the map has none."""
    text = config_text(spec.consumer_config.get("auto.offset.reset"))
    return KAFKA_DEFAULT_RESET if text is None else text.lower()


def enable_auto_commit(spec: KafkaIORead) -> bool:
    """The read's `enable.auto.commit`; Kafka's default (true) only applies without KafkaIO's defaults, which
    set it false, so an absent or unparsable value counts as false here."""
    return config_bool(spec.consumer_config.get("enable.auto.commit")) is True


def commits_offsets(spec: KafkaIORead, jar: JarFacts) -> bool:
    """Whether the running job commits the group's offsets: commitOffsetsInFinalize on a release whose FlinkSource
    finalizes checkpoints (2.56 on), or the consumer's auto commit; never without a group."""
    if group_id(spec) is None:
        return False
    return bool(spec.commit_offsets_in_finalize_enabled and jar.finalizes_checkpoints) or enable_auto_commit(spec)


def start_time_text(millis: int) -> str:
    """An epoch-millisecond time for people: ISO 8601 UTC with milliseconds."""
    return datetime.fromtimestamp(millis / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class TwinStart:
    """The predicted twin reader of one restored partition: where it starts, the fact that decided it, and the
    offsets the restored job therefore reads twice.

    `read_twice` is the part of [twin_start, ∞) already in the topic (with `--bootstrap`: twin_start to the end
    offset minus one); every record produced after the restore is read twice as well (`after_restore`), except
    where the twin never starts (`reader_fails`).
    """

    topic: str
    partition: int
    restored_from: int | None  # the savepoint's next offset S (None: only symbolic offsets)
    twin_start: int | None  # T, when known now
    start_is: str  # OFFSET_FOR_TIME, COMMITTED, LOG_START, LOG_END_AT_RESTORE, READER_FAILS, UNKNOWN
    decided_by: str  # START_READ_TIME, COMMITTED_OFFSET, AUTO_OFFSET_RESET, NO_SPEC
    fact: str  # the deciding fact in words, e.g. "group.id g has committed offset 5000"
    read_twice: tuple[tuple[int, int], ...] = ()

    @property
    def read_twice_count(self) -> int:
        return sum(last - first + 1 for first, last in self.read_twice)

    @property
    def after_restore(self) -> bool:
        """Every record produced after the restore is read twice (the twin runs alongside the restored reader)."""
        return self.start_is != READER_FAILS

    @property
    def start_text(self) -> str:
        """Where the twin starts, for people."""
        where = {
            OFFSET_FOR_TIME: "the first offset at or after startReadTime",
            COMMITTED: "the group's committed offset",
            LOG_START: "the log start",
            LOG_END_AT_RESTORE: "the log end at the restore",
            READER_FAILS: "nowhere: its consumer throws on start, and the restored job fails",
            UNKNOWN: "an offset the guard cannot tell",
        }[self.start_is]
        return where if self.twin_start is None else f"{self.twin_start} ({where})"

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "restored_from": self.restored_from,
            "twin_start": self.twin_start,
            "start_is": self.start_is,
            "decided_by": self.decided_by,
            "fact": self.fact,
            "read_twice": [list(r) for r in self.read_twice],
            "read_twice_count": self.read_twice_count,
            "after_restore": self.after_restore,
        }

    def sentence(self) -> str:
        """What the restored job will read twice, in one sentence."""
        if self.start_is == READER_FAILS:
            return f"a second reader is started and fails ({self.fact})"
        known = ""
        if self.read_twice:
            first, last = self.read_twice[0]
            known = f"offsets {offset_range(first, last)} in the topic now ({self.read_twice_count}) and "
        elif self.start_is == LOG_END_AT_RESTORE and self.restored_from is not None:
            known = f"nothing already in the topic (the backlog from {self.restored_from} is read once); "
        return (
            f"a second reader starts at {self.start_text} ({self.fact}): {known}every record produced after the "
            "restore is read twice"
        )


def predict_twin(
    spec: KafkaIORead | None,
    jar: JarFacts,
    held: HeldPartition,
    kafka: PartitionOffsets | None,
    for_time: int | None = None,
) -> TwinStart:
    """Where the twin of `held` starts when `jar` restores it, and what is read twice.

    `kafka` is the partition's offsets now (log start, end, and the group's committed offset) with
    `--bootstrap`, else None; `for_time` the first offset at or after the spec's startReadTime (None: no record
    has such a timestamp yet, or not asked).
    """
    base = (held.topic, held.partition, held.next_offset)
    if spec is None:
        return TwinStart(*base, None, UNKNOWN, NO_SPEC, "the savepoint's source holds no KafkaIO.Read spec")
    if spec.start_read_time is not None:
        fact = f"startReadTime {start_time_text(spec.start_read_time)}"
        if kafka is None:
            return TwinStart(*base, None, OFFSET_FOR_TIME, START_READ_TIME, fact)
        if for_time is None:
            # ConsumerSpEL.offsetForTime throws when no record has such a timestamp: the twin starts at the first
            # one produced before the restore (the log end now, at least), else it fails.
            fact += " (no record at or after it yet: the twin fails unless one is produced before the restore)"
            return TwinStart(*base, None, LOG_END_AT_RESTORE, START_READ_TIME, fact)
        return _known(base, for_time, OFFSET_FOR_TIME, START_READ_TIME, f"{fact}: offset {for_time}", kafka)
    group = group_id(spec)
    if group is not None:
        committed = None if kafka is None else kafka.committed
        if kafka is not None and committed is not None and kafka.log_start <= committed <= kafka.end:
            fact = f"group.id {group} has committed offset {committed}"
            return _known(base, committed, COMMITTED, COMMITTED_OFFSET, fact, kafka)
        if kafka is None and commits_offsets(spec, jar):
            fact = f"group.id {group}, whose offsets the job commits; --bootstrap reads them"
            return TwinStart(*base, None, COMMITTED, COMMITTED_OFFSET, fact)
    reset = auto_offset_reset(spec)
    fact = f"auto.offset.reset={reset}" + _without_committed(group, kafka)
    if reset == "earliest":
        if kafka is None:
            return TwinStart(*base, None, LOG_START, AUTO_OFFSET_RESET, fact)
        return _known(base, kafka.log_start, LOG_START, AUTO_OFFSET_RESET, fact, kafka)
    if reset == "latest":
        return TwinStart(*base, None, LOG_END_AT_RESTORE, AUTO_OFFSET_RESET, fact)
    if reset == "none":
        fact += ": the consumer throws NoOffsetForPartitionException"
        return TwinStart(*base, None, READER_FAILS, AUTO_OFFSET_RESET, fact)
    return TwinStart(*base, None, UNKNOWN, AUTO_OFFSET_RESET, fact + " (a value the guard does not know)")


def _without_committed(group: str | None, kafka: PartitionOffsets | None) -> str:
    """Why no committed offset decided, for the fact's words."""
    if group is None:
        return ", no group.id"
    if kafka is None:
        return f", unless group.id {group} holds offsets committed earlier (--bootstrap reads them)"
    if kafka.committed is None:
        return f", group.id {group} has no committed offset"
    return f", group.id {group}'s committed offset {kafka.committed} is outside the log"


def _known(
    base: tuple[str, int, int | None], start: int, start_is: str, decided_by: str, fact: str, kafka: PartitionOffsets
) -> TwinStart:
    """A twin start known now: the offsets from it to the end of the log are read twice."""
    ranges = ((start, kafka.end - 1),) if kafka.end > start else ()
    return TwinStart(*base, start, start_is, decided_by, fact, ranges)
