"""The restore scenario of beam#31313 and its fault variants: run the reference pipeline, interrupt it, count
the sink.

On a real stack (Kafka broker + Flink session cluster), for one job jar (stock or patched), the savepoint
restore (`run_restore_scenario`):

1. create a topic with P partitions (or several topics, each with its own count: the job reads them all) and
   produce N records to each (record i to partition i % P);
2. submit the job with parallelism K (2) and wait until all N records are in the sink and a checkpoint has
   completed after that (the pipeline reads 20,000 records in about a second, so "about half" cannot be
   caught reliably; a savepoint with everything read also gives exact next offsets, N/P per partition);
3. savepoint, then cancel;
4. produce N more records;
5. restore from the savepoint at parallelism K, or at another one (`restore_parallelism`: a rescale restore),
   check through REST that the job names it as its restore source;
6. wait until all 2N offsets are in the sink, then until checkpoints over 3 s add no rows (the twin reader of
   the stock build may still be re-reading offsets that the restored reader already emitted);
7. savepoint again, then cancel.

With `continuous`, a producer thread writes records from the job's start until the restored job runs, so
the first job keeps reading between its savepoint and its cancellation, and the restored job reads those
offsets again (replay). The fault variants (a `fault` in the settings) interrupt a running job instead: the
TaskManager killed, the Kafka broker restarted, or the JobManager killed and the job resubmitted from its
latest retained checkpoint. `run_restore_scenario` runs whichever the settings ask for.

Flink job ids are chosen here and passed to /jars/<id>/run, so the sink's job_id column names the real jobs.
Everything (sink, savepoints, the stack's logs when it is the scenario's own) stays in the run directory.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from splitaudit.audit.request import AuditRequest
from splitaudit.clients import kafka as kafka_client
from splitaudit.clients.flink import FlinkRestClient
from splitaudit.errors import ExternalError, UsageError
from splitaudit.home import BEAM_VERSION, UPSTREAM_FIX_VERSION, pipeline_jars
from splitaudit.patch.jar import read_jar_facts
from splitaudit.polling import poll
from splitaudit.progress import Progress, StepLog
from splitaudit_lab.scenario.results import (
    BROKER_RESTART,
    FAULTS,
    JOBMANAGER_KILL,
    TASKMANAGER_KILL,
    DemoReport,
    ScenarioReport,
    partition_counts,
)
from splitaudit_lab.scenario.sink import count_rows, read_sink
from splitaudit_lab.stack.stack import Stack

SAVEPOINT = "savepoint"
# The checkpoint interval of a job that checkpoints only when triggered: an hour, longer than any run.
TRIGGERED_ONLY_INTERVAL_MS = 3_600_000


@dataclass(frozen=True)
class ScenarioSettings:
    """The knobs of the scenario; the defaults reproduce beam#31313 (4 partitions, 20,000 records,
    parallelism 2). Knobs that do not combine are refused when the settings are made (a UsageError, exit 2), so
    every caller, the CLI's `scenario` and `demo` included, gets the same checks before a stack starts."""

    partitions: int = 4  # partitions of the job's topic (of the first, when it reads several)
    more_topics: tuple[int, ...] = ()  # partitions of each further topic the job reads, one entry per topic
    records: int = 20_000  # produced to each topic before the savepoint, and again after it
    parallelism: int = 2
    # The parallelism the job is restored at (None: `parallelism`). Flink redistributes the readers' split
    # state over the new subtasks; what Beam's enumerator does then is what a rescale restore tests.
    restore_parallelism: int | None = None
    timeout: float = 300.0  # for each wait on the sink
    added_partitions: int = 0  # partitions added to the topic while the job is down (before the second batch)
    continuous: bool = False  # records keep arriving through the savepoint, the cancellation and the restore
    # How the running job is interrupted: None, by a savepoint and a restore from it; else one of FAULTS.
    fault: str | None = None
    # Continuous production: records per second, and how long the first job keeps reading after its savepoint
    # before it is cancelled (the offsets it reads then are what the restored job replays).
    produce_rate: int = 1_000
    cancel_delay: float = 2.0
    outage: float = 5.0  # seconds the Kafka broker stays down in the broker-restart fault
    # Records each subtask of the job processes per second at most (the pipeline's --maxRecordsPerSecond; 0: as
    # fast as it can): a job doing real work per record reads a restored backlog over seconds, not in one burst.
    records_per_second: int = 0
    # The job checkpoints only when the scenario triggers a checkpoint (REST, Flink 1.19+) where it waits for one,
    # instead of every second: no checkpoint falls where a run does not want one (e.g. while a fault is caused).
    triggered_checkpoints: bool = False
    # Bounded input: each reader of the job ends once its partitions have had no record for this many seconds, and
    # the job finishes (the pipeline's --finishWhenIdleSeconds; 0: never). The job before a restore has it too: the
    # restored readers keep the setting of the job that took the savepoint.
    finish_when_idle: int = 0

    def __post_init__(self) -> None:
        if self.fault is not None:
            if self.fault not in FAULTS:
                raise UsageError(f"unknown fault {self.fault!r}; one of {', '.join(FAULTS)}")
            if self.added_partitions or self.continuous or self.restore_parallelism is not None:
                raise UsageError(
                    "--add-partitions, --continuous and --restore-parallelism apply to the savepoint restore, "
                    "not to a fault"
                )
        if self.added_partitions and self.continuous:
            raise UsageError("--add-partitions and --continuous do not go together")

    @property
    def topic_partitions(self) -> tuple[int, ...]:
        """The partitions of each topic the job reads, in order."""
        return (self.partitions, *self.more_topics)

    @property
    def parallelism_after(self) -> int:
        """The parallelism of the job after the restore."""
        return self.parallelism if self.restore_parallelism is None else self.restore_parallelism


def first_and_more(counts: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    """The partitions of each topic a run creates (`--partitions`) as ScenarioSettings takes them: the first
    topic's, then the further topics'."""
    return counts[0], counts[1:]


def pipeline_jar(variant: str, beam_version: str = BEAM_VERSION) -> Path:
    """The shaded job jar of a variant ("stock" or "patched") of one Beam release, as the Maven build leaves it."""
    jars = pipeline_jars(beam_version)
    if variant not in jars:
        raise UsageError(f"the reference pipeline of Beam {beam_version} has no {variant} jar")
    if not jars[variant].is_file():
        setup = "splitaudit setup" if beam_version == BEAM_VERSION else "splitaudit setup --matrix"
        raise ExternalError(f"{jars[variant]} is missing; run `{setup}`")
    return jars[variant]


class ContinuousProducer:
    """A thread producing records to the topic at a steady rate until stopped; what it produced, per partition.

    Records are numbered on from `start` (`kafka_client.NumberedProducer`), so the topic stays dense and every
    partition's expected offsets are known once the thread stops.
    """

    def __init__(self, bootstrap: str, topic: str, partitions: int, start: int, rate: int) -> None:
        self._producer = kafka_client.NumberedProducer(bootstrap, topic, partitions)
        self._next = start
        self._batch = max(1, rate // 10 // partitions) * partitions  # ten a second, the same for each partition
        self._stop = threading.Event()
        self._failure: BaseException | None = None
        self._started = 0.0
        self.seconds = 0.0  # how long it produced
        self.produced: dict[int, int] = dict.fromkeys(range(partitions), 0)
        self._thread = threading.Thread(target=self._run, name=f"produce-{topic}", daemon=True)

    def __enter__(self) -> ContinuousProducer:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                sent = self._producer.send(self._batch, self._next)
                self._next += self._batch
                for partition, count in sent.items():
                    self.produced[partition] += count
                self._stop.wait(max(0.0, 0.1 - (time.monotonic() - started)))
        except BaseException as ex:  # reported by stop(), in the scenario's thread
            self._failure = ex

    def stop(self) -> dict[int, int]:
        """Stop producing, wait for the last batch to be delivered; the records produced per partition."""
        self._stop.set()
        self._thread.join()
        self.seconds = time.monotonic() - self._started
        if self._failure is not None:
            raise ExternalError(f"producing continuously failed: {self._failure}") from self._failure
        return self.produced

    @property
    def total(self) -> int:
        return sum(self.produced.values())


class ScenarioRun:
    """One run of a scenario on a stack: its directory, fresh topics, sink, job arguments and step log, and the
    steps every scenario is made of."""

    # The topic configuration the run's input topics are created with (none beyond the broker's defaults).
    topic_config: ClassVar[Mapping[str, str]] = MappingProxyType({})
    # The class the job's runs start (run and restore alike); None: the jar manifest's main class.
    entry_class: ClassVar[str | None] = None

    def __init__(self, stack: Stack, run_dir: Path, name: str, settings: ScenarioSettings, progress: Progress):
        if run_dir.exists():
            raise UsageError(f"{run_dir} already exists; the scenario never reuses a run directory")
        self.stack, self.run_dir, self.settings = stack, run_dir, settings
        self.steps = StepLog(progress)
        self.sink, self.savepoints = run_dir / "sink", run_dir / "savepoints"
        self.savepoints.mkdir(parents=True)
        store = stack.store  # with an object store, savepoints go to its bucket, as Flink's checkpoints do
        self.savepoint_target = store.uri("runs", run_dir.name, "savepoints") if store else self.savepoints.as_uri()
        base = f"{name}-{uuid.uuid4().hex[:8]}"
        counts = settings.topic_partitions
        # Partitions of each topic at its creation; one topic keeps the run's name, several are numbered.
        self.topics = {base if len(counts) == 1 else f"{base}-t{i}": n for i, n in enumerate(counts)}
        # Records produced to each (topic, partition) so far: offsets 0..n-1.
        self.produced: dict[tuple[str, int], int] = {}
        self._jar_ids: dict[Path, str] = {}
        bootstrap = stack.kafka.bootstrap
        for topic, partitions in self.topics.items():
            with self.steps.step(f"create topic {topic} ({partitions} partitions)"):
                kafka_client.create_topic(bootstrap, topic, partitions, self.topic_config)
        self.args = [
            f"--bootstrapServers={bootstrap}",
            f"--topic={','.join(self.topics)}",
            f"--groupId={base}",
            f"--sinkDir={self.sink}",
        ]

    @property
    def flink(self) -> FlinkRestClient:
        return self.stack.flink.client()

    @property
    def total(self) -> int:
        return sum(self.produced.values())

    def produced_to(self, topic: str) -> int:
        """Records produced to `topic` so far."""
        return sum(n for (t, _), n in self.produced.items() if t == topic)

    def count(self, topic: str, produced: dict[int, int]) -> None:
        """Add records produced to `topic` to what the sink must hold."""
        for partition, n in produced.items():
            self.produced[topic, partition] = self.produced.get((topic, partition), 0) + n

    def record(self, number: int) -> tuple[str, str]:
        """The key and value of record `number` of a topic (numbered from 0 over all its partitions): the
        reference pipeline hashes whatever it reads, so the number itself."""
        return kafka_client.numbered(number)

    def produce(self, count: int, then: Callable[[], str] | None = None, what: str = "") -> None:
        """Produce `count` records to each topic, numbered on from those already produced to it, over every
        partition the topic has now; `then`, when given, runs at once after (a fault while the job reads them)
        and reports itself."""
        bootstrap = self.stack.kafka.bootstrap
        each = " to each topic" if len(self.topics) > 1 else ""
        with self.steps.step(f"produce {count} records{what}{each}") as out:
            for topic in self.topics:
                partitions = len(kafka_client.topic_partitions(bootstrap, topic))
                sent = kafka_client.produce(
                    bootstrap, topic, partitions, count, start=self.produced_to(topic), record=self.record
                )
                self.count(topic, sent)
                counts = ", ".join(f"p{p}: {n}" for p, n in sent.items())
                out.append(counts if len(self.topics) == 1 else f"{topic} {counts}")
            if then is not None:
                out.append(then())

    def grow_topics(self, added: int) -> None:
        """Add `added` partitions to each topic (as while the job is down)."""
        for topic, partitions in self.topics.items():
            with self.steps.step(f"add {added} partitions to {topic} while the job is down"):
                kafka_client.grow_topic(self.stack.kafka.bootstrap, topic, partitions + added)

    def upload(self, jar: Path) -> str:
        """The cluster's id of `jar`, uploaded once per cluster start."""
        if jar not in self._jar_ids:
            self._jar_ids[jar] = self.flink.upload_jar(jar)
        return self._jar_ids[jar]

    def forget_jars(self) -> None:
        """A restarted cluster has forgotten every upload."""
        self._jar_ids.clear()

    def job_args(self, parallelism: int) -> list[str]:
        """The pipeline's program arguments for a job at `parallelism` (the pipeline sets it on its environment,
        which is also what Beam's FlinkSource splits the Kafka source into)."""
        settings = self.settings
        pace = [f"--maxRecordsPerSecond={settings.records_per_second}"] if settings.records_per_second else []
        if settings.triggered_checkpoints:
            pace.append(f"--checkpointingInterval={TRIGGERED_ONLY_INTERVAL_MS}")
        if settings.finish_when_idle:
            pace.append(f"--finishWhenIdleSeconds={settings.finish_when_idle}")
        return [*self.args, f"--parallelism={parallelism}", *pace]

    def run_job(self, jar: Path) -> str:
        """Submit `jar` with a fresh job id and wait until every vertex runs; the job id."""
        parallelism = self.settings.parallelism
        run = self.entry_class or "it"
        with self.steps.step(f"upload {jar.name} and run {run} (parallelism {parallelism})") as out:
            job = self.flink.run_jar(
                self.upload(jar),
                program_args=self.job_args(parallelism),
                entry_class=self.entry_class,
                job_id=uuid.uuid4().hex,
            )
            self.flink.wait_all_running(job)
            out.append(f"job {job}")
        return job

    def restore(self, jar: Path, savepoint: str, what: str, job_id: str | None = None) -> tuple[str, str]:
        """Submit `jar` from `savepoint` (or retained checkpoint) as a new job (`job_id`, else a new one) at the
        parallelism after the restore, proven through REST; the job id and the path Flink restored from."""
        parallelism = self.settings.parallelism_after
        with self.steps.step(f"{what} (parallelism {parallelism})") as out:
            job, restored = self.flink.restore(
                self.upload(jar),
                savepoint,
                program_args=self.job_args(parallelism),
                job_id=job_id or uuid.uuid4().hex,
                entry_class=self.entry_class,
            )
            out.append(f"job {job} restored from {restored.external_path}")
        return job, str(restored.external_path)

    def submit_restore(self, jar: Path, savepoint: str, job: str) -> None:
        """Submit `jar` from `savepoint` as job `job` at the parallelism after the restore, and return as soon as
        Flink has taken it (its main() ran): whoever watches the job proves where it restored from."""
        parallelism = self.settings.parallelism_after
        with self.steps.step(f"submit the restore from the savepoint (parallelism {parallelism})") as out:
            self.flink.run_jar(
                self.upload(jar),
                program_args=self.job_args(parallelism),
                entry_class=self.entry_class,
                savepoint_path=savepoint,
                job_id=job,
            )
            out.append(f"job {job}")

    def first_job(self, jar: Path) -> tuple[str, str]:
        """The run before every restore: N records, the job reading them, savepoint and cancel; the job's id and
        the savepoint's location."""
        self.produce(self.settings.records)
        job = self.run_job(jar)
        self.wait_for_first_batch(job)
        return job, self.savepoint_and_cancel(job)

    def wait_for_first_batch(self, job: str) -> int:
        """Wait until every record produced so far is in the sink and a checkpoint covers them; its id."""
        with self.steps.step(f"wait for the {self.total} records in the sink and a checkpoint after them") as out:
            wait_for_offsets(self.sink, tuple(self.topics), self.total, self.settings.timeout)
            checkpoint = self.checkpoint(job)
            out.append(f"checkpoint {checkpoint}")
        return checkpoint

    def checkpoint(self, job: str) -> int:
        """A checkpoint of `job` that covers everything it emitted so far (triggered now with
        `triggered_checkpoints`, else the job's next but one); its id."""
        return checkpoint_after_now(self.flink, job, self.settings.triggered_checkpoints)

    def wait_for_all(self, job: str, readable: int, since: float, records: int) -> float:
        """Wait until `readable` offsets are in the sink, then until checkpoints add no rows; the rate of the
        `records` read since the monotonic time `since`, in records per second."""
        with self.steps.step(f"wait for {readable} offsets in the sink, until checkpoints add no rows") as out:
            wait_for_offsets(self.sink, tuple(self.topics), readable, self.settings.timeout)
            records_per_second = records / (time.monotonic() - since)
            checkpoint = wait_until_settled(
                self.flink,
                job,
                self.sink_rows,
                str(self.sink),
                self.settings.timeout,
                self.settings.triggered_checkpoints,
            )
            out.append(f"{records_per_second:.0f} records/s after the restart; checkpoint {checkpoint}")
        return records_per_second

    def sink_rows(self) -> int:
        """Rows in the sink's complete files so far."""
        return count_rows(self.sink)

    def savepoint_and_cancel(self, job: str, delay: float = 0.0) -> str:
        """Savepoint the job, then cancel it (after `delay` seconds, during which it keeps reading); the path."""
        name = "savepoint, then cancel" + (f" {delay:g} s later" if delay else "")
        with self.steps.step(name) as out:
            savepoint = self.flink.savepoint(job, self.savepoint_target)
            time.sleep(delay)
            self.flink.cancel(job)
            out.append(savepoint)
        return savepoint

    def report(
        self,
        variant: str,
        restart: str,
        jar: Path,
        jobs: tuple[str, str],
        savepoints: tuple[str, str],
        records_per_second: float,
        finished: bool = False,
    ) -> ScenarioReport:
        """The scenario's report: the auditor's verdict on the sink and the savepoints, counted per partition
        against what was produced. A restored job that `finished` (a bounded source) took no savepoint after the
        restore: its sink is audited against the topics alone (`savepoints` then holds the one before twice)."""
        request = AuditRequest(
            sink=str(self.sink),
            sink_format="json",
            savepoint=None if finished else savepoints[1],
            # Only a new job restored from state has a "before" of the same job to compare with; a failover
            # and a broker restart keep their job.
            before=savepoints[0] if restart in (SAVEPOINT, JOBMANAGER_KILL) and not finished else None,
            topics=tuple(self.topics),
            partitions=self._partitions_now(),
        )
        from splitaudit.audit.run import run_audit  # imports pyspark: not when the CLI merely starts

        with self.steps.step("audit the sink and the savepoints on Spark") as out:
            findings = run_audit(request, self.steps.progress)
            out.append(f"{len(findings.findings)} findings")
        return ScenarioReport(
            variant=variant,
            restart=restart,
            continuous=self.settings.continuous,
            parallelism=self.settings.parallelism,
            restore_parallelism=self.settings.parallelism_after,
            jar=str(jar),
            run_dir=str(self.run_dir),
            topics=tuple(self.topics),
            job_id_before=jobs[0],
            job_id_after=jobs[1],
            savepoint_before=savepoints[0],
            savepoint_after=savepoints[1],
            sink_path=str(self.sink),
            sink_format="json",
            expected_records=self.total,
            records_per_second=records_per_second,
            partitions=partition_counts(findings, self.produced),
            steps=tuple(self.steps.done),
            audit=findings,
        )

    def _partitions_now(self) -> tuple[tuple[str | None, int], ...]:
        """What the audit is told of the topics' partitions, as `--partitions` says it: N of the one topic (the
        request's `topics` names it), else TOPIC=N of each; every partition produced to, added ones included."""
        now: dict[str | None, int] = {topic: sum(1 for t, _ in self.produced if t == topic) for topic in self.topics}
        if len(now) == 1:
            return ((None, sum(now.values())),)
        return tuple(now.items())


def run_restore_scenario(
    stack: Stack,
    run_dir: Path,
    jar: Path,
    variant: str,
    progress: Progress,
    settings: ScenarioSettings,
    restore_jar: Path | None = None,
) -> ScenarioReport:
    """Run the scenario `settings` ask for with `jar` on a running `stack`: the savepoint restore (with records
    arriving all along when `continuous`), or the job interrupted by the `fault`. Everything it writes goes under
    `run_dir` (new).

    `restore_jar`, when given, is the jar the job restored from the savepoint runs: a savepoint of one build
    restored into another, as when a user upgrades a running job to the patched jar.
    """
    if settings.fault is not None:
        if restore_jar is not None:
            raise UsageError("restore_jar is the jar restored from the savepoint: a fault restores no savepoint")
        return _run_fault(stack, run_dir, jar, variant, progress, settings, settings.fault)
    if settings.continuous:
        return _run_continuous(stack, run_dir, jar, variant, progress, settings, restore_jar)
    run = ScenarioRun(stack, run_dir, f"restore-{variant}", settings, progress)
    records = settings.records
    job_before, savepoint_before = run.first_job(jar)
    if settings.added_partitions:
        run.grow_topics(settings.added_partitions)
    run.produce(records, what=" more")
    job_after, _ = run.restore(
        restore_jar or jar,
        savepoint_before,
        "restore from the savepoint" + (f" into {restore_jar.name}" if restore_jar else ""),
    )
    # Partitions added while the job was down are read after the restore by a jar that splits the source again
    # (stock: beam#31313) or discovers them (splitaudit's patch); one that keeps its restored splits (the
    # upstream fix) never reads them: wait for the offsets the restored job reads, and let the audit report the
    # others.
    facts = read_jar_facts(restore_jar or jar)
    reads_added = facts.rereads_restored_splits or facts.discovery
    readable = sum(n for (t, p), n in run.produced.items() if reads_added or p < run.topics[t])
    records_per_second = run.wait_for_all(job_after, readable, time.monotonic(), records * len(run.topics))
    savepoint_after = run.savepoint_and_cancel(job_after)
    return run.report(
        variant, SAVEPOINT, jar, (job_before, job_after), (savepoint_before, savepoint_after), records_per_second
    )


def _run_continuous(
    stack: Stack,
    run_dir: Path,
    jar: Path,
    variant: str,
    progress: Progress,
    settings: ScenarioSettings,
    restore_jar: Path | None,
) -> ScenarioReport:
    """The savepoint restore with records produced all along: N records first, then a steady stream from the
    job's start until the restored job has completed a checkpoint; the savepoint and the cancellation
    `cancel_delay` apart while the stream flows. The offsets the first job read in between are in the sink
    twice, once from each job: replay, not double assignment."""
    run = ScenarioRun(stack, run_dir, f"continuous-{variant}", settings, progress)
    run.produce(settings.records)
    first = run.total
    bootstrap = stack.kafka.bootstrap
    with ExitStack() as streams:
        producers = {
            topic: streams.enter_context(
                ContinuousProducer(bootstrap, topic, partitions, run.produced_to(topic), settings.produce_rate)
            )
            for topic, partitions in run.topics.items()
        }
        job_before = run.run_job(jar)
        each = " to each topic" if len(producers) > 1 else ""
        run.steps.progress.info(f"producing about {settings.produce_rate} records/s{each} until the restored job runs")
        with run.steps.step(f"wait for the first {first} records in the sink and a checkpoint") as out:
            wait_for_offsets(run.sink, tuple(run.topics), first, settings.timeout)
            out.append(f"checkpoint {checkpoint_after_now(run.flink, job_before)}")
        savepoint_before = run.savepoint_and_cancel(job_before, settings.cancel_delay)
        job_after, _ = run.restore(
            restore_jar or jar,
            savepoint_before,
            "restore from the savepoint" + (f" into {restore_jar.name}" if restore_jar else ""),
        )
        with run.steps.step("keep producing until the restored job completes a checkpoint, then stop") as out:
            checkpoint = checkpoint_after_now(run.flink, job_after)
            for topic, stream in producers.items():
                run.count(topic, stream.stop())
            streamed = sum(stream.total for stream in producers.values())
            seconds = max(stream.seconds for stream in producers.values())
            out.append(
                f"checkpoint {checkpoint}; {streamed} records streamed in {seconds:.1f} s, {streamed / seconds:.0f}/s"
            )
    since = time.monotonic()
    records_per_second = run.wait_for_all(job_after, run.total, since, run.total - first)
    savepoint_after = run.savepoint_and_cancel(job_after)
    return run.report(
        variant, SAVEPOINT, jar, (job_before, job_after), (savepoint_before, savepoint_after), records_per_second
    )


def _run_fault(
    stack: Stack,
    run_dir: Path,
    jar: Path,
    variant: str,
    progress: Progress,
    settings: ScenarioSettings,
    fault: str,
) -> ScenarioReport:
    """A running job interrupted by `fault` while it reads: the skeleton of every fault variant.

    Produce N records, run the job, wait for them and a checkpoint; produce N/2 more and cause the fault at
    once, while the job reads them; recover; produce the last N/2, wait for all 2N offsets and checkpoints
    that add no rows; savepoint, cancel.

    - `taskmanager-kill`: kill -9 the TaskManager, start a new one; Flink restarts the job from its latest
      checkpoint (a new attempt of the same job).
    - `broker-restart`: stop the Kafka broker, keep it down for `outage` seconds, start it again on the same
      port and data; the job's Kafka consumers reconnect (the same job, no restore).
    - `jobmanager-kill`: kill -9 the JobManager by the pid the stack recorded. A standalone cluster without
      high availability loses the job with it, so the TaskManager is stopped too, the cluster started again,
      and the jar submitted as a new job from the job's latest retained checkpoint (a restore).

    Records read after the last checkpoint before the fault are read again after it: replays, expected with an
    at-least-once sink. Two readers in one generation are not.
    """
    run = ScenarioRun(stack, run_dir, f"{fault}-{variant}", settings, progress)
    cluster = stack.flink
    records, half = settings.records, settings.records // 2
    topics = len(run.topics)
    run.produce(records)
    job = run.run_job(jar)
    checkpoint = run.wait_for_first_batch(job)
    restart_point = f"checkpoint {checkpoint}"
    job_after = job
    if fault == TASKMANAGER_KILL:
        run.produce(half, lambda: f"killed TaskManager pid {cluster.kill('taskmanager')}", ", kill -9 the TaskManager")
        with run.steps.step("start a new TaskManager; Flink restarts the job from its latest checkpoint") as out:
            cluster.start_taskmanager()
            restart_point = _wait_for_restart(run.flink, job, settings.timeout)
            run.flink.wait_all_running(job)
            out.append(f"job {job} restarted from {restart_point}")
    elif fault == BROKER_RESTART:
        run.produce(half, lambda: f"stopped Kafka pid {stack.kafka.stop()}", ", stop the Kafka broker")
        with run.steps.step(f"keep the broker down {settings.outage:g} s, start it again") as out:
            time.sleep(settings.outage)
            out.append(f"Kafka pid {stack.kafka.start().pid} on {stack.kafka.bootstrap}")
            run.flink.wait_all_running(job)
            out.append(f"job {job}: {run.flink.job_state(job)}")
    else:
        run.produce(half, lambda: f"killed JobManager pid {cluster.kill('jobmanager')}", ", kill -9 the JobManager")
        with run.steps.step("stop the TaskManager, start the cluster again") as out:
            retained = cluster.latest_retained_checkpoint(job)
            cluster.stop()
            cluster.start()
            run.forget_jars()
            out.append(f"latest retained checkpoint of job {job}: {retained}")
        job_after, restart_point = run.restore(jar, retained, "resubmit the job from that checkpoint")
    since = time.monotonic()
    run.produce(records - half, what=" (the last)")
    records_per_second = run.wait_for_all(job_after, run.total, since, (records - half) * topics)
    savepoint_after = run.savepoint_and_cancel(job_after)
    return run.report(variant, fault, jar, (job, job_after), (restart_point, savepoint_after), records_per_second)


def _wait_for_restart(flink: FlinkRestClient, job_id: str, timeout: float) -> str:
    """Wait until the job has restarted from a checkpoint (REST latest.restored); that checkpoint's path."""

    def restored() -> str | None:
        latest = flink.checkpoints(job_id).latest_restored
        return None if latest is None else latest.external_path or f"checkpoint {latest.id}"

    return poll(f"Flink job {job_id} to restart from a checkpoint", restored, timeout=timeout, interval=1.0)


def wait_for_offsets(sink: Path, topics: tuple[str, ...], distinct: int, timeout: float) -> None:
    """Wait until the sink holds `distinct` different (topic, partition, offset) keys of `topics`."""
    seen = [0]

    def arrived() -> bool:
        table = read_sink(sink)
        rows = table.filter(pc.is_in(table["topic"], pa.array(topics)))
        seen[0] = rows.group_by(["topic", "partition", "offset"]).aggregate([]).num_rows
        return seen[0] >= distinct

    poll(f"{distinct} offsets of {', '.join(topics)} in {sink}", arrived, timeout=timeout, interval=1.0,
         last_seen=lambda: f"{seen[0]} offsets")  # fmt: skip


SETTLED_SECONDS = 3.0  # how long an output stays the same, across checkpoints, to have settled


def wait_until_settled(
    flink: FlinkRestClient,
    job_id: str,
    rows: Callable[[], int | tuple[int, ...]],
    what: str,
    timeout: float,
    trigger: bool = False,
) -> int:
    """Wait until checkpoints spanning SETTLED_SECONDS at least add no rows to an output (`rows()` counts them, or
    the rows of several outputs; `what` names it); the last checkpoint's id. With `trigger` each checkpoint is
    triggered here.

    Every offset being in the output is not the end of it: a second reader of the same partition (the twin of
    beam#31313) may still be catching up and emit the same offsets again a little later. One checkpoint interval
    without rows is not the end either: a reader between two fetches of its backlog can emit nothing for that long
    (a stock twin once did, mid-backlog, and the run was savepointed under it).
    """
    counted = [rows()]
    quiet_since = [time.monotonic()]

    def settled() -> int | None:
        checkpoint = checkpoint_after_now(flink, job_id, trigger)
        before, counted[0] = counted[0], rows()
        now = time.monotonic()
        if counted[0] != before:
            quiet_since[0] = now
            return None
        return checkpoint if now - quiet_since[0] >= SETTLED_SECONDS else None

    # a triggered checkpoint completes in a fraction of a second: not one after another for SETTLED_SECONDS
    interval = 0.5 if trigger else 0.0
    return poll(f"{what} to stop growing", settled, timeout=timeout, interval=interval,
                last_seen=lambda: f"{counted[0]} rows")  # fmt: skip


def checkpoint_after_now(flink: FlinkRestClient, job_id: str, trigger: bool = False) -> int:
    """Wait for a checkpoint triggered after this call (so it covers everything emitted so far): with `trigger`
    one this call triggers (REST, Flink 1.19+), else the job's next but one; its id."""
    if trigger:
        request = flink.trigger_checkpoint(job_id)
        return poll(
            f"the checkpoint triggered of Flink job {job_id}",
            lambda: flink.triggered_checkpoint(job_id, request),
            timeout=120.0,
            interval=0.1,
        )
    latest = flink.checkpoints(job_id).latest_completed
    # The latest completed one may have been triggered before the last rows; the one after the next is not.
    after = (latest.id if latest is not None else 0) + 1
    return flink.wait_for_checkpoint(job_id, after=after).id


@contextmanager
def own_stack(run_dir: Path, progress: Progress, keep: bool) -> Iterator[Stack]:
    """A stack of the run's own in `<run_dir>/stack`, up for the block and down after it (unless `keep`); a run
    directory that exists already is refused, so no run overwrites another's."""
    if run_dir.exists():
        raise UsageError(f"{run_dir} already exists; choose a new --workdir (nothing is overwritten)")
    with Stack(run_dir / "stack").running(progress, keep=keep) as stack:
        yield stack


def run_with_own_stack(
    run_dir: Path,
    jar: Path,
    variant: str,
    progress: Progress,
    settings: ScenarioSettings,
    keep_stack: bool,
) -> ScenarioReport:
    """Bring a stack up in `<run_dir>/stack`, run the scenario the settings ask for in `<run_dir>/<variant>`,
    bring the stack down."""
    with own_stack(run_dir, progress, keep_stack) as stack:
        return run_restore_scenario(stack, run_dir / variant, jar, variant, progress, settings)


def run_demo(run_dir: Path, progress: Progress, settings: ScenarioSettings, keep_stack: bool) -> DemoReport:
    """The scenario with the stock jar, then with the patched jar, on one stack in `<run_dir>/stack`; when the
    settings add partitions while the job is down, Beam 2.70.0's jar (the upstream fix, built by
    `splitaudit setup --matrix`) runs between them. Every jar is checked before the stack starts."""
    started = time.monotonic()
    stock_jar, patched_jar = pipeline_jar("stock"), pipeline_jar("patched")
    fixed_jar = pipeline_jar("stock", UPSTREAM_FIX_VERSION) if settings.added_partitions else None
    with own_stack(run_dir, progress, keep_stack) as stack:
        stock = run_restore_scenario(stack, run_dir / "stock", stock_jar, "stock", progress, settings)
        fixed = None
        if fixed_jar is not None:
            name = f"beam-{UPSTREAM_FIX_VERSION}"
            fixed = run_restore_scenario(stack, run_dir / name, fixed_jar, name, progress, settings)
        patched = run_restore_scenario(stack, run_dir / "patched", patched_jar, "patched", progress, settings)
    return DemoReport(str(run_dir), time.monotonic() - started, stock, patched, settings.added_partitions, fixed)
