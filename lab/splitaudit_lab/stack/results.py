"""Result objects of the stack commands (`setup`, `stack …`, the smoke `demo`), rendered by an Output."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from splitaudit.progress import TimedStep


def mib(size: int) -> str:
    """A size in MiB, as setup's progress and report show it."""
    return f"{size / 2**20:.1f} MiB"


@dataclass(frozen=True)
class ComponentState:
    """One thing `setup` provides: installed now (with the bytes it downloaded), already present, or skipped (this
    environment cannot run it: `reason` says why)."""

    name: str
    version: str
    state: str  # "installed" | "present" | "skipped"
    path: str
    seconds: float
    downloaded_bytes: int = 0
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "state": self.state,
            "path": self.path,
            "seconds": self.seconds,
            "downloaded_bytes": self.downloaded_bytes,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class SetupReport:
    """What `splitaudit setup` did, component by component."""

    stack_home: str
    components: tuple[ComponentState, ...]

    @property
    def downloaded_bytes(self) -> int:
        return sum(component.downloaded_bytes for component in self.components)

    def to_json(self) -> dict[str, Any]:
        return {
            "stack_home": self.stack_home,
            "downloaded_bytes": self.downloaded_bytes,
            "components": [c.to_json() for c in self.components],
        }


@dataclass(frozen=True)
class ServiceStatus:
    """One process of a stack run directory, as read from its pid file and health check."""

    name: str
    pid: int | None
    alive: bool
    address: str
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "pid": self.pid, "alive": self.alive, "address": self.address, "detail": self.detail}


@dataclass(frozen=True)
class StackStatus:
    """The processes of one stack run directory."""

    workdir: str
    services: tuple[ServiceStatus, ...]

    @property
    def up(self) -> bool:
        return bool(self.services) and all(service.alive for service in self.services)

    def to_json(self) -> dict[str, Any]:
        return {"workdir": self.workdir, "up": self.up, "services": [s.to_json() for s in self.services]}


@dataclass(frozen=True)
class SmokeReport:
    """The smoke scenario: a topic, a Flink job, a savepoint and a restore from it."""

    run_dir: str
    topic: str
    records_per_partition: dict[int, int]
    job_id: str
    savepoint_path: str
    restored_job_id: str
    restored_from: str
    steps: tuple[TimedStep, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "run_dir": self.run_dir,
            "topic": self.topic,
            "records_per_partition": {str(k): v for k, v in self.records_per_partition.items()},
            "job_id": self.job_id,
            "savepoint_path": self.savepoint_path,
            "restored_job_id": self.restored_job_id,
            "restored_from": self.restored_from,
            "steps": [step.to_json() for step in self.steps],
        }
