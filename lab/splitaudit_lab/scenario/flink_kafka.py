"""Flink's own `KafkaSource` restored from a savepoint: the Flink-native jobs of beam_pipelines/java/flink-jobs
(no Beam; DataStream, or SQL with the Table API's `kafka` connector) on the stack's Flink, judged by `guard` before
the restore and `audit` after it.

One run (`run_kafka_source_restore`), on the restore scenario's steps (`scenario/restore.py`, `ScenarioRun`):

1. create a topic with P partitions, produce N records (record i to partition i % P);
2. run the job (parallelism K, partition discovery as `discovery_interval_ms` says) until every record is in
   its sink and a checkpoint covers them; savepoint SP0, cancel;
3. add `added_partitions` partitions to the topic while the job is down, produce N more records over all of them;
4. `guard` the restore: SP0, the job jar and `--bootstrap` (the topic's partitions and offsets now);
5. restore from SP0; wait until the partitions SP0 holds have every offset in the sink, then until checkpoints
   add no rows (whether the added partitions are read is what the run measures, not what it waits for);
6. savepoint SP1, cancel, and audit the sink against SP0 and SP1.

With partitions added while the job runs instead (`run_kafka_source_grown_while_running`), the job is not
restored: it reads on, a savepoint SP1 ends it, and the audit judges SP1 and the sink; the guard judges a restore
from SP1 (what a restart would do for the partitions the running job never read).

The truth is the audit's per-partition count of the sink against what was produced (`ScenarioReport.partitions`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from splitaudit.clients import kafka as kafka_client
from splitaudit.guard.predict import run_guard
from splitaudit.guard.results import GuardReport
from splitaudit.home import JAVA_ROOT
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import SAVEPOINT, ScenarioRun, ScenarioSettings
from splitaudit_lab.scenario.results import ScenarioReport
from splitaudit_lab.stack.stack import Stack

KAFKA_SOURCE_JOB = "flink-kafka-lineage-job.jar"
KAFKA_SQL_JOB = "flink-kafka-sql-lineage-job.jar"  # the same as a SQL job: the Table API's kafka connector, no uids
DISCOVERY_DISABLED = -1  # `partition.discovery.interval.ms`: a non-positive value disables periodic discovery
GROWN_WHILE_RUNNING = "grown-while-running"  # the report's `restart`: no restore, the job read on


def kafka_source_job() -> Path:
    """The Flink-native KafkaSource job's shaded jar, as the Maven reactor leaves it (`make setup` builds it)."""
    return JAVA_ROOT / "flink-jobs" / "target" / KAFKA_SOURCE_JOB


def kafka_sql_job() -> Path:
    """The SQL job's shaded jar (the Table API's `kafka` connector, a KafkaSource underneath, no uids)."""
    return JAVA_ROOT / "flink-jobs" / "target" / KAFKA_SQL_JOB


@dataclass(frozen=True)
class KafkaSourceRestore:
    """One run of the KafkaSource job: the guard's verdict on a restore from one of its savepoints (the first
    before the restore; the last when the topic grew while it ran), and the run (sink, savepoints, audit)."""

    discovery_interval_ms: int | None  # the job's `partition.discovery.interval.ms` (None: the connector's default)
    guard: GuardReport
    run: ScenarioReport


def run_kafka_source_restore(
    stack: Stack,
    run_dir: Path,
    progress: Progress,
    settings: ScenarioSettings,
    discovery_interval_ms: int | None = DISCOVERY_DISABLED,
    jar: Path | None = None,
) -> KafkaSourceRestore:
    """Run the KafkaSource job (`jar`, default `kafka_source_job()`) through a savepoint and a restore on a running
    `stack`, with `settings.added_partitions` added while it is down; everything it writes goes under `run_dir`."""
    jar = jar or kafka_source_job()
    run = ScenarioRun(stack, run_dir, "kafkasource", settings, progress)
    if discovery_interval_ms is not None:
        run.args.append(f"--partitionDiscoveryIntervalMs={discovery_interval_ms}")
    job_before, savepoint_before = run.first_job(jar)
    held = dict(run.topics)  # the partitions each topic had while the first job ran
    if settings.added_partitions:
        run.grow_topics(settings.added_partitions)
    run.produce(settings.records, what=" more")
    guard = _guard(run, savepoint_before, jar)
    job_after, _ = run.restore(jar, savepoint_before, "restore from the savepoint")
    must_read = sum(n for (topic, partition), n in run.produced.items() if partition < held[topic])
    records_per_second = run.wait_for_all(job_after, must_read, time.monotonic(), settings.records)
    savepoint_after = run.savepoint_and_cancel(job_after)
    report = run.report(
        "kafka-source", SAVEPOINT, jar, (job_before, job_after), (savepoint_before, savepoint_after), records_per_second
    )
    return KafkaSourceRestore(discovery_interval_ms, guard, report)


def run_kafka_source_grown_while_running(
    stack: Stack,
    run_dir: Path,
    progress: Progress,
    settings: ScenarioSettings,
    discovery_interval_ms: int | None = DISCOVERY_DISABLED,
    jar: Path | None = None,
) -> KafkaSourceRestore:
    """Run the KafkaSource job on a running `stack` and add `settings.added_partitions` partitions to its topic
    while it runs (after a savepoint SP0 of the first records), produce `settings.records` more over all of them,
    wait until its sink settles and end it with a savepoint SP1; the guard judges a restore from SP1."""
    jar = jar or kafka_source_job()
    run = ScenarioRun(stack, run_dir, "kafkasource-running", settings, progress)
    if discovery_interval_ms is not None:
        run.args.append(f"--partitionDiscoveryIntervalMs={discovery_interval_ms}")
    run.produce(settings.records)
    job = run.run_job(jar)
    run.wait_for_first_batch(job)
    with run.steps.step("savepoint, the job keeps running") as out:
        savepoint_before = run.flink.savepoint(job, run.savepoint_target)
        out.append(savepoint_before)
    held = dict(run.topics)
    for topic, partitions in run.topics.items():
        with run.steps.step(f"add {settings.added_partitions} partitions to {topic} while the job runs"):
            kafka_client.grow_topic(stack.kafka.bootstrap, topic, partitions + settings.added_partitions)
    run.produce(settings.records, what=" more")
    must_read = sum(n for (topic, partition), n in run.produced.items() if partition < held[topic])
    records_per_second = run.wait_for_all(job, must_read, time.monotonic(), settings.records)
    savepoint_after = run.savepoint_and_cancel(job)
    report = run.report(
        "kafka-source", GROWN_WHILE_RUNNING, jar, (job, job), (savepoint_before, savepoint_after), records_per_second
    )
    return KafkaSourceRestore(discovery_interval_ms, _guard(run, savepoint_after, jar), report)


def _guard(run: ScenarioRun, savepoint: str, jar: Path) -> GuardReport:
    """`splitaudit guard` on a restore of `savepoint` with `jar`, with the stack's broker as `--bootstrap`, and
    `--parallelism` when the settings restore at another one."""
    bootstrap = run.stack.kafka.bootstrap
    after = run.settings.parallelism_after
    parallelism = after if after != run.settings.parallelism else None
    with run.steps.step(f"guard a restore of {savepoint} with --bootstrap {bootstrap}") as out:
        guard = run_guard(savepoint, jar, bootstrap, parallelism, run.steps.progress)
        out.append(guard.line)
    return guard
