"""What a watched job's checkpoints prove of its polls, and what its restarts restore from.

A poll counts what each partition's readers had read by then; a completed checkpoint the job triggered after that
poll holds where they had got to. One reader from the restored offset cannot have read more than it advanced
(`judging.judge_checkpoint`), so each poll waits here until such a checkpoint completes, and, while the watch
probes, until one the watch triggered itself after it. The newest completed checkpoint (its id, trigger time and
offsets) is also what a restart of the job restores, which the attempt tracking in `loop.py` asks of it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from splitaudit.audit.checks.findings import Finding
from splitaudit.audit.checks.savepoint_tables import savepoint_tables
from splitaudit.clients.flink import CheckpointRef, FlinkRestClient, FlinkRestError
from splitaudit.errors import ExternalError, SplitauditError
from splitaudit.guard.tally import Key
from splitaudit.guard.watch.judging import judge_checkpoint

# A checkpoint proves a poll's counts only if triggered after the poll, on the JobManager's clock: this much later,
# for clocks that disagree a little (on one host they agree).
CLOCK_MARGIN = 0.2


def restored_offsets(location: str) -> dict[Key, int]:
    """The offsets a job restored from `location` resumes each partition from, read without Spark."""
    return savepoint_tables(location).resume_offsets


def checkpoint_offsets(checkpoint: CheckpointRef) -> dict[Key, int] | None:
    """The next offsets a completed checkpoint holds, or None when it is gone (subsumed and deleted meanwhile)."""
    try:
        return restored_offsets(str(checkpoint.external_path)) if checkpoint.external_path else None
    except SplitauditError:
        return None


@dataclass(frozen=True)
class Poll:
    """The per-partition read counts of one poll and when it was taken (epoch seconds, after the answer)."""

    at: float
    read: Mapping[Key, int]


@dataclass
class CheckpointJudge:
    """The polls no checkpoint has judged yet, the checkpoints that judged them, and the one the watch triggered
    itself while it probes."""

    polls: list[Poll] = field(default_factory=list)  # polls no checkpoint has judged yet
    judged: int = 0  # the last checkpoint id judged
    probing: tuple[str, Poll] | None = None  # a checkpoint triggered after a poll: its trigger id and that poll
    # The offsets of the newest checkpoint read (by id): a restart restores it, and Flink may have deleted it,
    # subsumed by a newer one, by the time the watch learns the restart's checkpoint.
    checkpointed: dict[int, dict[Key, int]] = field(default_factory=dict)
    newest_completed: int = 0  # the newest checkpoint id seen completed
    newest_trigger: float = 0.0  # when it was triggered (epoch seconds, the JobManager's clock)

    def judge(self, history: tuple[CheckpointRef, ...], resume: Mapping[Key, int]) -> list[Finding]:
        """The oldest polls the newest completed checkpoint of `history` proves (triggered after them), judged
        against it from the `resume` offsets; they are then judged, the later ones wait."""
        completed = [c for c in history if c.status == "COMPLETED" and c.external_path and not c.is_savepoint]
        newest = max(completed, key=lambda c: c.id, default=None)
        if newest is None:
            return []
        if newest.id > self.newest_completed:
            self.newest_completed, self.newest_trigger = newest.id, newest.trigger_timestamp / 1000
        proven = [p for p in self.polls if p.at < newest.trigger_timestamp / 1000 - CLOCK_MARGIN]
        if newest.id <= self.judged or not proven:
            return []
        advanced_to = checkpoint_offsets(newest)
        if advanced_to is None:
            return []
        self.judged = newest.id
        self.checkpointed = {newest.id: advanced_to}
        self.polls = self.polls[len(proven) :]
        return judge_checkpoint(proven[-1].read, resume, advanced_to, newest.id)

    def polled(self, read: Mapping[Key, int]) -> None:
        """A poll's counts, to be judged by a checkpoint triggered after it."""
        self.polls.append(Poll(time.time(), read))

    def restarted(self) -> None:
        """The job restarts: the ended attempt's polls are no longer judged."""
        self.polls = []

    def probed(self, flink: FlinkRestClient, job: str, resume: Mapping[Key, int]) -> list[Finding]:
        """The poll the last checkpoint the watch triggered followed, judged once that checkpoint completed."""
        if self.probing is None:
            return []
        trigger, poll = self.probing
        try:
            checkpoint = flink.triggered_checkpoint(job, trigger)
        except ExternalError:  # declined (e.g. a task not running yet): the next trigger will do
            self.probing = None
            return []
        if checkpoint is None:
            return []
        try:
            details = flink.checkpoint(job, checkpoint)
        except FlinkRestError:  # its statistics not served yet: ask again at the next poll
            return []
        self.probing = None
        advanced_to = checkpoint_offsets(details)
        return [] if advanced_to is None else judge_checkpoint(poll.read, resume, advanced_to, checkpoint)

    def trigger(self, flink: FlinkRestClient, job: str) -> None:
        """Trigger a checkpoint after the newest poll, when none the watch triggered runs."""
        if self.probing is not None or not self.polls:
            return
        # Triggered after the poll's answer arrived: the checkpoint's offsets are later than its counts.
        try:
            self.probing = (flink.trigger_checkpoint(job), self.polls[-1])
        except FlinkRestError:  # e.g. the job is finishing: the next poll sees it
            self.probing = None
