"""The stack of one run directory: a Kafka broker and a Flink cluster started together, found again by
`status` and `down` from the files they leave there (stack.json and pid files), even after a crash."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from splitaudit.errors import UsageError
from splitaudit.home import FLINK_VERSION
from splitaudit.progress import Progress, StepLog
from splitaudit.stack import process
from splitaudit.stack.flink_cluster import FlinkCluster
from splitaudit.stack.kafka import KafkaBroker
from splitaudit.stack.results import ServiceStatus, StackStatus


@dataclass(frozen=True)
class Stack:
    """Kafka + Flink of one run directory (`<workdir>/kafka`, `<workdir>/flink`, `<workdir>/stack.json`).

    `flink_version` is the Flink release `up` starts (one `splitaudit setup` installed); a stack found again
    from its stack.json runs the release recorded there.
    """

    workdir: Path
    flink_version: str = FLINK_VERSION

    @property
    def state_file(self) -> Path:
        return self.workdir / "stack.json"

    def _components(self) -> tuple[KafkaBroker, FlinkCluster]:
        try:
            state = json.loads(self.state_file.read_text())
        except FileNotFoundError:
            raise UsageError(
                f"no stack in {self.workdir} (no stack.json); start one with `splitaudit stack up`"
            ) from None
        except ValueError as ex:
            raise UsageError(f"{self.state_file}: not a stack state file ({ex})") from ex
        kafka = KafkaBroker(self.workdir / "kafka", state["kafka"]["port"], state["kafka"]["controller_port"])
        flink = FlinkCluster(
            self.workdir / "flink",
            state["flink"]["rest_port"],
            state["flink"]["rpc_port"],
            version=state["flink"].get("version", FLINK_VERSION),
        )
        return kafka, flink

    @property
    def kafka(self) -> KafkaBroker:
        return self._components()[0]

    @property
    def flink(self) -> FlinkCluster:
        return self._components()[1]

    def pid_files(self) -> list[Path]:
        """Every pid file of this stack, in stopping order (Flink before the broker it reads from)."""
        return [
            self.workdir / "flink" / "pids" / "taskmanager.pid",
            self.workdir / "flink" / "pids" / "jobmanager.pid",
            self.workdir / "kafka" / "pids" / "kafka.pid",
        ]

    def up(self, progress: Progress) -> StackStatus:
        """Start Kafka and Flink on free 127.0.0.1 ports; refuse if this run directory's stack is running."""
        running = [p for p in self.pid_files() if (r := process.PidRecord.read(p)) and r.process()]
        if running:
            raise UsageError(f"a stack is already running in {self.workdir}; `splitaudit stack down` it first")
        self.workdir.mkdir(parents=True, exist_ok=True)
        state = {
            "kafka": {"port": process.free_port(), "controller_port": process.free_port()},
            "flink": {
                "rest_port": process.free_port(),
                "rpc_port": process.free_port(),
                "version": self.flink_version,
            },
        }
        # Written before anything starts, so `down` finds whatever did start if we die half way.
        self.state_file.write_text(json.dumps(state, indent=2))
        kafka, flink = self._components()
        try:
            with progress.step(f"Kafka broker (KRaft) on {kafka.bootstrap}"):
                kafka.start()
            with progress.step(f"Flink {flink.version} cluster, REST {flink.rest_url}"):
                flink.start()
        except BaseException:
            self.down(Progress())
            raise
        return self.status()

    @contextmanager
    def running(self, progress: Progress, *, keep: bool = False, steps: StepLog | None = None) -> Iterator[Stack]:
        """The stack up for the length of a `with` block and down after it, also when the block fails; `keep`
        leaves it running for the user (`splitaudit stack down` stops it later). With `steps`, starting and
        stopping are steps of that scenario's report."""
        log = steps or StepLog(progress)
        with log.step("stack up") as out:
            self.up(progress)
            out.append(f"kafka {self.kafka.bootstrap}, flink {self.flink.rest_url}")
        try:
            yield self
        finally:
            if not keep:
                with log.step("stack down"):
                    self.down(progress)

    def status(self) -> StackStatus:
        """Each process of the stack: pid, alive, address, health."""
        kafka, flink = self._components()
        services = []
        for name, pid_file, address, healthy in (
            ("kafka", kafka.pid_file, kafka.bootstrap, kafka.healthy),
            ("flink-jobmanager", flink.pid_file("jobmanager"), flink.rest_url, flink.healthy),
            ("flink-taskmanager", flink.pid_file("taskmanager"), flink.rest_url, flink.healthy),
        ):
            record = process.PidRecord.read(pid_file)
            alive = record is not None and record.process() is not None
            detail = ("healthy" if healthy() else "not answering") if alive else "not running"
            services.append(ServiceStatus(name, record.pid if record else None, alive, address, detail))
        return StackStatus(str(self.workdir), tuple(services))

    def down(self, progress: Progress) -> StackStatus:
        """Stop the processes this stack started, by the pid files it wrote; leave the data in place."""
        stopped = []
        for pid_file in self.pid_files():
            with progress.step(f"stop {pid_file.stem}"):
                record = process.stop(pid_file)
            if record is not None:
                stopped.append(ServiceStatus(record.name, record.pid, False, "", "stopped"))
        return StackStatus(str(self.workdir), tuple(stopped))
