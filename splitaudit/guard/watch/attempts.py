"""The attempts of a watched job: each one's start, its counts poll by poll and since when they are steady, and
the tally of the records read twice over all of them.

Flink restarts a job (a failure, a failover, a rescale) into a new attempt that restores the newest completed
checkpoint: what the ended attempt read after it is read again by the next, and not a double read. So an attempt
ends here with its last counts (final once steady for the JobManager's quiet time with the end offsets taken
meanwhile), the next one starts from the checkpoint Flink says it restored (`CheckpointJudge` keeps the newest's
offsets, which Flink may have deleted by then), and the ended one is tallied up to that checkpoint. `loop.py`
polls and hands each poll's samples and the job's documents here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from splitaudit.clients.flink import CheckpointRef
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.guard.lifecycle import RESTART, RESTORED, new_attempt_cause
from splitaudit.guard.results import WatchAttempt
from splitaudit.guard.tally import (
    AttemptReads,
    Key,
    PartitionTally,
    SteadySpan,
    kept,
    spans_since,
    spans_with,
    steady_since,
    tally,
)
from splitaudit.guard.watch.checkpoints import CLOCK_MARGIN, CheckpointJudge, checkpoint_offsets
from splitaudit.guard.watch.judging import SubtaskSample, fresh_sample
from splitaudit.guard.watch.rest import SHORTEST_QUIET


@dataclass
class AttemptTracker:
    """The attempts of the watched job so far, the current one's start, last counts and since when they are steady;
    the restored offsets they start from and the topics' offsets they are tallied against."""

    checkpoints: CheckpointJudge  # what the job's checkpoints hold: what a restart restores
    clock: Callable[[], float]  # seconds since the watch began, for the notes
    kafka_offsets: Callable[[], dict[Key, PartitionOffsets]]  # the topics' offsets now (empty without --bootstrap)
    counts_ends: bool = False  # whether the topics' offsets can be read (--bootstrap): end offsets and the tally
    resume: dict[Key, int] = field(default_factory=dict)  # the offsets the job restored (the savepoint's)
    offsets: dict[Key, PartitionOffsets] = field(default_factory=dict)  # the topics' offsets as last read
    # The attempts ended so far (restarts), and the current one's start, last counts and since when they are steady.
    attempts: list[AttemptReads] = field(default_factory=list)
    attempt_start: dict[Key, int] | None = None  # a restart's start offsets (None: not known yet)
    restored_id: int | None = None  # the checkpoint id the current attempt restored from, per Flink
    restored_start: dict[Key, int] | None = None  # that checkpoint's offsets (None: the savepoint's, `resume`)
    # The current attempt's polls, span by span of the same counts, since shortly before the newest checkpoint; and
    # those of the attempt that ended last, until the checkpoint its restart resumed from is known (None: none).
    spans: tuple[SteadySpan, ...] = ()
    ended_spans: tuple[SteadySpan, ...] | None = None
    restart_floor: int = 0  # the lowest checkpoint id the current restart can have restored
    samples: tuple[SubtaskSample, ...] = ()  # the current attempt's samples at its last poll, as Flink served them
    closed: dict[int, SubtaskSample] = field(default_factory=dict)  # per subtask the last sample of the attempt before
    last: Mapping[Key, int] | None = None  # the current attempt's counts at its last poll
    last_at: float = 0.0  # monotonic time of that poll
    steady: float | None = None  # monotonic time since which the counts are `last`
    ends: dict[Key, int] = field(default_factory=dict)  # end offsets taken while the counts were steady
    ends_at: float | None = None  # monotonic time they were taken
    quiet: float = SHORTEST_QUIET  # seconds counts must be steady to be final
    begun: list[WatchAttempt] = field(default_factory=list)  # each attempt seen running, and why it began
    began: tuple[int, int] | None = None  # the running job's start time and source parallelism at the last poll
    awaiting: bool = False  # an attempt ended and the next one has not been seen running yet

    def follow(self, document: Mapping[str, Any], source: dict[str, Any]) -> dict[str, Any]:
        """The source vertex as the running job has it now (GET /jobs/:id: a rescale changes its parallelism, so
        the subtasks to poll), and each attempt noted once it runs, with why it began. A rescale or a failover
        that came between two polls ends the attempt before it here: its last counts go to the tally."""
        vertex = next((v for v in document.get("vertices", []) if v.get("id") == source["id"]), None)
        if vertex is None or document.get("state") != "RUNNING":
            return source
        now = (int(document.get("start-time") or 0), int(vertex["parallelism"]))
        cause = RESTORED if self.began is None else new_attempt_cause(self.began, now)
        if self.began is not None and cause is not None and not self.awaiting:
            self.restarted(
                f"a {cause} at {self.clock():g} s came between two polls: what its readers read after the last one is "
                "not counted"
            )
        if self.began is None or self.awaiting:
            self.begun.append(WatchAttempt(len(self.attempts), self.clock(), cause or RESTART, now[1]))
            self.awaiting = False
        self.began = now
        return dict(vertex)

    def counted(self, samples: tuple[SubtaskSample, ...]) -> tuple[SubtaskSample, ...]:
        """Note a poll's counts for the tally, without those a restart's new attempt has not reported yet
        (`fresh_sample`); the samples so cleaned. A drop is a restart of the job missed between polls; counts
        steady since the last end offsets were taken get new ones, which the tally judges them against."""
        raw = samples
        samples = tuple(fresh_sample(sample, self.closed.get(sample.subtask)) for sample in raw)
        read = summed(samples)
        if self.last is not None and any(read.get(key, 0) < count for key, count in self.last.items()):
            self.restarted(f"its counts dropped between two polls at {self.clock():g} s: a restart")
            samples = tuple(fresh_sample(sample, self.closed.get(sample.subtask)) for sample in raw)
            read = summed(samples)
        self.samples = raw
        self.spans = spans_since(
            spans_with(self.spans, read, time.time()), self.checkpoints.newest_trigger - CLOCK_MARGIN
        )
        at = time.monotonic()
        self.steady = steady_since(self.steady, self.last, read, at)
        self.last, self.last_at = read, at
        if self.counts_ends and self.steady < at and (self.ends_at or 0) <= self.steady:
            self.ends = {key: offsets.end for key, offsets in self.kafka_offsets().items()}
            self.ends_at = time.monotonic()
        return samples

    def restarted(self, why: str) -> None:
        """Close the current attempt (the job is restarting): its last counts go to the tally."""
        self.ended_spans = None
        if self.last is not None and any(self.last.values()):
            self.attempts.append(self.attempt_reads(why))
            self.closed = {sample.subtask: sample for sample in self.samples}
            self.ended_spans = self.spans
        self.spans = ()
        self.restart_floor = max(self.checkpoints.newest_completed, self.restored_id or 0)
        self.samples, self.last, self.steady, self.ends, self.ends_at = (), None, None, {}, None
        self.checkpoints.restarted()
        self.attempt_start, self.awaiting = None, True

    def attempt_reads(self, why: str) -> AttemptReads:
        """The current attempt's last counts, final when they had been steady for `quiet` seconds with the end
        offsets taken meanwhile."""
        steady, ends_at = self.steady, self.ends_at
        final = steady is not None and ends_at is not None and ends_at >= steady and self.last_at - steady >= self.quiet
        ends = self.ends if final else {key: offsets.end for key, offsets in self.kafka_offsets().items()}
        if self.attempts:  # a restart: from its checkpoint's offsets (unknown: none, and the tally says so)
            start = self.attempt_start or {}
        else:  # the restored run: from the restored offsets, a partition the savepoint lacks from its log start
            start = {key: self.resume.get(key, offsets.log_start) for key, offsets in self.offsets.items()}
            start |= self.resume
        read = dict(self.last or {})
        return AttemptReads(len(self.attempts), start, read, ends, final, None if final else why)

    def restart_point(self, restored: CheckpointRef | None, history: tuple[CheckpointRef, ...] = ()) -> None:
        """The offsets a restarted attempt starts from: the checkpoint Flink says it restored, or, when it restored
        what the attempt before it restored (the savepoint, or the same checkpoint: no newer one completed between),
        that attempt's start. Flink restores the newest completed
        checkpoint, so a restored id below the newest one completed before the restart is the statistics' cached
        answer from before it: wait. The attempt that ended is then tallied up to that checkpoint (`history`: the
        checkpoint statistics, which say when it was triggered and completed)."""
        if not self.attempts or self.attempt_start is not None or restored is None:
            return
        if restored.id < self.restart_floor:  # Flink's statistics still name what the attempt before restored
            return
        again = restored.id == self.restored_id  # what the attempt that ended restored: nothing it read is kept
        if again:
            self.attempt_start = dict(self.resume if self.restored_start is None else self.restored_start)
        elif restored.id in self.checkpoints.checkpointed:
            self.attempt_start = dict(self.checkpoints.checkpointed[restored.id])
        elif restored.external_path:
            self.attempt_start = checkpoint_offsets(restored)
        if self.attempt_start is None:  # gone (subsumed): asked again at the next poll
            return
        self.restored_id, self.restored_start = restored.id, self.attempt_start
        if self.ended_spans is not None:
            self.attempts[-1] = self.rolled_back(restored.id, again, history)

    def rolled_back(self, checkpoint: int, again: bool, history: tuple[CheckpointRef, ...]) -> AttemptReads:
        """The attempt that ended last, tallied up to the checkpoint its restart resumed from (`again`: what that
        attempt itself restored, the savepoint or the same checkpoint, so nothing it read is kept); as it was when
        the statistics do not say when that checkpoint was taken."""
        ended, spans, self.ended_spans = self.attempts[-1], self.ended_spans or (), None
        resumed = dict(self.attempt_start or {})
        if again:
            return AttemptReads(ended.number, ended.start, {}, resumed, True)
        taken = next(
            (c for c in history if c.id == checkpoint and c.trigger_timestamp and c.latest_ack_timestamp), None
        )
        if taken is None:
            return ended
        triggered = taken.trigger_timestamp / 1000 - CLOCK_MARGIN
        completed = taken.latest_ack_timestamp / 1000 + CLOCK_MARGIN
        return kept(ended, spans, resumed, checkpoint, triggered, completed, self.quiet)

    def final_tally(self, why: str) -> tuple[PartitionTally, ...]:
        """Per partition the records read twice over every attempt (needs the Kafka offsets: `--bootstrap`)."""
        if not self.counts_ends:
            return ()
        attempts = [*self.attempts]
        if self.last is not None:
            attempts.append(self.attempt_reads(why))
        return tally(attempts)


def summed(samples: tuple[SubtaskSample, ...]) -> dict[Key, int]:
    """Per partition the records all its readers read, over every subtask."""
    read: dict[Key, int] = {}
    for sample in samples:
        for key, count in sample.partitions.items():
            read[key] = read.get(key, 0) + count
    return read
