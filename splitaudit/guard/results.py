"""What `splitaudit guard` and `splitaudit watch` return: frozen result objects the renderers show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from splitaudit.audit.findings import ERROR, Finding
from splitaudit.errors import EXIT_CLEAN, EXIT_FINDINGS
from splitaudit.patch.jar import JarFacts


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
class SourceFacts:
    """One source operator of a savepoint, as the guard judges a restore of it."""

    operator: str  # uid, else id
    parallelism: int
    families: tuple[str, ...]  # split families of its reader splits and enumerator (splits/ `type`s)
    partitions: tuple[HeldPartition, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "operator": self.operator,
            "parallelism": self.parallelism,
            "families": list(self.families),
            "partitions": [p.to_json() for p in self.partitions],
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
            "notes": list(self.notes),
        }
