"""A real Flink standalone session cluster (one JobManager, one TaskManager) on 127.0.0.1.

It runs the distribution `splitaudit setup` installed, with a private conf dir written into the run
directory: checkpoints, savepoints, logs, pid files and every temporary directory (`io.tmp.dirs`,
`java.io.tmpdir`) stay inside it, so a run leaves nothing in /tmp. Given an object store, checkpoints and
savepoints go to its bucket instead (`s3://…`), through Flink's S3 filesystem plugin (flink-s3-fs-hadoop).

Given a ZooKeeper port the cluster is highly available: it first starts the ZooKeeper server Flink's distribution
ships (as `bin/zookeeper.sh` does: `FlinkZooKeeperQuorumPeer` and the shaded ZooKeeper inside flink-dist, one
standalone peer) and keeps its job graphs, checkpoint pointers and leader in it, so a JobManager started again
after a crash recovers the running jobs, same job ids, from their latest checkpoints.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from splitaudit.clients.flink import FlinkRestClient
from splitaudit.errors import ExternalError
from splitaudit.home import FLINK_VERSION, flink_home, flink_plugins
from splitaudit_lab.stack import process
from splitaudit_lab.stack.object_store import ObjectStore


@dataclass(frozen=True)
class FlinkCluster:
    """A standalone session cluster of one run directory: its ports, dirs and processes; with `object_store`,
    its checkpoints and savepoints are in that store's bucket."""

    workdir: Path
    rest_port: int
    rpc_port: int
    slots: int = 4
    version: str = FLINK_VERSION
    object_store: ObjectStore | None = None
    state_backend: str = "hashmap"  # the jobs' default keyed state backend (`state.backend.type`)
    zookeeper_port: int | None = None  # with a port: highly available through a ZooKeeper of its own on it
    scheduler: str = "default"  # `jobmanager.scheduler`: default, or adaptive (jobs rescaled through REST)

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def conf_dir(self) -> Path:
        return self.workdir / "conf"

    @property
    def savepoints_dir(self) -> Path:
        return self.workdir / "savepoints"

    @property
    def checkpoints_dir(self) -> Path:
        return self.workdir / "checkpoints"

    @property
    def savepoints_uri(self) -> str:
        """Where savepoints go unless a trigger names a directory: `file:` in the run dir, or `s3://`."""
        if self.object_store is not None:
            return self.object_store.uri("flink", "savepoints")
        return self.savepoints_dir.as_uri()

    @property
    def checkpoints_uri(self) -> str:
        if self.object_store is not None:
            return self.object_store.uri("flink", "checkpoints")
        return self.checkpoints_dir.as_uri()

    @property
    def high_availability_uri(self) -> str:
        """Where the JobManager keeps what ZooKeeper points to (job graphs, jars, completed checkpoints' metadata)."""
        if self.object_store is not None:
            return self.object_store.uri("flink", "ha")
        return (self.workdir / "ha").as_uri()

    @property
    def tmp_dir(self) -> Path:
        return self.workdir / "tmp"

    @property
    def log_dir(self) -> Path:
        return self.workdir / "log"

    def pid_file(self, role: str) -> Path:
        return self.workdir / "pids" / f"{role}.pid"

    def log_file(self, role: str) -> Path:
        return self.log_dir / f"{role}.out"

    def client(self) -> FlinkRestClient:
        return FlinkRestClient(self.rest_url)

    def start(self, timeout: float = 120.0) -> tuple[process.PidRecord, process.PidRecord]:
        """Start the JobManager, then the TaskManager; wait until REST shows all slots registered."""
        home = flink_home(self.version)
        if not (home / "bin" / "jobmanager.sh").exists():
            raise ExternalError(f"Flink {self.version} not found in {home}; run `splitaudit setup`")
        self._write_conf(home)
        if self.zookeeper_port is not None:
            self._start_zookeeper(timeout)
        jobmanager = self._spawn("jobmanager", "jobmanager.sh", "start-foreground")
        taskmanager = self._spawn("taskmanager", "taskmanager.sh", "start-foreground")
        self._wait_for_rest(jobmanager, timeout)
        process.wait_until(
            f"a Flink TaskManager with {self.slots} slots",
            self.healthy,
            timeout=timeout,
            alive=taskmanager,
            log=self.log_file("taskmanager"),
        )
        return jobmanager, taskmanager

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            FLINK_CONF_DIR=str(self.conf_dir),
            FLINK_LOG_DIR=str(self.log_dir),
            FLINK_PID_DIR=str(self.workdir / "pids"),
            JAVA_HOME=str(Path(process.java_executable()).resolve().parents[1]),
        )
        if self.object_store is not None:
            # The S3 plugin from beside the distribution, which stays as installed for every other cluster.
            plugin = flink_plugins(self.version) / "s3-fs-hadoop"
            if not any(plugin.glob("*.jar")):
                raise ExternalError(f"Flink's S3 filesystem plugin is not in {plugin}; run `splitaudit setup`")
            env["FLINK_PLUGINS_DIR"] = str(plugin.parent)
        return env

    def _spawn(self, role: str, script: str, *args: str, **env: str) -> process.PidRecord:
        """Start the jobmanager, taskmanager or zookeeper with a script of the distribution's bin/ that execs java in
        the foreground: the pid recorded is the JVM's own, which stopping it stops."""
        return process.spawn(
            f"flink-{role}",
            [str(flink_home(self.version) / "bin" / script), *args],
            pid_file=self.pid_file(role),
            log_file=self.log_file(role),
            env=self._environment() | env,
            cwd=self.workdir,
        )

    def _start_zookeeper(self, timeout: float) -> None:
        """Start the ZooKeeper server (peer 1 of the conf dir's zoo.cfg) and wait until it answers. As
        bin/zookeeper.sh does, but through flink-console.sh directly: zookeeper.sh runs it without exec, so its pid
        is a shell's, and stopping that shell would leave ZooKeeper's JVM running."""
        zoo = str(self.conf_dir / "zoo.cfg")
        zookeeper = self._spawn(
            "zookeeper",
            "flink-console.sh",
            "zookeeper",
            *("--zkConfigFile", zoo, "--peerId", "1"),
            JVM_ARGS="-Dzookeeper.jmx.log4j.disable=true",  # zookeeper.sh's: ZooKeeper's JMX log4j 1 hook off
        )
        process.wait_until(
            f"ZooKeeper on 127.0.0.1:{self.zookeeper_port}",
            self._zookeeper_ok,
            timeout=timeout,
            alive=zookeeper,
            log=self.log_file("zookeeper"),
        )

    def _zookeeper_ok(self) -> bool:
        """Whether ZooKeeper answers its `ruok` command with `imok`."""
        try:
            with socket.create_connection(("127.0.0.1", self.zookeeper_port or 0), timeout=2.0) as connection:
                connection.sendall(b"ruok")
                return connection.recv(4) == b"imok"
        except OSError:
            return False

    def kill(self, role: str) -> int:
        """SIGKILL the JobManager or TaskManager by its pid file, a crash rather than a shutdown; the pid it had."""
        pid_file = self.pid_file(role)
        record = process.PidRecord.read(pid_file)
        running = record.process() if record is not None else None
        if record is None or running is None:
            raise ExternalError(f"no running {role} to kill ({pid_file})")
        running.kill()
        running.wait(30)
        process.reap(record.pid)
        pid_file.unlink()
        return record.pid

    def stop(self) -> None:
        """Stop the TaskManager, then the JobManager, then ZooKeeper, by their pid files (any may be gone)."""
        for role in ROLES:
            process.stop(self.pid_file(role))

    def latest_retained_checkpoint(self, job_id: str) -> str:
        """The newest complete checkpoint the cluster retained for a job (one with its `_metadata`), as the
        pointer Flink itself gives it (`file:/…/chk-N`), for resubmitting the job from it."""
        newest = newest_completed_checkpoint(self.checkpoints_dir / job_id)
        if newest is None:
            raise ExternalError(f"no retained checkpoint of job {job_id} in {self.checkpoints_dir / job_id}")
        return f"file:{newest}"

    def restart_taskmanager(self) -> process.PidRecord:
        """Stop the TaskManager (SIGTERM: it leaves the cluster at once, its slots with it) and start a new one.

        For a fresh JVM metaspace between jobs: the classes each Beam job loads (its user-code class loader, with
        Beam's, Parquet's and Hadoop's) stay pinned after the job ends by threads they started, so a TaskManager
        that ran several large Beam jobs fails the next with `OutOfMemoryError: Metaspace`.
        """
        process.stop(self.pid_file("taskmanager"))
        return self.start_taskmanager()

    def start_jobmanager(self, timeout: float = 120.0) -> process.PidRecord:
        """Start a JobManager again (after `kill("jobmanager")`); wait until its REST API answers, which in a highly
        available cluster it does once it leads (before, HTTP 503), recovering the jobs ZooKeeper holds."""
        jobmanager = self._spawn("jobmanager", "jobmanager.sh", "start-foreground")
        self._wait_for_rest(jobmanager, timeout)
        return jobmanager

    def _wait_for_rest(self, jobmanager: process.PidRecord, timeout: float) -> None:
        """Wait until the JobManager just started answers on its REST API (failing early if it died)."""
        process.wait_until(
            f"the Flink JobManager REST API on {self.rest_url}",
            self._rest_up,
            timeout=timeout,
            alive=jobmanager,
            log=self.log_file("jobmanager"),
        )

    def start_taskmanager(self, timeout: float = 120.0) -> process.PidRecord:
        """Start a TaskManager again (after `kill("taskmanager")`); wait until the cluster lists it.

        A killed TaskManager stays listed until its heartbeats time out, so "a TaskManager is listed" proves
        nothing; the new one is the id that was not listed before it started.
        """
        client = self.client()
        known = client.taskmanager_ids()
        taskmanager = self._spawn("taskmanager", "taskmanager.sh", "start-foreground")

        def registered() -> bool:
            return bool(client.taskmanager_ids() - known)

        process.wait_until(
            f"a new Flink TaskManager with {self.slots} slots",
            registered,
            timeout=timeout,
            alive=taskmanager,
            log=self.log_file("taskmanager"),
        )
        return taskmanager

    def _rest_up(self) -> bool:
        try:
            self.client().overview()
        except ExternalError:
            return False
        return True

    def healthy(self) -> bool:
        """True when REST answers and the TaskManager's slots are registered."""
        try:
            overview = self.client().overview()
        except ExternalError:
            return False
        return int(overview.get("taskmanagers", 0)) >= 1 and int(overview.get("slots-total", 0)) >= self.slots

    def _write_conf(self, home: Path) -> None:
        for folder in (self.conf_dir, self.savepoints_dir, self.checkpoints_dir, self.tmp_dir, self.log_dir):
            folder.mkdir(parents=True, exist_ok=True)
        for name in (
            "log4j.properties",
            "log4j-console.properties",
            "log4j-cli.properties",
            "logback-console.xml",
        ):
            shutil.copyfile(home / "conf" / name, self.conf_dir / name)
        legacy = _legacy_config(self.version)
        java_opts = f"{JAVA_17_OPTIONS} -Djava.io.tmpdir={self.tmp_dir}"
        settings = {
            "env.java.opts" if legacy else "env.java.opts.all": java_opts,
            "jobmanager.rpc.address": "127.0.0.1",
            "jobmanager.rpc.port": str(self.rpc_port),
            "jobmanager.bind-host": "127.0.0.1",
            "jobmanager.memory.process.size": "1024m",
            "taskmanager.host": "127.0.0.1",
            "taskmanager.bind-host": "127.0.0.1",
            "taskmanager.numberOfTaskSlots": str(self.slots),
            # 256 MiB more metaspace than Flink's default, within 256 MiB more process memory: the users' job's
            # jar (Beam, Parquet, Hadoop) loads about twice the classes of the reference pipeline's.
            "taskmanager.memory.process.size": "1984m",
            "taskmanager.memory.jvm-metaspace.size": "512m",
            "parallelism.default": "1",
            "rest.address": "127.0.0.1",
            "rest.bind-address": "127.0.0.1",
            "rest.port": str(self.rest_port),
            "blob.server.port": "0",
            "taskmanager.rpc.port": "0",
            "taskmanager.data.port": "0",
            "io.tmp.dirs": str(self.tmp_dir),
            "web.tmpdir": str(self.tmp_dir / "web"),
            "web.upload.dir": str(self.tmp_dir / "upload"),
            "state.backend" if legacy else "state.backend.type": self.state_backend,
            "state.checkpoints.dir": self.checkpoints_uri,
            "state.savepoints.dir": self.savepoints_uri,
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
            "restart-strategy" if legacy else "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "3",
            "restart-strategy.fixed-delay.delay": "1 s",
            # The JobManager serves REST metrics from a copy it refreshes from the TaskManagers at most this often
            # (ms; Flink's default 10 s), and only while someone asks for them, and a job's details and checkpoint
            # statistics from a cache at most this old (3 s): `watch` sees a restored job's reads a poll after
            # they happen, and the checkpoints after them within a fifth of a second.
            "metrics.fetcher.update-interval": "100",
            "web.refresh-interval": "200",
            # How long the JobManager waits for a REST call's answer inside the cluster (ms; Flink's default 10 min).
            # Its metric fetcher starts a fetch only when the one before has ended, and a fetch that asks a killed
            # TaskManager waits this long: with the default, a restarted job's metrics were not served for over five
            # minutes after a TaskManager was killed (`watch` then sees none of the restart's reads).
            "web.timeout": "60000",
        }
        if self.state_backend == "rocksdb":
            # incremental checkpoints, as production jobs with large state take them: each retained checkpoint
            # names the SST files of earlier ones in the job's shared/ folder
            settings["state.backend.incremental"] = "true"
        if self.zookeeper_port is not None:
            settings.update(
                {
                    "high-availability" if legacy else "high-availability.type": "zookeeper",
                    "high-availability.storageDir": self.high_availability_uri,
                    "high-availability.zookeeper.quorum": f"127.0.0.1:{self.zookeeper_port}",
                    # The RPC port a highly available JobManager binds (it ignores jobmanager.rpc.port).
                    "high-availability.jobmanager.port": str(self.rpc_port),
                    # A killed JobManager leads (and holds its jobs) until its ZooKeeper session expires: 6 s
                    # (milliseconds, read by 1.16 as a number and 1.19 as a duration) rather than Flink's 60.
                    "high-availability.zookeeper.client.session-timeout": "6000",
                }
            )
            zoo = {
                "tickTime": "2000",
                "dataDir": str(self.workdir / "zookeeper"),
                "clientPort": str(self.zookeeper_port),
                "clientPortAddress": "127.0.0.1",
                "admin.enableServer": "false",  # no Jetty admin server on port 8080
                "4lw.commands.whitelist": "ruok",
            }
            (self.conf_dir / "zoo.cfg").write_text("".join(f"{key}={value}\n" for key, value in zoo.items()))
        if self.scheduler != "default":
            settings.update(
                {
                    "jobmanager.scheduler": self.scheduler,
                    # Rescale at once when asked (Flink waits 30 s after the job's start or last rescale).
                    "jobmanager.adaptive-scheduler.scaling-interval.min": "1 s",
                }
            )
        if self.object_store is not None:
            # flink-s3-fs-hadoop passes `s3.*` keys on to Hadoop's S3A as `fs.s3a.*`.
            settings.update(
                {
                    "s3.endpoint": self.object_store.endpoint,
                    "s3.path.style.access": "true",
                    "s3.access-key": self.object_store.access_key,
                    "s3.secret-key": self.object_store.secret_key,
                    # Those keys only: S3A's default chain would also ask the EC2 metadata address.
                    "s3.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
                    "s3.buffer.dir": str(self.tmp_dir / "s3a"),
                    # S3A deletes the "directory" marker objects above every object it writes; the filesystem
                    # blobstore refuses to delete a non-empty directory, retrying for seconds each time, which
                    # made every checkpoint take 70 s. Markers are kept, as on any store that lists by prefix.
                    "s3.directory.marker.retention": "keep",
                }
            )
        if _major(self.version) >= 2:
            settings = {RENAMED_IN_2.get(key, key): value for key, value in settings.items()}
        # Flink 1.19+ reads conf/config.yaml (standard YAML; flat dotted keys are valid there; 2.x reads nothing
        # else), older releases conf/flink-conf.yaml: flat `key: value` lines whose value is the rest of the line,
        # quotes included.
        lines = [f"{key}: {value if legacy else _yaml_string(value)}" for key, value in settings.items()]
        conf = self.conf_dir / ("flink-conf.yaml" if legacy else "config.yaml")
        conf.write_text("\n".join(lines) + "\n")
        conf.chmod(0o600)  # it may hold the object store's secret


ROLES = ("taskmanager", "jobmanager", "zookeeper")  # a cluster's processes, in stopping order


def _yaml_string(value: str) -> str:
    """A YAML double-quoted scalar (JSON string syntax is valid YAML)."""
    return json.dumps(value)


def _legacy_config(version: str) -> bool:
    """Whether a Flink release predates 1.19's config.yaml and the `.type`/`.all` key names (1.16 here)."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) < (1, 19)


def _major(version: str) -> int:
    return int(version.split(".")[0])


# The keys Flink 2.0 renamed (CheckpointingOptions of 2.0: the 1.x names are only deprecated keys there), written
# under their 2.x names for a 2.x cluster.
RENAMED_IN_2 = {
    "state.checkpoints.dir": "execution.checkpointing.dir",
    "state.savepoints.dir": "execution.checkpointing.savepoint-dir",
    "state.backend.incremental": "execution.checkpointing.incremental",
}


# What Flink 1.18+ distributions set (Flink 1.19.3's conf/config.yaml, env.java.opts.all) so that Flink runs on
# Java 17; Flink 1.16's conf sets nothing (it supports Java 8 and 11), and runs on this Java 17 with the same.
JAVA_17_OPTIONS = " ".join(
    [
        *(
            f"--add-exports={export}=ALL-UNNAMED"
            for export in (
                "java.base/sun.net.util",
                "java.rmi/sun.rmi.registry",
                "jdk.compiler/com.sun.tools.javac.api",
                "jdk.compiler/com.sun.tools.javac.file",
                "jdk.compiler/com.sun.tools.javac.parser",
                "jdk.compiler/com.sun.tools.javac.tree",
                "jdk.compiler/com.sun.tools.javac.util",
                "java.security.jgss/sun.security.krb5",
            )
        ),
        *(
            f"--add-opens=java.base/{package}=ALL-UNNAMED"
            for package in (
                "java.lang",
                "java.net",
                "java.io",
                "java.nio",
                "sun.nio.ch",
                "java.lang.reflect",
                "java.text",
                "java.time",
                "java.util",
                "java.util.concurrent",
                "java.util.concurrent.atomic",
                "java.util.concurrent.locks",
            )
        ),
    ]
)


def newest_completed_checkpoint(checkpoints: Path) -> Path | None:
    """The newest chk-N directory of a job's checkpoint directory that holds its `_metadata` (the JobManager
    writes it last, on completion: a checkpoint a cancel or a crash caught in flight has none), by N; None if no
    checkpoint completed."""
    completed = [chk for chk in checkpoints.glob("chk-*") if (chk / "_metadata").is_file()]
    return max(completed, key=lambda chk: int(chk.name.removeprefix("chk-")), default=None)
