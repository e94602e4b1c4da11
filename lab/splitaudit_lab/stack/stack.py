"""The stack of one run directory: a Kafka broker and a Flink cluster started together, optionally with an
S3-compatible object store for Flink's checkpoints and savepoints and a Spark standalone cluster for the audit,
found again by `status` and `down` from the files they leave there (stack.json and pid files), even after a
crash."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splitaudit.errors import UsageError
from splitaudit.home import FLINK_VERSION
from splitaudit.progress import Progress, StepLog
from splitaudit_lab.stack import process
from splitaudit_lab.stack.flink_cluster import FlinkCluster
from splitaudit_lab.stack.kafka import KafkaBroker
from splitaudit_lab.stack.object_store import ObjectStore, new_credentials
from splitaudit_lab.stack.results import ServiceStatus, StackStatus
from splitaudit_lab.stack.spark_cluster import SparkCluster


@dataclass(frozen=True)
class Stack:
    """Kafka + Flink of one run directory (`<workdir>/kafka`, `<workdir>/flink`, `<workdir>/stack.json`).

    `flink_version` is the Flink release `up` starts (one `splitaudit setup` installed); a stack found again
    from its stack.json runs the release recorded there. `object_store` makes `up` start S3Proxy too
    (`<workdir>/s3`) and Flink keep its checkpoints and savepoints there; `spark_workers` > 0 makes it start a
    Spark standalone cluster with that many workers (`<workdir>/spark`). Both are recorded in stack.json, as are
    `state_backend`, the cluster's default keyed state backend (`hashmap` or `rocksdb`), `high_availability`
    (Flink's ZooKeeper high availability, with a ZooKeeper of the cluster's own: a JobManager started again
    recovers the running jobs) and `scheduler` (`adaptive`: jobs rescaled through REST).
    """

    workdir: Path
    flink_version: str = FLINK_VERSION
    object_store: bool = False
    spark_workers: int = 0
    state_backend: str = "hashmap"
    high_availability: bool = False
    scheduler: str = "default"

    @property
    def state_file(self) -> Path:
        return self.workdir / "stack.json"

    def _state(self) -> dict[str, Any]:
        try:
            state: dict[str, Any] = json.loads(self.state_file.read_text())
        except FileNotFoundError:
            raise UsageError(
                f"no stack in {self.workdir} (no stack.json); start one with `splitaudit stack up`"
            ) from None
        except ValueError as ex:
            raise UsageError(f"{self.state_file}: not a stack state file ({ex})") from ex
        return state

    def _components(self) -> tuple[KafkaBroker, FlinkCluster]:
        state = self._state()
        kafka = KafkaBroker(self.workdir / "kafka", state["kafka"]["port"], state["kafka"]["controller_port"])
        flink = FlinkCluster(
            self.workdir / "flink",
            state["flink"]["rest_port"],
            state["flink"]["rpc_port"],
            version=state["flink"].get("version", FLINK_VERSION),
            object_store=self.store,
            state_backend=state["flink"].get("state_backend", "hashmap"),
            zookeeper_port=state["flink"].get("zookeeper_port"),
            scheduler=state["flink"].get("scheduler", "default"),
        )
        return kafka, flink

    @property
    def kafka(self) -> KafkaBroker:
        return self._components()[0]

    @property
    def flink(self) -> FlinkCluster:
        return self._components()[1]

    @property
    def store(self) -> ObjectStore | None:
        """The object store of this stack, if it was started with one."""
        s3 = self._state().get("s3")
        if s3 is None:
            return None
        return ObjectStore(self.workdir / "s3", s3["port"], s3["access_key"], s3["secret_key"])

    @property
    def spark(self) -> SparkCluster | None:
        """The Spark standalone cluster of this stack, if it was started with one."""
        spark = self._state().get("spark")
        if spark is None:
            return None
        ports = (spark["master_port"], spark["webui_port"], tuple(spark["worker_ports"]))
        return SparkCluster(self.workdir / "spark", *ports)

    def pid_files(self) -> list[Path]:
        """Every pid file of this stack, in stopping order (Flink before the broker it reads from and the store
        it writes to); the Spark cluster's and the store's only when stack.json names them."""
        spark, store = (self.spark, self.store) if self.state_file.exists() else (None, None)
        return [
            self.workdir / "flink" / "pids" / "taskmanager.pid",
            self.workdir / "flink" / "pids" / "jobmanager.pid",
            self.workdir / "flink" / "pids" / "zookeeper.pid",
            *([spark.pid_file(role) for role in reversed(spark.roles())] if spark else []),
            self.workdir / "kafka" / "pids" / "kafka.pid",
            *([store.pid_file] if store else []),
        ]

    def up(self, progress: Progress) -> StackStatus:
        """Start Kafka and Flink on free 127.0.0.1 ports; refuse if this run directory's stack is running."""
        running = [p for p in self.pid_files() if (r := process.PidRecord.read(p)) and r.process()]
        if running:
            raise UsageError(f"a stack is already running in {self.workdir}; `splitaudit stack down` it first")
        self.workdir.mkdir(parents=True, exist_ok=True)
        state: dict[str, Any] = {
            "kafka": {"port": process.free_port(), "controller_port": process.free_port()},
            "flink": {
                "rest_port": process.free_port(),
                "rpc_port": process.free_port(),
                "version": self.flink_version,
                "state_backend": self.state_backend,
                "scheduler": self.scheduler,
            },
        }
        if self.high_availability:
            state["flink"]["zookeeper_port"] = process.free_port()
        if self.object_store:
            access_key, secret_key = new_credentials()
            state["s3"] = {"port": process.free_port(), "access_key": access_key, "secret_key": secret_key}
        if self.spark_workers > 0:
            state["spark"] = {
                "master_port": process.free_port(),
                "webui_port": process.free_port(),
                "worker_ports": [process.free_port() for _ in range(self.spark_workers)],
            }
        # Written before anything starts, so `down` finds whatever did start if we die half way; it may hold
        # the object store's secret, so only its owner reads it.
        self.state_file.touch(mode=0o600)
        self.state_file.write_text(json.dumps(state, indent=2))
        kafka, flink = self._components()
        store, spark = self.store, self.spark
        try:
            if store is not None:
                with progress.step(f"S3Proxy object store on {store.endpoint}, bucket {store.bucket}"):
                    store.start()
            with progress.step(f"Kafka broker (KRaft) on {kafka.bootstrap}"):
                kafka.start()
            with progress.step(f"Flink {flink.version} cluster, REST {flink.rest_url}"):
                flink.start()
            if spark is not None:
                workers = len(spark.worker_ports)
                with progress.step(f"Spark standalone cluster {spark.master_url} ({workers} workers)"):
                    spark.start()
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
        store, spark = self.store, self.spark
        checks: list[tuple[str, Path, str, Callable[[], bool]]] = [
            ("kafka", kafka.pid_file, kafka.bootstrap, kafka.healthy),
            ("flink-jobmanager", flink.pid_file("jobmanager"), flink.rest_url, flink.healthy),
            ("flink-taskmanager", flink.pid_file("taskmanager"), flink.rest_url, flink.healthy),
        ]
        if spark is not None:
            url = spark.master_url
            checks += [(f"spark-{role}", spark.pid_file(role), url, spark.healthy) for role in spark.roles()]
        if store is not None:
            checks.append(("s3proxy", store.pid_file, f"{store.endpoint} (bucket {store.bucket})", store.healthy))
        services = []
        for name, pid_file, address, healthy in checks:
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
