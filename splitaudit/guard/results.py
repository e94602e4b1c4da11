"""What `splitaudit guard` and `splitaudit watch` return: frozen result objects the renderers show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from splitaudit.audit.findings import ERROR, Finding
from splitaudit.errors import EXIT_CLEAN, EXIT_FINDINGS

if TYPE_CHECKING:
    from splitaudit.guard.twin import TwinStart
    from splitaudit.patch.jar import JarFacts
    from splitaudit.splits.beam import KafkaIORead

# What `splitaudit watch` does on an error: stop the job with a savepoint, cancel it, or report only.
STOP, CANCEL, REPORT = "stop", "cancel", "report"
ACTIONS = (STOP, CANCEL, REPORT)


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
class WatchReport:
    """What `splitaudit watch` saw of one job and what it did: exit 1 when it found an error."""

    job: str
    restored_from: str | None  # the savepoint or checkpoint the job restored from, per Flink's REST API
    polls: int
    seconds: float
    events: tuple[WatchEvent, ...]
    action: str  # none, stop (with a savepoint), cancel, report
    savepoint: str | None  # where stop-with-savepoint wrote the job's state
    job_state: str  # the job's state when the watch ended
    timeline: WatchTimeline = WatchTimeline()

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if any(e.finding.severity == ERROR for e in self.events) else EXIT_CLEAN

    @property
    def line(self) -> str:
        """One line a CI step can grep: the verdict, what was done, the job."""
        if self.exit_code == EXIT_CLEAN:
            return f"splitaudit-watch: silent job={self.job} polls={self.polls} seconds={self.seconds:g}"
        kinds = ",".join(sorted({e.finding.kind for e in self.events if e.finding.severity == ERROR}))
        first = min(e.seconds for e in self.events)
        return f"splitaudit-watch: ERROR kinds={kinds} after={first:g}s action={self.action} job={self.job}"

    def to_json(self) -> dict[str, Any]:
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
            "timeline": self.timeline.to_json(),
        }
