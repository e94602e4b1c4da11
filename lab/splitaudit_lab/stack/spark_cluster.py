"""A real Spark standalone cluster on 127.0.0.1: one master and its workers, each a JVM of its own.

It runs the classes of the pinned pyspark distribution (`bin/spark-class`, which execs java, so the pid
recorded is the JVM's), with a private conf dir in the run directory: logs, pid files, the workers' work dirs
(executor logs, fetched jars) and every scratch and temporary directory stay inside it. The audit runs on it
with `--master spark://127.0.0.1:PORT`: executors are started by the workers, and their Python workers run the
driver's interpreter (`PYSPARK_PYTHON`), so splitaudit's `flink_savepoint` data source reads on them.
"""

from __future__ import annotations

import functools
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splitaudit.errors import ExternalError
from splitaudit.home import pyspark_home
from splitaudit_lab.stack import process


@dataclass(frozen=True)
class SparkCluster:
    """A standalone cluster of one run directory (`<workdir>`): its ports, dirs and processes.

    `worker_ports` are the workers' web UI ports, one per worker; each worker offers `worker_cores` cores and
    `worker_memory` to executors (Spark's default executor asks for 1g).
    """

    workdir: Path
    master_port: int
    webui_port: int
    worker_ports: tuple[int, ...]
    worker_cores: int = 1
    worker_memory: str = "1g"

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def webui_url(self) -> str:
        return f"http://127.0.0.1:{self.webui_port}"

    @property
    def conf_dir(self) -> Path:
        return self.workdir / "conf"

    @property
    def log_dir(self) -> Path:
        return self.workdir / "log"

    def roles(self) -> list[str]:
        """The processes, in starting order: the master, then `worker-1` … `worker-N`."""
        return ["master", *(f"worker-{i}" for i in range(1, len(self.worker_ports) + 1))]

    def pid_file(self, role: str) -> Path:
        return self.workdir / "pids" / f"{role}.pid"

    def log_file(self, role: str) -> Path:
        return self.log_dir / f"{role}.out"

    def start(self, timeout: float = 120.0) -> None:
        """Start the master, then the workers; wait until the master lists every worker ALIVE."""
        spark_class = pyspark_home() / "bin" / "spark-class"
        if not spark_class.exists():
            raise ExternalError(f"pyspark has no {spark_class}; reinstall the Python environment")
        self._write_conf()
        master = process.spawn(
            "spark-master",
            [
                str(spark_class),
                "org.apache.spark.deploy.master.Master",
                *("--host", "127.0.0.1", "--port", str(self.master_port), "--webui-port", str(self.webui_port)),
                *("--properties-file", str(self.conf_dir / "spark-defaults.conf")),
            ],
            pid_file=self.pid_file("master"),
            log_file=self.log_file("master"),
            env=self._environment(),
            cwd=self.workdir,
        )
        process.wait_until(
            f"the Spark master on {self.master_url}",
            lambda: self.state() is not None,
            timeout=timeout,
            alive=master,
            log=self.log_file("master"),
        )
        for started, (role, port) in enumerate(zip(self.roles()[1:], self.worker_ports, strict=True), start=1):
            work_dir = self.workdir / role
            work_dir.mkdir(parents=True, exist_ok=True)
            worker = process.spawn(
                f"spark-{role}",
                [
                    str(spark_class),
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    *("--host", "127.0.0.1", "--webui-port", str(port), "--work-dir", str(work_dir)),
                    *("--cores", str(self.worker_cores), "--memory", self.worker_memory),
                    *("--properties-file", str(self.conf_dir / "spark-defaults.conf")),
                ],
                pid_file=self.pid_file(role),
                log_file=self.log_file(role),
                env=self._environment(),
                cwd=self.workdir,
            )
            process.wait_until(
                f"Spark {role} registered with {self.master_url}",
                functools.partial(self._has_workers, started),
                timeout=timeout,
                alive=worker,
                log=self.log_file(role),
            )

    def stop(self) -> None:
        """Stop the workers (and with them their executors), then the master, by their pid files."""
        for role in reversed(self.roles()):
            process.stop(self.pid_file(role))

    def state(self) -> dict[str, Any] | None:
        """The master's own account of the cluster (its web UI's `/json/`), or None if it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=5) as response:
                document: dict[str, Any] = json.loads(response.read())
        except (OSError, ValueError):
            return None
        return document

    def alive_workers(self) -> int:
        state = self.state()
        return int(state.get("aliveworkers", 0)) if state is not None else 0

    def _has_workers(self, count: int) -> bool:
        return self.alive_workers() >= count

    def healthy(self) -> bool:
        """True when the master is ALIVE and lists every worker ALIVE."""
        state = self.state()
        return state is not None and state.get("status") == "ALIVE" and self.alive_workers() == len(self.worker_ports)

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        tmp = self.workdir / "tmp"
        env.update(
            SPARK_HOME=str(pyspark_home()),
            SPARK_CONF_DIR=str(self.conf_dir),
            SPARK_LOG_DIR=str(self.log_dir),
            SPARK_PID_DIR=str(self.workdir / "pids"),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOCAL_DIRS=str(tmp),
            SPARK_DAEMON_JAVA_OPTS=f"-Djava.io.tmpdir={tmp}",
            JAVA_HOME=str(Path(process.java_executable()).resolve().parents[1]),
        )
        return env

    def _write_conf(self) -> None:
        for folder in (self.conf_dir, self.log_dir, self.workdir / "tmp"):
            folder.mkdir(parents=True, exist_ok=True)
        settings = {
            # The master's REST submission server listens on a fixed port (6066) otherwise; jobs are submitted
            # through the master's RPC port, so it is not needed.
            "spark.master.rest.enabled": "false",
        }
        lines = [f"{key} {value}" for key, value in settings.items()]
        (self.conf_dir / "spark-defaults.conf").write_text("\n".join(lines) + "\n")
