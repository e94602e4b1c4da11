"""What `splitaudit guard` and `splitaudit watch` return: frozen result objects the renderers show.

The partitions a savepoint holds (`HeldPartition`, `PendingPartition`) are in `partitions.py`, below both this
module and `twin.py`, so the two import each other in one direction only (results -> twin).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from splitaudit.audit.checks.findings import ERROR, Finding
from splitaudit.errors import EXIT_CLEAN, EXIT_FINDINGS, EXIT_JOB_LOST, printable
from splitaudit.guard.lifecycle import ENDED_ABNORMALLY
from splitaudit.guard.partitions import HeldPartition, PendingPartition

if TYPE_CHECKING:
    from splitaudit.guard.positions import PartitionPositions
    from splitaudit.guard.tally import PartitionTally
    from splitaudit.guard.twin import TwinStart
    from splitaudit.patch.jar import JarFacts
    from splitaudit.splits.beam import KafkaIORead

# What `splitaudit watch` does on an error: stop the job with a savepoint, cancel it, or report only.
STOP, CANCEL, REPORT = "stop", "cancel", "report"
ACTIONS = (STOP, CANCEL, REPORT)


@dataclass(frozen=True)
class SourceFacts:
    """One source operator of a savepoint, as the guard judges a restore of it."""

    operator: str  # uid, else id
    parallelism: int
    families: tuple[str, ...]  # split families of its reader splits and enumerator (splits/ `type`s)
    partitions: tuple[HeldPartition, ...]
    pending: tuple[PendingPartition, ...] = ()  # splits pending in the enumerator, per reader
    # The KafkaIO read's consumer settings (every split of one read carries the same spec), None for other sources.
    spec: KafkaIORead | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "operator": self.operator,
            "parallelism": self.parallelism,
            "families": list(self.families),
            "partitions": [p.to_json() for p in self.partitions],
            "pending": [p.to_json() for p in self.pending],
            "spec": None if self.spec is None else self.spec.to_json(),
        }


@dataclass(frozen=True)
class GuardReport:
    """The guard's verdict on restoring one savepoint with one job jar: safe when no finding is an error."""

    savepoint: str
    jar: JarFacts
    bootstrap: str | None
    parallelism: int | None  # None: restored at the savepoint's parallelism
    sources: tuple[SourceFacts, ...]
    findings: tuple[Finding, ...]
    notes: tuple[str, ...]
    twins: tuple[TwinStart, ...] = ()  # per partition an unfixed FlinkSource restore reads twice: its twin reader

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == ERROR)

    @property
    def safe(self) -> bool:
        return not self.errors

    @property
    def exit_code(self) -> int:
        return EXIT_CLEAN if self.safe else EXIT_FINDINGS

    @property
    def line(self) -> str:
        """One line a CI step can grep: the verdict, the error count and kinds, the inputs."""
        kinds = sorted({f.kind for f in self.errors})
        verdict = "safe" if self.safe else f"UNSAFE errors={len(self.errors)} kinds={','.join(kinds)}"
        return f"splitaudit-guard: {verdict} savepoint={self.savepoint} jar={self.jar.path}"

    def to_json(self) -> dict[str, Any]:
        return {
            "safe": self.safe,
            "line": self.line,
            "savepoint": self.savepoint,
            "jar": self.jar.to_json(),
            "bootstrap": self.bootstrap,
            "parallelism": self.parallelism,
            "sources": [s.to_json() for s in self.sources],
            "findings": [f.to_json() for f in self.findings],
            "twins": [t.to_json() for t in self.twins],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class WatchEvent:
    """One finding of `splitaudit watch`, with the seconds since the watch started when it was found."""

    seconds: float
    finding: Finding

    def to_json(self) -> dict[str, Any]:
        return {"seconds": self.seconds, **self.finding.to_json()}


@dataclass(frozen=True)
class WatchTimeline:
    """When the watch saw each stage of the job, in seconds since it started (None: not reached): what the time
    from a restore to its stop is made of."""

    listed: float | None = None  # Flink's REST API names the job, with its source vertex
    running: float | None = None  # every vertex RUNNING
    read: float | None = None  # the first poll whose source metrics show a record read
    finding: float | None = None  # the first error found
    ended: float | None = None  # the job ended after the stop or cancellation the error asked for

    def to_json(self) -> dict[str, Any]:
        return {
            "listed": self.listed,
            "running": self.running,
            "read": self.read,
            "finding": self.finding,
            "ended": self.ended,
        }


@dataclass(frozen=True)
class RestFault:
    """A failing answer of Flink's REST API the watch retried: the call, Flink's answer in one escaped line, how
    many times it came, and its whole text (a server-side Java trace: shown only with --debug)."""

    call: str  # e.g. GET /jobs/<id>
    answer: str  # e.g. HTTP 500: Internal server error. (java.util.concurrent.CancellationException)
    times: int
    detail: str | None = None

    def to_json(self, debug: bool = False) -> dict[str, Any]:
        document: dict[str, Any] = {"call": self.call, "answer": self.answer, "times": self.times}
        return document | {"detail": self.detail} if debug else document


@dataclass(frozen=True)
class WatchAttempt:
    """One attempt of the watched job as the watch saw it begin: its tally number (0 the restored run), when (in
    seconds since the watch started), why (a `guard.lifecycle` cause: restored, restart, rescale, failover) and at
    which parallelism its source runs."""

    number: int
    seconds: float
    cause: str
    parallelism: int

    def to_json(self) -> dict[str, Any]:
        return {"number": self.number, "seconds": self.seconds, "cause": self.cause, "parallelism": self.parallelism}


@dataclass(frozen=True)
class JobEnd:
    """How the watched job's life ended, as far as the watch saw it."""

    phase: str  # a `guard.lifecycle` phase: running (the watch ended first), finished, cancelled, failed, gone, …
    state: str | None  # Flink's last answered state (None: none)
    reason: str | None = None  # why it failed or vanished: Flink's root exception, or the REST API's last answer

    @property
    def lost(self) -> bool:
        """Failed, suspended or gone: not a final state anyone asked for."""
        return self.phase in ENDED_ABNORMALLY

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "state": self.state, "reason": self.reason}


@dataclass(frozen=True)
class WatchReport:
    """What `splitaudit watch` saw of one job and what it did: exit 1 when it found an error."""

    job: str
    restored_from: str | None  # the savepoint or checkpoint the job restored from, per Flink's REST API
    polls: int
    seconds: float
    events: tuple[WatchEvent, ...]
    action: str  # none, stop (with a savepoint), cancel, report
    savepoint: str | None  # where stop-with-savepoint wrote the job's state
    end: JobEnd
    timeline: WatchTimeline = WatchTimeline()
    tally: tuple[PartitionTally, ...] = ()  # per partition the records read twice, final figures (needs --bootstrap)
    rest_faults: tuple[RestFault, ...] = ()
    attempts: tuple[WatchAttempt, ...] = ()  # the restored run and each restart, rescale or failover after it
    # A KafkaSource's final tally, in positions per partition, in place of `tally` (needs --bootstrap)
    positions: tuple[PartitionPositions, ...] = ()

    @property
    def job_state(self) -> str:
        """Flink's last state of the job (GONE when it never answered one)."""
        return self.end.state or self.end.phase.upper()

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The last figure of each finding (kind, partition): events update the earlier ones of theirs."""
        latest = {(e.finding.kind, e.finding.topic, e.finding.partition): e.finding for e in self.events}
        return tuple(latest.values())

    @property
    def exit_code(self) -> int:
        if any(f.severity == ERROR for f in self.findings):
            return EXIT_FINDINGS
        return EXIT_JOB_LOST if self.end.lost else EXIT_CLEAN

    @property
    def line(self) -> str:
        """One line a CI step can grep: the verdict, what was done, how the job ended, the job."""
        state = f"state={self.end.phase}"
        if self.exit_code == EXIT_CLEAN:
            return f"splitaudit-watch: silent {state} job={self.job} polls={self.polls} seconds={self.seconds:g}"
        if self.exit_code == EXIT_JOB_LOST:
            reason = f" reason={printable(self.end.reason)}" if self.end.reason else ""
            return f"splitaudit-watch: LOST {state} job={self.job}{reason}"
        kinds = ",".join(sorted({f.kind for f in self.findings if f.severity == ERROR}))
        first = min(e.seconds for e in self.events)
        return f"splitaudit-watch: ERROR kinds={kinds} after={first:g}s action={self.action} {state} job={self.job}"

    def to_json(self, debug: bool = False) -> dict[str, Any]:
        return {
            "line": self.line,
            "job": self.job,
            "restored_from": self.restored_from,
            "polls": self.polls,
            "seconds": self.seconds,
            "events": [e.to_json() for e in self.events],
            "action": self.action,
            "savepoint": self.savepoint,
            "job_state": self.job_state,
            "end": self.end.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "tally": [t.to_json() for t in self.tally],
            "positions": [p.to_json() for p in self.positions],
            "rest_faults": [f.to_json(debug) for f in self.rest_faults],
            "attempts": [a.to_json() for a in self.attempts],
            "timeline": self.timeline.to_json(),
        }
