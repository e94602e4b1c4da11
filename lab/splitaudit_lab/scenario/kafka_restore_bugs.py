"""The KafkaSource restore failures of issue 38 that Flink 1.19.3 and connector 3.3.0-1.19 can show, run for real
with the DataStream job of beam_pipelines/java/flink-jobs (`KafkaLineageJob`; the stack's build, or a release of
the matrix's, `splitaudit_lab.stack.kafka_matrix`), judged by `guard` before the restore, `watch` while the restored
job runs (`--on-error report`, `--kafka-topics` its subscription, `--bootstrap`) and `audit` after it
(docs/flink-kafka-jobs.md). Each run starts as `flink_kafka`'s do: a topic (or two),
N records, the job until they are in its sink and a checkpoint covers them, a savepoint SP0, cancel; then:

- `run_bounded_restore` (FLINK-31006): the job is bounded (`--boundedAt`, every partition stops at one offset
  above what SP0 holds); more records reach the stopping offsets (with partitions added while it is down, the
  new ones too); restored from SP0, the run waits a bounded time for the job to finish, records its state, then
  savepoints and cancels it if it still runs (a job that finished is audited from its sink and the topic alone);
- `run_removed_topic_restore` (FLINK-34089): the job reads two topics; N more records to each; restored from SP0
  with only the first topic in `--topic`;
- `run_recreated_topic_restore`: the topic is deleted and created again with as many partitions, and fewer
  records than SP0's offsets produced to it; restored from SP0;
- `run_starting_offsets_restore`: N more records; restored from SP0 with `--startingOffsets=latest`.

The truth of every run is the sink's rows per partition, split by the job that wrote them (`ReadRanges`): the
offsets the restored job read, as ranges, beside what the audit and the guard said.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow.compute as pc

from splitaudit.audit.checks.findings import Findings
from splitaudit.audit.request import AuditRequest
from splitaudit.clients import kafka as kafka_client
from splitaudit.clients.flink import RUN_TIMEOUT
from splitaudit.errors import ExternalError
from splitaudit.guard.kafka_restore import KafkaSourceJob
from splitaudit.guard.predict import run_guard
from splitaudit.guard.results import REPORT, GuardReport, WatchReport
from splitaudit.guard.watch import WatchSettings, run_watch
from splitaudit.polling import poll
from splitaudit.progress import Progress
from splitaudit_lab.scenario.flink_kafka import kafka_source_job
from splitaudit_lab.scenario.restore import (
    SAVEPOINT,
    ScenarioRun,
    ScenarioSettings,
    wait_for_offsets,
    wait_until_settled,
)
from splitaudit_lab.scenario.results import ScenarioReport
from splitaudit_lab.scenario.sink import read_sink
from splitaudit_lab.scenario.users_job_results import offset_runs
from splitaudit_lab.stack.stack import Stack

FINISHED = "FINISHED"
VARIANT = "kafka-source"  # the reports' variant, as flink_kafka's runs name theirs
RECREATED_FROM = 1_000_000  # the re-created topic's records are numbered from here: other keys and values

WATCH_LIMIT = 600.0  # seconds a watch follows a restored job at most (the runs cancel theirs within minutes)

Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class ReadRanges:
    """What one job wrote to the sink for one partition: rows, and the offsets as inclusive ranges."""

    topic: str
    partition: int
    rows: int
    offsets: Ranges


@dataclass(frozen=True)
class RestoreBugRun:
    """One run: the guard's verdict on the restore from SP0, the restored job's reads (the truth), the run's report
    (sink, savepoints, the sink's audit), the savepoints' audit, the watch's report of the restored job and, for a
    bounded run, its state after the wait."""

    guard: GuardReport
    restored_reads: tuple[ReadRanges, ...]  # the restored job's sink rows, per partition
    run: ScenarioReport
    savepoint_audit: Findings | None  # SP1 against SP0, with the restored job's subscription and --bootstrap
    watch: WatchReport  # `splitaudit watch --on-error report` of the restored job, from its submission to its end
    state_after_wait: str | None = None  # the restored job's state once the wait for it to finish ended
    waited: float = 0.0  # seconds waited for it to finish


def run_bounded_restore(
    stack: Stack,
    run_dir: Path,
    progress: Progress,
    settings: ScenarioSettings,
    finish_wait: float = 30.0,
    jar: Path | None = None,
) -> RestoreBugRun:
    """FLINK-31006: the bounded job (each partition stops at S = 2N/P) savepointed at N/P per partition; with
    `settings.added_partitions`, partitions added to the topic while it is down; then S more records to each
    partition (N when none is added: exactly up to S), and the job restored from SP0; wait up to `finish_wait` s
    for it to finish once its sink holds every offset below S of every partition."""
    jar = jar or kafka_source_job()
    run = ScenarioRun(stack, run_dir, "kafka-bounded", settings, progress)
    stop = 2 * settings.records // settings.partitions
    run.args.append(f"--boundedAt={stop}")
    job_before, savepoint_before = run.first_job(jar)
    partitions = settings.partitions + settings.added_partitions
    if settings.added_partitions:
        run.grow_topics(settings.added_partitions)
    more = settings.records if not settings.added_partitions else stop * partitions
    run.produce(more, what=f" more (every partition up to the stopping offset {stop})")
    guard = _guard(run, savepoint_before, jar, KafkaSourceJob(tuple(run.topics)))
    watcher = _Watcher(run, savepoint_before, tuple(run.topics))
    job_after, _ = run.restore(jar, savepoint_before, "restore the bounded job from the savepoint", watcher.job)
    started = time.monotonic()
    with run.steps.step(f"wait for the {stop * partitions} offsets below {stop} in the sink") as out:
        wait_for_offsets(run.sink, tuple(run.topics), stop * partitions, settings.timeout)
        out.append(f"{time.monotonic() - started:.1f} s")
    with run.steps.step(f"wait up to {finish_wait:g} s for the bounded job to finish") as out:
        waited_from = time.monotonic()
        state = _state_within(run, job_after, finish_wait)
        waited = time.monotonic() - waited_from
        out.append(f"{state} after {waited:.1f} s")
    # A finished job takes no savepoint: the audit then judges the sink against the topic alone.
    savepoint_after = savepoint_before if state == FINISHED else run.savepoint_and_cancel(job_after)
    watch = watcher.report()
    jobs, savepoints = (job_before, job_after), (savepoint_before, savepoint_after)
    report, savepoint_audit = _report(run, jar, jobs, savepoints, started, more, tuple(run.topics))
    return RestoreBugRun(guard, _reads(run, job_after), report, savepoint_audit, watch, state, waited)


def run_removed_topic_restore(
    stack: Stack, run_dir: Path, progress: Progress, settings: ScenarioSettings, jar: Path | None = None
) -> RestoreBugRun:
    """FLINK-34089: the job reads two topics (`settings.more_topics` gives the second), SP0, N more records to
    each, restored from SP0 subscribing to the first topic only."""
    jar = jar or kafka_source_job()
    run = ScenarioRun(stack, run_dir, "kafka-removed", settings, progress)
    job_before, savepoint_before = run.first_job(jar)
    run.produce(settings.records, what=" more")
    kept = next(iter(run.topics))
    run.args[:] = [f"--topic={kept}" if arg.startswith("--topic=") else arg for arg in run.args]
    guard = _guard(run, savepoint_before, jar, KafkaSourceJob((kept,)))
    watcher = _Watcher(run, savepoint_before, (kept,))
    job_after, _ = run.restore(jar, savepoint_before, f"restore from the savepoint reading {kept} only", watcher.job)
    started = time.monotonic()
    kept_records = sum(n for (topic, _), n in run.produced.items() if topic == kept)
    removed_first = sum(n for (topic, _), n in run.produced.items() if topic != kept) // 2
    run.wait_for_all(job_after, kept_records + removed_first, started, settings.records)
    savepoint_after = run.savepoint_and_cancel(job_after)
    watch = watcher.report()
    jobs, savepoints = (job_before, job_after), (savepoint_before, savepoint_after)
    report, savepoint_audit = _report(run, jar, jobs, savepoints, started, settings.records, (kept,))
    return RestoreBugRun(guard, _reads(run, job_after), report, savepoint_audit, watch)


def run_recreated_topic_restore(
    stack: Stack,
    run_dir: Path,
    progress: Progress,
    settings: ScenarioSettings,
    recreated_records: int,
    starting_offsets: str = "earliest",
    jar: Path | None = None,
) -> RestoreBugRun:
    """The topic deleted and created again (as many partitions) behind SP0, `recreated_records` produced to the
    new topic, restored from SP0 with `--startingOffsets=starting_offsets` (the job before it reads from earliest);
    the audit is told the new topic's records only (the old ones are gone)."""
    jar = jar or kafka_source_job()
    run = ScenarioRun(stack, run_dir, "kafka-recreated", settings, progress)
    job_before, savepoint_before = run.first_job(jar)
    ((topic, partitions),) = run.topics.items()
    with run.steps.step(f"delete {topic} and create it again ({partitions} partitions)") as out:
        _recreate(stack.kafka.bootstrap, topic, partitions)
        out.append("deleted and created")
    # The new log's offsets start at 0 again; its records are numbered apart from the old ones (other contents).
    run.produced = {}
    with run.steps.step(f"produce {recreated_records} records to the new {topic}") as out:
        sent = kafka_client.produce(stack.kafka.bootstrap, topic, partitions, recreated_records, start=RECREATED_FROM)
        run.count(topic, sent)
        out.append(", ".join(f"p{p}: {n}" for p, n in sent.items()))
    run.args.append(f"--startingOffsets={starting_offsets}")
    guard = _guard(run, savepoint_before, jar, KafkaSourceJob((topic,), starting_offsets))
    watcher = _Watcher(run, savepoint_before, (topic,))
    job_after, _ = run.restore(jar, savepoint_before, f"restore with --startingOffsets={starting_offsets}", watcher.job)
    started = time.monotonic()
    with run.steps.step(f"wait up to {settings.timeout:g} s for the new topic's records, until checkpoints add none"):
        arrived = _rows_within(run, settings.records + recreated_records, settings.timeout)
        wait_until_settled(run.flink, job_after, run.sink_rows, str(run.sink), settings.timeout)
    if not arrived:
        run.steps.progress.info("the restored job did not read every record of the new topic")
    savepoint_after = run.savepoint_and_cancel(job_after)
    watch = watcher.report()
    jobs, savepoints = (job_before, job_after), (savepoint_before, savepoint_after)
    report, savepoint_audit = _report(run, jar, jobs, savepoints, started, recreated_records, (topic,))
    return RestoreBugRun(guard, _reads(run, job_after), report, savepoint_audit, watch)


def run_starting_offsets_restore(
    stack: Stack, run_dir: Path, progress: Progress, settings: ScenarioSettings, jar: Path | None = None
) -> RestoreBugRun:
    """`setStartingOffsets` on restore: SP0 of the job reading from earliest, N more records, restored from SP0 with
    `--startingOffsets=latest`."""
    jar = jar or kafka_source_job()
    run = ScenarioRun(stack, run_dir, "kafka-starting", settings, progress)
    job_before, savepoint_before = run.first_job(jar)
    run.produce(settings.records, what=" more")
    run.args.append("--startingOffsets=latest")
    guard = _guard(run, savepoint_before, jar, KafkaSourceJob(tuple(run.topics), "latest"))
    watcher = _Watcher(run, savepoint_before, tuple(run.topics))
    job_after, _ = run.restore(jar, savepoint_before, "restore with --startingOffsets=latest", watcher.job)
    started = time.monotonic()
    run.wait_for_all(job_after, run.total, started, settings.records)
    savepoint_after = run.savepoint_and_cancel(job_after)
    watch = watcher.report()
    jobs, savepoints = (job_before, job_after), (savepoint_before, savepoint_after)
    report, savepoint_audit = _report(run, jar, jobs, savepoints, started, settings.records, tuple(run.topics))
    return RestoreBugRun(guard, _reads(run, job_after), report, savepoint_audit, watch)


class _Watcher:
    """`splitaudit watch` (`--on-error report`, `--bootstrap` the stack's, `--kafka-topics` the restored job's
    subscription) of the job to be restored from `savepoint` as `job`, in a thread from before its submission to
    its end (or `WATCH_LIMIT` seconds after it is listed, should the run fail before it cancels the job)."""

    def __init__(self, run: ScenarioRun, savepoint: str, subscription: tuple[str, ...]) -> None:
        self.job = uuid.uuid4().hex
        self.steps = run.steps
        settings = WatchSettings(
            run.stack.flink.rest_url,
            self.job,
            run.stack.kafka.bootstrap,
            REPORT,
            duration=WATCH_LIMIT,
            savepoint=savepoint,
            wait=RUN_TIMEOUT,
            kafka_topics=subscription,
        )
        self.result: list[WatchReport] = []
        self.thread = threading.Thread(
            target=lambda: self.result.append(run_watch(settings, Progress(), lambda _event: None)), daemon=True
        )
        self.thread.start()

    def report(self) -> WatchReport:
        """The watch's report once the job has ended."""
        with self.steps.step(f"the watch of job {self.job}") as out:
            self.thread.join(WATCH_LIMIT + RUN_TIMEOUT)
            if not self.result:
                raise ExternalError(f"the watch of job {self.job} ended without a report")
            out.append(self.result[0].line)
        return self.result[0]


def _guard(run: ScenarioRun, savepoint: str, jar: Path, job: KafkaSourceJob) -> GuardReport:
    """`splitaudit guard` on restoring `savepoint` into `jar`'s job as `job` describes it, `--bootstrap` the
    stack's."""
    bootstrap = run.stack.kafka.bootstrap
    with run.steps.step(f"guard a restore of {savepoint} with --bootstrap {bootstrap}") as out:
        guard = run_guard(savepoint, jar, bootstrap, None, run.steps.progress, kafka_job=job)
        out.append(guard.line)
    return guard


def _state_within(run: ScenarioRun, job: str, seconds: float) -> str:
    """The job's state once it finished, or after `seconds` (then whatever it is)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = run.flink.job_state(job)
        if state in (FINISHED, "FAILED", "CANCELED"):
            return state
        time.sleep(1.0)
    return run.flink.job_state(job)


def _recreate(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> None:
    """Delete `topic` and create it again with `partitions` partitions once the broker has let it go."""
    client = kafka_client.admin(bootstrap)
    client.delete_topics([topic])[topic].result(timeout)

    def created() -> bool:
        try:
            kafka_client.create_topic(bootstrap, topic, partitions)
        except Exception as ex:  # marked for deletion, or still listed: try again
            if "exist" in str(ex) or "deletion" in str(ex):
                return False
            raise ExternalError(f"cannot create {topic} again: {ex}") from ex
        return True

    poll(f"{topic} to be created again", created, timeout=timeout, interval=1.0)


def _rows_within(run: ScenarioRun, rows: int, seconds: float) -> bool:
    """Whether the sink holds `rows` rows within `seconds`."""
    deadline = time.monotonic() + seconds
    while run.sink_rows() < rows:
        if time.monotonic() >= deadline:
            return False
        time.sleep(1.0)
    return True


def _report(
    run: ScenarioRun,
    jar: Path,
    jobs: tuple[str, str],
    savepoints: tuple[str, str],
    started: float,
    records: int,
    subscription: tuple[str, ...],
) -> tuple[ScenarioReport, Findings | None]:
    """The run's report and audit of `jar`'s job (`records` read since the monotonic time `started`), and the
    savepoint-only audit of the restore (None when the job finished and took no savepoint after it) with what the
    sink's audit is not given: the restored job's `--subscription` and the stack's `--bootstrap`."""
    rate = records / (time.monotonic() - started)
    finished = savepoints[0] == savepoints[1]  # the restored job finished: no savepoint after the restore
    report = run.report(VARIANT, SAVEPOINT, jar, jobs, savepoints, rate, finished)
    if finished:
        return report, None
    from splitaudit.audit.run import run_audit  # imports pyspark: not when the lab merely starts

    request = AuditRequest(
        savepoint=savepoints[1], before=savepoints[0], subscription=subscription, bootstrap=run.stack.kafka.bootstrap
    )
    with run.steps.step("audit the savepoints with --subscription and --bootstrap") as out:
        findings = run_audit(request, run.steps.progress)
        out.append(f"{len(findings.findings)} findings")
    return report, findings


def _reads(run: ScenarioRun, job: str) -> tuple[ReadRanges, ...]:
    """The sink rows job `job` wrote, per (topic, partition), with their offsets as ranges."""
    table = read_sink(run.sink)
    rows = table.filter(pc.equal(table["job_id"], job))
    per: dict[tuple[str, int], list[int]] = {}
    for topic, partition, offset in zip(
        rows["topic"].to_pylist(), rows["partition"].to_pylist(), rows["offset"].to_pylist(), strict=True
    ):
        per.setdefault((topic, partition), []).append(offset)
    return tuple(
        ReadRanges(topic, partition, len(offsets), offset_runs(offsets))
        for (topic, partition), offsets in sorted(per.items())
    )
