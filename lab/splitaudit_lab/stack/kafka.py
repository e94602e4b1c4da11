"""A real single-node Apache Kafka broker in KRaft mode on 127.0.0.1, started and stopped by splitaudit.

The broker is the Kafka server from Maven Central jars (`splitaudit setup` lays them out like the
distribution's libs/), run as `kafka.Kafka server.properties` after `StorageTool format`. Its data, logs and
pid file live in the run directory given to it.
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException

from splitaudit.clients.kafka import admin
from splitaudit.errors import ExternalError
from splitaudit.home import KAFKA_VERSION, kafka_libs
from splitaudit_lab.stack import process


@dataclass(frozen=True)
class KafkaBroker:
    """One broker process of a run directory: where it listens and where its files are."""

    workdir: Path
    port: int
    controller_port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.workdir / "pids" / "kafka.pid"

    @property
    def log_file(self) -> Path:
        return self.workdir / "logs" / "kafka.out"

    @property
    def config_file(self) -> Path:
        return self.workdir / "config" / "server.properties"

    def start(self, timeout: float = 90.0) -> process.PidRecord:
        """Format the storage (first start only), start the broker and wait until it serves metadata."""
        libs = kafka_libs()
        if not libs.is_dir():
            raise ExternalError(f"Kafka {KAFKA_VERSION} jars not found in {libs}; run `splitaudit setup`")
        java = process.java_executable()
        classpath = f"{libs}/*"
        self._write_config()
        if not (self.workdir / "data" / "meta.properties").exists():
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
            formatted = subprocess.run(
                [
                    java,
                    "-cp",
                    classpath,
                    "kafka.tools.StorageTool",
                    "format",
                    # `=` form: a random id may start with "-", which argparse would take for an option
                    f"--cluster-id={cluster_id}",
                    f"--config={self.config_file}",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if formatted.returncode != 0:
                raise ExternalError(f"kafka storage format failed:\n{formatted.stdout}{formatted.stderr}")
        record = process.spawn(
            "kafka",
            [
                java,
                "-Xms256m",
                "-Xmx512m",
                "-XX:+UseG1GC",
                f"-Djava.io.tmpdir={self.workdir / 'tmp'}",
                f"-Dlog4j.configuration=file:{self.workdir / 'config' / 'log4j.properties'}",
                f"-Dkafka.logs.dir={self.workdir / 'logs'}",
                "-cp",
                classpath,
                "kafka.Kafka",
                str(self.config_file),
            ],
            pid_file=self.pid_file,
            log_file=self.log_file,
        )
        process.wait_until(
            f"the Kafka broker on {self.bootstrap}",
            self.healthy,
            timeout=timeout,
            alive=record,
            log=self.log_file,
        )
        return record

    def stop(self) -> int:
        """Stop the broker (SIGTERM, a controlled shutdown) by its pid file; the pid it had. `start` brings it
        back on the same port with the same data."""
        record = process.stop(self.pid_file)
        if record is None:
            raise ExternalError(f"no running Kafka broker to stop ({self.pid_file})")
        return record.pid

    def healthy(self) -> bool:
        """True when the broker answers a metadata request."""
        try:
            metadata = admin(self.bootstrap, quiet=True).list_topics(timeout=2)
        except KafkaException:
            return False
        return len(metadata.brokers) == 1

    def _write_config(self) -> None:
        for folder in ("config", "data", "logs", "tmp", "pids"):
            (self.workdir / folder).mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
                    f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    f"log.dirs={self.workdir / 'data'}",
                    "num.partitions=1",
                    "auto.create.topics.enable=false",
                    "offsets.topic.replication.factor=1",
                    "offsets.topic.num.partitions=4",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    "",
                ]
            )
        )
        (self.workdir / "config" / "log4j.properties").write_text(
            "\n".join(
                [
                    "log4j.rootLogger=INFO, file",
                    "log4j.appender.file=org.apache.log4j.FileAppender",
                    f"log4j.appender.file.File={self.workdir / 'logs' / 'server.log'}",
                    "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
                    "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n",
                    "",
                ]
            )
        )
