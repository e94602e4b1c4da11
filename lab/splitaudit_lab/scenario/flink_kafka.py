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
Both runs take `watched`: `splitaudit watch` (`--on-error report`, `--bootstrap`) follows the restored job from its
submission (or the job that grows while running, not restored, from once it runs) to its end, and the result holds
its report beside that job's own sink rows per partition (partition, rows, lowest and highest offset).

`run_watched_kafka_source` restores SP0 under `splitaudit watch` (`--on-error report`, following the job from its
submission to its end): as it is, with another source uid and `allowNonRestoredState` (the source's splits
dropped: it reads every partition again from earliest), or with partitions added while the restored job runs
(discovery off: never read). Its truth is the restored job's own sink rows per partition.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow.compute as pc

from splitaudit.clients import kafka as kafka_client
from splitaudit.clients.flink import RUN_TIMEOUT, TERMINAL_STATES
from splitaudit.guard.predict import run_guard
from splitaudit.guard.results import REPORT, GuardReport, WatchReport
from splitaudit.guard.watch import WatchSettings, run_watch
from splitaudit.home import JAVA_ROOT
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import SAVEPOINT, ScenarioRun, ScenarioSettings, wait_for_offsets
from splitaudit_lab.scenario.results import ScenarioReport
from splitaudit_lab.scenario.sink import read_sink
from splitaudit_lab.scenario.watched import watching_restore
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


# A job's own sink rows of one partition: (partition, rows, lowest offset, highest offset).
JobRows = tuple[int, int, int, int]


@dataclass(frozen=True)
class KafkaSourceRestore:
    """One run of the KafkaSource job: the guard's verdict on a restore from one of its savepoints (the first
    before the restore; the last when the topic grew while it ran), and the run (sink, savepoints, audit)."""

    discovery_interval_ms: int | None  # the job's `partition.discovery.interval.ms` (None: the connector's default)
    guard: GuardReport
    run: ScenarioReport
    watch: WatchReport | None = None  # the watch of the restored (or, grown while running, the running) job
    rows: tuple[JobRows, ...] = ()  # with the watch: that job's own sink rows per partition


def run_kafka_source_restore(
    stack: Stack,
    run_dir: Path,
    progress: Progress,
    settings: ScenarioSettings,
    discovery_interval_ms: int | None = DISCOVERY_DISABLED,
    jar: Path | None = None,
    watched: bool = False,
) -> KafkaSourceRestore:
    """Run the KafkaSource job (`jar`, default `kafka_source_job()`) through a savepoint and a restore on a running
    `stack`, with `settings.added_partitions` added while it is down; everything it writes goes under `run_dir`.
    `watched`: the restore is submitted under `splitaudit watch` (`--on-error report`, `--bootstrap`), which follows
    it from its submission to its end."""
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
    must_read = sum(n for (topic, partition), n in run.produced.items() if partition < held[topic])
    watch = None
    if watched:
        with run.steps.step("restore from the savepoint under the watch") as out:
            with watching_restore(run, jar, savepoint_before) as (job_after, watching):
                run.flink.wait_all_running(job_after)
                records_per_second = run.wait_for_all(job_after, must_read, time.monotonic(), settings.records)
                savepoint_after = run.savepoint_and_cancel(job_after)
            watch = watching.result()
            out.append(watch.line)
    else:
        job_after, _ = run.restore(jar, savepoint_before, "restore from the savepoint")
        records_per_second = run.wait_for_all(job_after, must_read, time.monotonic(), settings.records)
        savepoint_after = run.savepoint_and_cancel(job_after)
    report = run.report(
        "kafka-source", SAVEPOINT, jar, (job_before, job_after), (savepoint_before, savepoint_after), records_per_second
    )
    rows = _job_rows(run, job_after) if watched else ()
    return KafkaSourceRestore(discovery_interval_ms, guard, report, watch, rows)


def run_kafka_source_grown_while_running(
    stack: Stack,
    run_dir: Path,
    progress: Progress,
    settings: ScenarioSettings,
    discovery_interval_ms: int | None = DISCOVERY_DISABLED,
    jar: Path | None = None,
    watched: bool = False,
) -> KafkaSourceRestore:
    """Run the KafkaSource job on a running `stack` and add `settings.added_partitions` partitions to its topic
    while it runs (after a savepoint SP0 of the first records), produce `settings.records` more over all of them,
    wait until its sink settles and end it with a savepoint SP1; the guard judges a restore from SP1. `watched`:
    `splitaudit watch --job` (`--on-error report`, `--bootstrap`, no savepoint: the job restored none) follows the
    job from once it runs to its end."""
    jar = jar or kafka_source_job()
    run = ScenarioRun(stack, run_dir, "kafkasource-running", settings, progress)
    if discovery_interval_ms is not None:
        run.args.append(f"--partitionDiscoveryIntervalMs={discovery_interval_ms}")
    run.produce(settings.records)
    job = run.run_job(jar)
    with ThreadPoolExecutor(1) as pool:
        watching = None
        if watched:
            watch_settings = WatchSettings(stack.flink.rest_url, job, stack.kafka.bootstrap, REPORT, wait=RUN_TIMEOUT)
            watching = pool.submit(run_watch, watch_settings, Progress(), lambda _event: None)
        try:
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
        except BaseException:
            # The watch follows the job to its end: a run that fails ends the job, or the watch never ends.
            if run.flink.job_state(job) not in TERMINAL_STATES:
                run.flink.cancel(job)
            raise
        watch = None if watching is None else watching.result()
    report = run.report(
        "kafka-source", GROWN_WHILE_RUNNING, jar, (job, job), (savepoint_before, savepoint_after), records_per_second
    )
    rows = _job_rows(run, job) if watched else ()
    return KafkaSourceRestore(discovery_interval_ms, _guard(run, savepoint_after, jar), report, watch, rows)


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


@dataclass(frozen=True)
class WatchedKafkaSource:
    """A KafkaSource restore under the watch: the watch's report, SP0, and the restored job's sink rows per
    partition as (partition, rows, lowest offset, highest offset)."""

    watch: WatchReport
    savepoint: str
    rows: tuple[JobRows, ...]
    plain_sink: Path | None = None  # the same records without lineage, their `value_hash` alone (`user_sinks`)
    sink_topic: str | None = None  # the same records with lineage, as the values of a topic's records (`user_sinks`)


def run_watched_kafka_source(
    stack: Stack,
    run_dir: Path,
    progress: Progress,
    settings: ScenarioSettings,
    jar: Path | None = None,
    source_uid: str | None = None,
    grown_while_running: int = 0,
    user_sinks: bool = False,
) -> WatchedKafkaSource:
    """Savepoint a run of the KafkaSource job (`jar`, discovery off) as SP0, produce `settings.records` more, and
    restore SP0 as a job the watch follows from its submission to its end: with `source_uid`, under that source uid
    with `allowNonRestoredState` (the DataStream job only); with `grown_while_running`, that many partitions added
    once the restored job has read its backlog and `settings.records` more produced over all of them; with
    `user_sinks`, both jobs also write each record without lineage into `run_dir / "plain-sink"` and with it into a
    topic of its own (the DataStream job's `--plainSinkDir`, `--sinkTopic`). Once the partitions SP0 holds are in the
    sink and checkpoints add no rows, savepoint and cancel."""
    jar = jar or kafka_source_job()
    run = ScenarioRun(stack, run_dir, "kafkasource-watch", settings, progress)
    run.args.append(f"--partitionDiscoveryIntervalMs={DISCOVERY_DISABLED}")
    plain, topic = (run_dir / "plain-sink", f"{next(iter(run.topics))}-out") if user_sinks else (None, None)
    if plain is not None and topic is not None:
        with run.steps.step(f"create the sink topic {topic}"):
            kafka_client.create_topic(stack.kafka.bootstrap, topic, 1)
        run.args += [f"--plainSinkDir={plain}", f"--sinkTopic={topic}"]
    _, savepoint = run.first_job(jar)
    run.produce(settings.records, what=" more")
    held = dict(run.topics)
    job = uuid.uuid4().hex
    watch = WatchSettings(
        stack.flink.rest_url, job, stack.kafka.bootstrap, REPORT, savepoint=savepoint, wait=RUN_TIMEOUT
    )
    args = run.job_args(settings.parallelism_after) + ([f"--sourceUid={source_uid}"] if source_uid else [])
    with ThreadPoolExecutor(1) as pool, run.steps.step(f"watch job {job} from its submission") as out:
        watching = pool.submit(run_watch, watch, Progress(), lambda _event: None)
        try:
            with run.steps.step(f"restore from the savepoint{f' with source uid {source_uid}' if source_uid else ''}"):
                run.flink.run_jar(
                    run.upload(jar),
                    program_args=args,
                    savepoint_path=savepoint,
                    allow_non_restored_state=source_uid is not None,
                    job_id=job,
                )
                run.flink.wait_all_running(job)
            if grown_while_running:
                # Its readers reading the backlog prove the enumerator's one listing at start is done: a partition
                # added before it would be assigned.
                with run.steps.step(f"wait for the {run.total} records in the sink"):
                    wait_for_offsets(run.sink, tuple(run.topics), run.total, settings.timeout)
                for topic, partitions in run.topics.items():
                    with run.steps.step(f"add {grown_while_running} partitions to {topic} while the job runs"):
                        kafka_client.grow_topic(stack.kafka.bootstrap, topic, partitions + grown_while_running)
                run.produce(settings.records, what=" more")
            must_read = sum(n for (topic, partition), n in run.produced.items() if partition < held[topic])
            run.wait_for_all(job, must_read, time.monotonic(), settings.records)
            run.savepoint_and_cancel(job)
        finally:
            report = watching.result()
        out.append(report.line)
    return WatchedKafkaSource(report, savepoint, _job_rows(run, job), plain, topic)


def _job_rows(run: ScenarioRun, job: str) -> tuple[JobRows, ...]:
    """`job`'s own sink rows per partition: (partition, rows, lowest offset, highest offset)."""
    sink = read_sink(run.sink)
    mine = sink.filter(pc.equal(sink["job_id"], job))
    by_partition = mine.group_by("partition").aggregate([("offset", "count"), ("offset", "min"), ("offset", "max")])
    return tuple(
        sorted(
            (int(r["partition"]), int(r["offset_count"]), int(r["offset_min"]), int(r["offset_max"]))
            for r in by_partition.to_pylist()
        )
    )
