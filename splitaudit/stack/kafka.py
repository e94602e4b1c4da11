"""A real single-node Apache Kafka broker in KRaft mode on 127.0.0.1, and the client calls the tools need.

The broker is the Kafka server from Maven Central jars (`splitaudit setup` lays them out like the
distribution's libs/), run as `kafka.Kafka server.properties` after `StorageTool format`. Its data, logs and
pid file live in the run directory given to it.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # type: ignore[attr-defined]

from splitaudit.errors import ExternalError, UsageError
from splitaudit.stack import process
from splitaudit.stack.home import KAFKA_VERSION, kafka_libs


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
        java = java_executable()
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


def java_executable() -> str:
    """The `java` the stack runs on: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise ExternalError("no `java` found (set JAVA_HOME or put Java 17 on PATH)")
    return candidate


def admin(bootstrap: str, *, quiet: bool = False) -> AdminClient:
    """An admin client; short timeouts so a dead broker fails fast. `quiet` silences librdkafka's connection
    errors, for health checks that expect them while a broker starts."""
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000}
    if quiet:
        config["log_level"] = 0
    return AdminClient(config)


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Create a topic with `partitions` partitions (replication 1); an existing topic is an error."""
    client = admin(bootstrap)  # must outlive the future: a collected client cancels its requests
    futures = client.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    try:
        futures[topic].result(timeout)
    except KafkaException as ex:
        raise UsageError(f"cannot create topic {topic!r} on {bootstrap}: {ex.args[0].str()}") from ex


def grow_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Give an existing topic `partitions` partitions in all (Kafka only ever adds partitions)."""
    client = admin(bootstrap)
    futures = client.create_partitions([NewPartitions(topic, partitions)])
    try:
        futures[topic].result(timeout)
    except KafkaException as ex:
        raise UsageError(f"cannot grow topic {topic!r} to {partitions} partitions: {ex.args[0].str()}") from ex


def produce(bootstrap: str, topic: str, partitions: int, count: int, start: int = 0) -> dict[int, int]:
    """Produce `count` records numbered from `start`, round-robin over the partitions; return per-partition counts.

    Record i goes to partition i % partitions with key and value "i", so what each partition holds is known.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": True})
    errors: list[str] = []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            errors.append(str(error))

    sent: dict[int, int] = dict.fromkeys(range(partitions), 0)
    for i in range(start, start + count):
        partition = i % partitions
        while True:
            try:
                producer.produce(topic, key=str(i), value=str(i), partition=partition, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
        sent[partition] += 1
    remaining = producer.flush(60)
    if remaining or errors:
        raise ExternalError(f"producing to {topic}: {remaining} undelivered, errors: {errors[:3]}")
    return sent


def end_offsets(bootstrap: str, topic: str, partitions: Iterable[int]) -> dict[int, tuple[int, int]]:
    """(log start, log end) offset per partition, from the broker."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "splitaudit-offsets", "enable.auto.commit": False})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False) for p in partitions
        }
    finally:
        consumer.close()


def consume_all(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> dict[int, list[int]]:
    """Read every record of the topic from the beginning; return the offsets seen per partition."""
    ends = end_offsets(bootstrap, topic, range(partitions))
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"splitaudit-read-{uuid.uuid4()}",
            "enable.auto.commit": False,
        }
    )
    seen: dict[int, list[int]] = {p: [] for p in range(partitions)}
    try:
        consumer.assign([TopicPartition(topic, p, ends[p][0]) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while any(len(seen[p]) < ends[p][1] - ends[p][0] for p in seen) and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=10_000, timeout=1.0):
                partition, offset = message.partition(), message.offset()
                if message.error() is None and partition is not None and offset is not None:
                    seen[partition].append(offset)
    finally:
        consumer.close()
    return seen
