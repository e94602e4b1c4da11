"""`splitaudit watch`: follow a restored (or any running) Beam-on-Flink job live and stop it when it reads a
partition twice.

What a restored job's savepoint cannot show (the stock restored job snapshots one reader per split index, so its
checkpoints look clean) its live metrics do. Each poll reads, through Flink's REST API, the source vertex's
per-subtask metrics, and with `--bootstrap` the topic's offsets:

- `partition_read_twice`: Beam's KafkaIO reader registers a metric per topic partition it reads
  (`KafkaIOReader_rawSize/<topic>-<partition>`); one partition's metric on two subtasks is two readers.
- `read_more_than_available`: a partition's readers (that metric is a distribution with one count per record)
  read more records than the partition holds past the offset the job restored it from (its `latest.restored`
  savepoint, read with the pure-Python reader): only a second read can read more than there is. The stock
  restored job puts the twin reader on the same subtask as the restored one, so this is the signal that
  catches it.
- `read_more_than_advanced`: a partition's readers had read more records, by a poll, than the next offset of a
  checkpoint the job took after that poll is past the restored offset. One reader from the restored offset
  cannot have read more than it advanced; twin readers read about twice that, so this fires as soon as the twin
  has read more than what one reader reads between the poll and the checkpoint, long before the partition's
  backlog is used up (the checkpoint is read with the pure-Python reader; the snapshot itself holds one reader
  per split index, so it hides the twin).
- `expired_unread`: the audit's offset check against the restored offsets (the log starts above them).

A job reading with Flink's own KafkaSource has none of Beam's metrics: the same polls read the connector's
per-partition positions, judged by `kafka_source.py`, whose source vertex is found by the savepoint's split state;
its final tally is in positions (`guard/positions.py`), not counts.

The watch can start before the job exists: given the job id it waits for Flink to list it, given only the
savepoint it follows the job Flink says restored from it. `judging.py` is the pure part (`judge_sample`,
`judge_checkpoint`); `run_watch` here polls and acts (stop-with-savepoint, cancel or report).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from splitaudit.audit.checks.findings import ERROR, EXPIRED_UNREAD, Finding
from splitaudit.audit.checks.offsets import check_offsets
from splitaudit.audit.checks.savepoint_tables import savepoint_tables
from splitaudit.clients.flink import (
    TERMINAL_STATES,
    CheckpointRef,
    FlinkRestClient,
    FlinkRestError,
    FlinkUnreachableError,
)
from splitaudit.clients.kafka import PartitionOffsets, topics_offsets
from splitaudit.errors import ExternalError, UsageError
from splitaudit.guard.lifecycle import (
    CANCELLING,
    DEFAULT_REST_TIMEOUT,
    ENDED,
    RESTARTING,
    RUNNING,
    SUSPENDED,
    ends_watch,
    request_timeout,
)
from splitaudit.guard.positions import PartitionPositions
from splitaudit.guard.results import (
    ACTIONS,
    CANCEL,
    STOP,
    JobEnd,
    WatchEvent,
    WatchReport,
    WatchTimeline,
)
from splitaudit.guard.tally import (
    Key,
    PartitionTally,
)
from splitaudit.guard.watch.attempts import AttemptTracker, summed
from splitaudit.guard.watch.checkpoints import (
    CheckpointJudge,
)
from splitaudit.guard.watch.judging import (
    READ_MORE_THAN_AVAILABLE,
    READ_TWICE,
    SOURCE_METRICS,
    SubtaskSample,
    judge_sample,
    subtask_sample,
)
from splitaudit.guard.watch.kafka_restore import KafkaRestoreWatch, resets_unread, without_reset_tallies
from splitaudit.guard.watch.kafka_source import (
    KafkaSourceReaders,
    dropped,
    judge_positions,
    not_read,
    source_vertex,
    split_operators,
    wanted,
)
from splitaudit.guard.watch.rest import WAIT_INTERVAL, JobRest
from splitaudit.progress import Progress
from splitaudit.savepoint.fileio import local_file_uri_path


@dataclass(frozen=True)
class WatchSettings:
    """What `splitaudit watch` follows and what it does on an error; refused when made if it names no job to follow
    or an action the watch does not know (a UsageError, exit 2)."""

    flink_rest: str
    job: str | None  # None: the job Flink says restored from `savepoint`, once it is listed
    bootstrap: str | None = None
    on_error: str = STOP
    interval: float = 0.25  # seconds between polls
    duration: float | None = None  # seconds to watch once the job is listed (None: until the job ends)
    savepoint_dir: str | None = None  # target of stop-with-savepoint (None: the cluster's default)
    savepoint: str | None = None  # what the job restores from: read before the job exists, so no poll waits for it
    wait: float = 0.0  # seconds to wait for the job to be listed (0: it must be already)
    # Seconds from the job's first records read during which each poll's counts are proven at once by a checkpoint
    # the watch triggers after it (Flink 1.19+), instead of waiting for the job's next one (0: never).
    probe: float = 0.0
    rest_timeout: float = DEFAULT_REST_TIMEOUT  # seconds one failing REST call is retried before it is classified
    kafka_topics: tuple[str, ...] | None = None  # a KafkaSource's subscription after the restore (None: not told)

    def __post_init__(self) -> None:
        if self.on_error not in ACTIONS:
            raise UsageError(f"--on-error must be one of {', '.join(ACTIONS)}, not {self.on_error!r}")
        if self.job is None and self.savepoint is None:
            raise UsageError("watch needs --job, or --savepoint to follow the job restored from it")


@dataclass
class _Watch:
    """The state of one watch between polls."""

    settings: WatchSettings
    flink: FlinkRestClient
    progress: Progress
    emit: Callable[[WatchEvent], None]
    rest: JobRest = field(init=False)  # how Flink's REST API is asked (retries, the job's phase and end)
    start: float = field(default_factory=time.monotonic)
    restored: CheckpointRef | None = None
    events: list[WatchEvent] = field(default_factory=list)
    latest: dict[tuple[str, str | None, int | None], Finding] = field(default_factory=dict)
    checkpoints: CheckpointJudge = field(default_factory=CheckpointJudge)  # what its checkpoints prove of the polls
    tracker: AttemptTracker = field(init=False)  # the job's attempts: their starts, counts and tally
    marks: dict[str, float] = field(default_factory=dict)
    highly_available: bool = False  # the cluster recovers a suspended job (a JobManager failover)
    sources: tuple[str, ...] = ()  # the savepoint's source operators (those holding Kafka splits)
    readers: KafkaSourceReaders = field(default_factory=KafkaSourceReaders)  # a KafkaSource's per-partition gauges
    restore_failures: KafkaRestoreWatch = field(default_factory=KafkaRestoreWatch)  # kafka_restore's judgments

    def __post_init__(self) -> None:
        self.rest = JobRest(self.flink, self.settings.rest_timeout)
        self.tracker = AttemptTracker(
            self.checkpoints, self.now, self.kafka_offsets, self.settings.bootstrap is not None
        )

    def now(self) -> float:
        return round(time.monotonic() - self.start, 3)

    def configured(self) -> None:
        """Read what the watch needs of the JobManager's configuration (`JobRest.configured`)."""
        self.tracker.quiet, self.highly_available = self.rest.configured()

    def mark(self, stage: str) -> None:
        self.marks.setdefault(stage, self.now())

    def report(self, findings: list[Finding]) -> bool:
        """Emit the findings not seen before and those whose figure grew (an update of the earlier one); whether
        a new one is an error."""
        error = False
        for finding in findings:
            key = (finding.kind, finding.topic, finding.partition)
            before = self.latest.get(key)
            if before is not None and (finding.count or 0) <= (before.count or 0):
                continue
            error |= before is None and finding.severity == ERROR
            self.latest[key] = finding
            event = WatchEvent(self.now(), finding)
            self.events.append(event)
            self.emit(event)
        return error

    def sample(self, job: str, source: Mapping[str, Any]) -> tuple[SubtaskSample, ...] | None:
        """Every source subtask's per-partition counts; None when the job's metrics are no longer served (it is
        ending: the next look at its state says how)."""
        try:
            metrics = [
                self.rest.ask(
                    f"GET /jobs/{job}/vertices/{source['id']}/subtasks/{i}/metrics",
                    lambda i=i: self.flink.subtask_metrics(job, source["id"], i, SOURCE_METRICS, wanted),  # type: ignore[misc]
                )
                for i in range(int(source["parallelism"]))
            ]
        except (FlinkRestError, FlinkUnreachableError):
            return None
        self.readers.polled(metrics)
        return tuple(subtask_sample(i, m, self.topics) for i, m in enumerate(metrics))

    def judge_readers(self) -> bool:
        """Judge a KafkaSource's per-partition gauges of the last poll (`kafka_source.judge_positions`) against the
        offsets the job restored, in its first attempt only: after a restart Flink serves the dead attempt's
        numRecordsOut until the new one reports, which no offset can be judged against. Whether an error was
        found."""
        start = None if self.tracker.attempts else self.tracker.resume
        findings = judge_positions(self.readers.samples, start, self.tracker.offsets)
        if start is not None:
            findings = self.restore_failures.judge(
                findings, self.readers.samples, start, self.tracker.offsets, self.now()
            )
        return self.report(findings)

    def source_restored(self, job: str, source: Mapping[str, Any]) -> bool:
        """Whether the savepoint's sources are no vertex of the job (their splits dropped): an error finding."""
        if not self.sources or source.get("id") in self.sources:
            return False
        return self.report([dropped(self.sources, source, job)])

    @property
    def topics(self) -> frozenset[str]:
        """The topics the job restored, and those a KafkaSource's readers hold (all, for a job not restored)."""
        return frozenset(topic for topic, _ in (*self.tracker.resume, *self.readers.held))

    def kafka_offsets(self) -> dict[Key, PartitionOffsets]:
        if self.settings.bootstrap is None:
            return {}
        return topics_offsets(self.settings.bootstrap, sorted(self.topics))

    def resumed_from(self, location: str) -> bool:
        """Take the offsets the job resumes from (`location`'s) and check them against the log start."""
        if not self.tracker.resume:
            with self.progress.step(f"read the restored savepoint {location}"):
                tables = savepoint_tables(location)
                self.tracker.resume, self.sources = tables.resume_offsets, split_operators(tables)
                self.restore_failures = KafkaRestoreWatch.of(tables, self.settings.kafka_topics)
        self.tracker.offsets = self.kafka_offsets()
        expired = check_offsets(self.tracker.offsets, self.tracker.resume, {}, None)
        return self.report([f for f in expired if f.kind == EXPIRED_UNREAD])

    def await_job(self) -> tuple[str, dict[str, Any]]:
        """Wait (up to `wait` seconds) until Flink lists the job with its vertices; its id and source vertex."""
        settings = self.settings
        deadline = time.monotonic() + settings.wait
        while True:
            for job, document in self._listed():
                vertices = document.get("vertices", [])
                # By the savepoint's state first (a SQL job's operators have no uids), else by name.
                restored = source_vertex(vertices, self.sources)
                sources = [v for v in vertices if str(v.get("name", "")).startswith("Source:")]
                if vertices and not sources and restored is None:
                    raise UsageError(f"job {job} at {settings.flink_rest} has no source vertex to watch")
                if restored is not None or sources:
                    return job, dict(restored or sources[0])
            if time.monotonic() >= deadline:
                what = f"job {settings.job}" if settings.job else f"a job restored from {settings.savepoint}"
                raise ExternalError(f"no {what} at {settings.flink_rest} within {settings.wait:g} s")
            time.sleep(WAIT_INTERVAL)

    def _listed(self) -> list[tuple[str, dict[str, Any]]]:
        """The jobs that may be the one to watch, with their details: the named one once Flink knows it, else
        each unfinished job that restored from the savepoint."""
        # The overview, not the job's own page: asking for a job Flink does not know yet logs an error on the
        # JobManager at every poll.
        jobs = self.rest.ask("GET /jobs/overview", self.flink.jobs)
        if self.settings.job is not None:
            named = any(str(job.get("jid")) == self.settings.job for job in jobs)
            return [(self.settings.job, self.flink.job(self.settings.job))] if named else []
        found = []
        for job in jobs:
            jid = str(job.get("jid"))
            if job.get("state") in TERMINAL_STATES:
                continue
            try:
                restored = self.flink.checkpoints(jid).latest_restored
            except FlinkRestError:  # still initialising: no checkpoint statistics yet
                continue
            if restored is not None and _same_location(restored.external_path, self.settings.savepoint):
                self.restored = restored
                found.append((jid, self.flink.job(jid)))
        return found

    def restored_from(self, job: str, restored: CheckpointRef | None) -> bool:
        """Note what the job restored from once Flink says so (checked against `savepoint`); whether that
        raised an error finding."""
        if self.restored is not None or restored is None:
            return False
        expected = self.settings.savepoint
        if expected is not None and not _same_location(restored.external_path, expected):
            raise ExternalError(f"job {job} restored from {restored.external_path}, not from {expected}")
        self.restored, self.tracker.restored_id = restored, restored.id
        return bool(restored.external_path) and self.resumed_from(str(restored.external_path))

    def judge(self, samples: tuple[SubtaskSample, ...], history: tuple[CheckpointRef, ...]) -> bool:
        """Judge one poll's samples, and the oldest polls a checkpoint taken after them can prove; whether an
        error was found."""
        findings = judge_sample(samples, self.tracker.resume, self.tracker.offsets)
        if any(f.kind == READ_MORE_THAN_AVAILABLE for f in findings):
            # The end offsets so far may be old: a finding stands only against offsets newer than the counts.
            self.tracker.offsets = self.kafka_offsets()
            findings = judge_sample(samples, self.tracker.resume, self.tracker.offsets)
        findings += self.checkpoints.judge(history, self.tracker.resume)
        read = summed(samples)
        if any(read.values()):
            self.mark("read")
            self.checkpoints.polled(read)
        return self.report(findings)

    def probe(self, job: str) -> bool:
        """Within `probe` seconds of the first read: judge the poll the last triggered checkpoint followed once it
        completed, and trigger one after the newest poll when none runs; whether an error was found."""
        error = self.report(self.checkpoints.probed(self.flink, job, self.tracker.resume))
        first_read = self.marks.get("read")
        probing = first_read is not None and self.now() - first_read <= self.settings.probe
        if not error and probing:
            self.checkpoints.trigger(self.flink, job)
        return error


def run_watch(settings: WatchSettings, progress: Progress, emit: Callable[[WatchEvent], None]) -> WatchReport:
    """Wait for the job and poll it until it ends, `duration` passes or an error finding is acted on; `emit` each
    finding as it is found or its figure grows (the CLI writes it as a JSON line), the final tally's last."""
    flink = FlinkRestClient(settings.flink_rest, timeout=request_timeout(settings.rest_timeout))
    watch = _Watch(settings, flink, progress, emit)
    error, acts = False, settings.on_error in (STOP, CANCEL)
    if settings.savepoint is not None:
        error = watch.resumed_from(settings.savepoint)
    with progress.step(f"wait for job {settings.job or 'restored from the savepoint'}"):
        job, source = watch.await_job()
    watch.mark("listed")
    error |= watch.source_restored(job, source)
    watch.configured()
    listed = time.monotonic()
    polls, phase = 0, RUNNING
    suspended: float | None = None  # since when the job has been suspended (monotonic)
    while not (error and acts):
        phase, document = watch.rest.phase(job)
        suspended = (suspended or time.monotonic()) if phase == SUSPENDED else None
        recoverable = suspended is not None and time.monotonic() - suspended < settings.rest_timeout
        if ends_watch(phase, watch.highly_available and recoverable) or (
            settings.duration is not None and time.monotonic() - listed >= settings.duration
        ):
            break
        if phase in (RESTARTING, CANCELLING, SUSPENDED):  # suspended here: a failover, the job recovered next
            tracker = watch.tracker
            if phase != CANCELLING and tracker.last is not None:
                tracker.restarted(
                    f"attempt {len(tracker.attempts)} was {'suspended' if phase == SUSPENDED else 'restarted'} at "
                    f"{watch.now():g} s while its readers were reading: what they read after its last poll is not "
                    "counted"
                )
            time.sleep(settings.interval)
            continue
        vertices = document.get("vertices", [])
        if vertices and all(v.get("status") == "RUNNING" for v in vertices):
            watch.mark("running")
        source = watch.tracker.follow(document, source)
        try:
            checkpoints = watch.rest.ask(f"GET /jobs/{job}/checkpoints", lambda: flink.checkpoints(job))
        except (FlinkRestError, FlinkUnreachableError):  # still initialising, or ending: the next look says
            checkpoints = None
        if checkpoints is not None:
            error |= watch.restored_from(job, checkpoints.latest_restored)
            watch.tracker.restart_point(checkpoints.latest_restored, checkpoints.history)
        samples = watch.sample(job, source)
        if samples is None:  # its metrics are gone (the job is ending, the next look says how) or not there yet
            time.sleep(settings.interval)
            continue
        polls += 1
        samples = watch.tracker.counted(samples)
        error |= watch.judge(samples, checkpoints.history if checkpoints is not None else ())
        error |= watch.judge_readers()
        if settings.probe and not error:
            error |= watch.probe(job)
        time.sleep(settings.interval)
    action, savepoint = "none", None
    if error:
        watch.mark("finding")
        action = settings.on_error
    if error and acts and phase not in ENDED:
        what = f"stop job {job} with a savepoint" if action == STOP else f"cancel job {job}"
        with progress.step(what):
            if action == STOP:
                request = flink.stop_with_savepoint(job, settings.savepoint_dir)
                savepoint = watch.rest.ask(
                    f"GET /jobs/{job}/savepoints", lambda: flink.wait_for_savepoint(job, request)
                )
            else:
                flink.cancel(job)
            # The savepoint completes before the job reaches FINISHED: report the state it ends in.
            phase = watch.rest.await_end(job)
        watch.mark("ended")
    # A KafkaSource's end: the topics' offsets read once, for its last judgments and its tally in positions.
    offsets = watch.kafka_offsets() if watch.readers.seen else {}
    if watch.readers.seen and not (error and acts):  # a KafkaSource followed to its end or the watch's
        watch.report(not_read(frozenset(watch.readers.held), watch.tracker.resume, offsets))
        watch.report(resets_unread(watch.readers.last_read, watch.tracker.resume, offsets))
    stopped = "the job ended" if phase in ENDED else "the watch ended"
    tallied = watch.tracker.final_tally(
        f"its counts changed within the last {watch.tracker.quiet:g} s before {stopped}: what its readers read after "
        "the last poll is not counted"
    )
    positions: tuple[PartitionPositions, ...] = ()
    if watch.readers.seen:  # a KafkaSource: positions, not Beam's counts (needs --bootstrap, as the counts do)
        tallied = ()
        if settings.bootstrap is not None:
            positions = watch.readers.positions(watch.tracker.resume, watch.latest.values(), offsets)
    twice = [_read_twice(t) for t in tallied if t.read_twice]
    watch.report(without_reset_tallies(twice, watch.tracker.resume, watch.tracker.offsets))
    restored = watch.restored
    return WatchReport(
        job=job,
        restored_from=settings.savepoint if restored is None else restored.external_path,
        polls=polls,
        seconds=watch.now(),
        events=tuple(watch.events),
        action=action,
        savepoint=savepoint,
        end=JobEnd(phase, watch.rest.state, watch.rest.ending(job, phase)),
        timeline=WatchTimeline(**watch.marks),
        tally=tallied,
        rest_faults=tuple(watch.rest.faults.values()),
        attempts=tuple(watch.tracker.begun),
        positions=positions,
    )


def _read_twice(tallied: PartitionTally) -> Finding:
    """The final tally of a partition read twice, as a finding."""
    figure = "exactly" if tallied.exact else "at least"
    why = "" if tallied.exact else f" (a lower bound: {tallied.why})"
    detail = f"{figure} {tallied.read_twice} of the {tallied.read} records its readers read were read twice{why}"
    return Finding(READ_TWICE, ERROR, tallied.topic, tallied.partition, tallied.read_twice, detail=detail)


def _same_location(path: str | None, other: str | None) -> bool:
    """Whether two spellings name one savepoint: Flink reports `file:/x` for the `/x` or `file:///x/` it was given."""

    def plain(location: str) -> str:
        local = local_file_uri_path(location)
        return (location if local is None else local).rstrip("/")

    return path is not None and other is not None and plain(path) == plain(other)
