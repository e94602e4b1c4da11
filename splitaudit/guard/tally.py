"""The watch's final tally: per partition, how many records the watched job read twice since its restore.

Beam's KafkaIO reader counts every record it reads, per partition (`KafkaIOReader_rawSize/<topic>-<partition>`),
and the restored reader reads a partition in order from the offset the job restored it from, S. Once a
partition's readers are idle at its end offset E, the restored reader has read each offset of [S, E) once, so
every record counted beyond E - S was read a second time: `read - (E - S)`, exactly. That needs the last counts
to be the final ones: the counts and the end offsets steady for a whole quiet window (twice the interval at which
Flink refreshes the metrics REST serves) before the job ended. Otherwise the figure is a lower bound (records
read after the last poll are not counted, or the readers were not at the end yet), and the tally says why.

A restart of the job (a TaskManager lost, the job restarted from its latest checkpoint) is a new attempt: its
tasks' metrics start again from zero, and it reads again from the checkpoint's offsets, what the previous attempt
read after that checkpoint included (a replay, expected of an at-least-once job). Each attempt is tallied on its
own against its own start, and the figures are added up: a restart neither resets the count nor doubles it.

An attempt that ended by a restart is tallied up to the checkpoint the next attempt resumed from (`kept`): the
restart rolls the job back to it, so what the attempt read from that checkpoint's offsets on is read again by the
next attempt and counted there, once. Its readers' counts at that checkpoint are known exactly when the polls
showed the same counts from before the checkpoint was triggered until after it completed (the readers read
nothing meanwhile, so each was at the log end, at or past the checkpoint's offsets); a TaskManager killed while
its readers read has counts after its last poll that no one can know, and these are not needed then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Key = tuple[str, int]


@dataclass(frozen=True)
class AttemptReads:
    """What one attempt of the watched job had read by its last poll: the restored run (0) or its n-th restart."""

    number: int
    start: Mapping[Key, int]  # per partition the offset it started from (the savepoint's, or the checkpoint's)
    read: Mapping[Key, int]  # per partition the records its readers had read at its last poll
    ends: Mapping[Key, int]  # per partition the end offset when those counts were last taken (empty: unknown)
    final: bool  # the counts were steady for a whole quiet window before the attempt ended: nothing was missed
    why: str | None = None  # why the counts may miss records, when not final


@dataclass(frozen=True)
class PartitionTally:
    """The records of one partition read twice since the restore, summed over the job's attempts: exact, or a
    lower bound with the reason."""

    topic: str
    partition: int
    read: int  # records its readers read, over every attempt (one that ended by a restart: up to its checkpoint)
    read_twice: int
    exact: bool
    why: str | None = None  # for a lower bound: why the figure may be short

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "read": self.read,
            "read_twice": self.read_twice,
            "exact": self.exact,
            "why": self.why,
        }


def tally(attempts: Sequence[AttemptReads]) -> tuple[PartitionTally, ...]:
    """Per partition any attempt read or started from, its records read twice: each attempt's count beyond the
    offsets from its start to its end offset, summed."""
    keys = sorted({key for attempt in attempts for key in (*attempt.read, *attempt.start)})
    tallies = []
    for key in keys:
        read = twice = 0
        reasons: list[str] = []
        for attempt in attempts:
            count = attempt.read.get(key, 0)
            start, end = attempt.start.get(key), attempt.ends.get(key)
            read += count
            label = "the restored job" if attempt.number == 0 else f"restart {attempt.number}"
            if start is None or end is None:
                reasons.append(f"{label}: the partition's offsets are unknown")
                continue
            twice += max(0, count - (end - start))
            if not attempt.final:
                reasons.append(f"{label}: {attempt.why or 'its last counts may not be its final ones'}")
            elif count < end - start:
                reasons.append(
                    f"{label}: its readers read {count} records, fewer than the {end - start} of offsets {start}..{end}"
                )
        topic, partition = key
        why = "; ".join(reasons) or None
        tallies.append(PartitionTally(topic, partition, read, twice, why is None, why))
    return tuple(tallies)


def steady_since(since: float | None, before: Mapping[Key, int] | None, read: Mapping[Key, int], at: float) -> float:
    """Since when the counts have been what they are at a poll taken at `at`: `since` when they are those of
    the poll before (`before`), else `at`."""
    return since if since is not None and before is not None and dict(before) == dict(read) else at


@dataclass(frozen=True)
class SteadySpan:
    """Consecutive polls of one attempt that showed the same counts: the first's and the last's time (epoch
    seconds, to compare with the JobManager's checkpoint timestamps) and those counts."""

    first: float
    last: float
    read: Mapping[Key, int]


def spans_with(spans: tuple[SteadySpan, ...], read: Mapping[Key, int], at: float) -> tuple[SteadySpan, ...]:
    """The spans after a poll taken at `at` showed `read`: the last one lasts to it when it showed the same."""
    if spans and dict(spans[-1].read) == dict(read):
        return (*spans[:-1], SteadySpan(spans[-1].first, at, spans[-1].read))
    return (*spans, SteadySpan(at, at, dict(read)))


def spans_since(spans: tuple[SteadySpan, ...], since: float) -> tuple[SteadySpan, ...]:
    """The spans a checkpoint triggered at or after `since` may need: those lasting to it or later, and the last
    one before it (the counts just before the trigger)."""
    before = [i for i, span in enumerate(spans) if span.last < since]
    return spans[before[-1] :] if before else spans


def kept(
    attempt: AttemptReads,
    spans: tuple[SteadySpan, ...],
    resumed: Mapping[Key, int],
    checkpoint: int,
    triggered: float,
    completed: float,
    fresh: float,
) -> AttemptReads:
    """An attempt that ended by a restart, tallied up to the checkpoint the next attempt resumed from (`resumed`:
    its next offsets; `triggered`, `completed`: epoch seconds on the JobManager's clock, the trigger less the
    clocks' margin). Its counts then are exact when a span of its polls began before the trigger and lasted
    `fresh` seconds (the age of the metrics REST serves) past the completion, or when the attempt was idle at the
    log end until it ended and the checkpoint holds that end; otherwise the counts of its last poll before the
    trigger stand for them, not exact."""
    if attempt.final and {key: attempt.ends.get(key) for key in resumed} == dict(resumed):
        return AttemptReads(attempt.number, attempt.start, attempt.read, resumed, True)
    steady = [span for span in spans if span.first < triggered and span.last >= completed + fresh]
    if steady:
        return AttemptReads(attempt.number, attempt.start, steady[0].read, resumed, True)
    before = [span for span in spans if span.first < triggered]
    why = (
        f"its readers were reading when checkpoint {checkpoint}, which the restart resumed from, was taken: "
        "counted at its last poll before it"
    )
    return AttemptReads(attempt.number, attempt.start, before[-1].read if before else {}, resumed, False, why)
