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
per-partition positions, judged by `kafka_source.py`, whose source vertex is found by the savepoint's split state.

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
    RESTART,
    RESTARTING,
    RESTORED,
    RUNNING,
    SUSPENDED,
    ends_watch,
    new_attempt_cause,
    request_timeout,
)
from splitaudit.guard.results import (
    ACTIONS,
    CANCEL,
    STOP,
    JobEnd,
    WatchAttempt,
    WatchEvent,
    WatchReport,
    WatchTimeline,
)
from splitaudit.guard.tally import (
    AttemptReads,
    Key,
    PartitionTally,
    SteadySpan,
    kept,
    spans_since,
    spans_with,
    steady_since,
    tally,
)
from splitaudit.guard.watch.checkpoints import (
    CLOCK_MARGIN,
    CheckpointJudge,
    checkpoint_offsets,
)
from splitaudit.guard.watch.judging import (
    READ_MORE_THAN_AVAILABLE,
    READ_TWICE,
    SOURCE_METRICS,
    SubtaskSample,
    fresh_sample,
    judge_sample,
    subtask_sample,
)
from splitaudit.guard.watch.kafka_source import (
    KafkaSourceReaders,
    dropped,
    judge_positions,
    not_read,
    source_vertex,
    split_operators,
    wanted,
)
from splitaudit.guard.watch.rest import SHORTEST_QUIET, WAIT_INTERVAL, JobRest
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
    resume: dict[Key, int] = field(default_factory=dict)
    restored: CheckpointRef | None = None
    offsets: dict[Key, PartitionOffsets] = field(default_factory=dict)
    events: list[WatchEvent] = field(default_factory=list)
    latest: dict[tuple[str, str | None, int | None], Finding] = field(default_factory=dict)
    checkpoints: CheckpointJudge = field(default_factory=CheckpointJudge)  # what its checkpoints prove of the polls
    marks: dict[str, float] = field(default_factory=dict)
    # The attempts ended so far (restarts), and the current one's start, last counts and since when they are steady.
    attempts: list[AttemptReads] = field(default_factory=list)
    attempt_start: dict[Key, int] | None = None  # a restart's start offsets (None: not known yet)
    restored_id: int | None = None  # the checkpoint id the current attempt restored from, per Flink
    restored_start: dict[Key, int] | None = None  # that checkpoint's offsets (None: the savepoint's, `resume`)
    # The current attempt's polls, span by span of the same counts, since shortly before the newest checkpoint; and
    # those of the attempt that ended last, until the checkpoint its restart resumed from is known (None: none).
    spans: tuple[SteadySpan, ...] = ()
    ended_spans: tuple[SteadySpan, ...] | None = None
    restart_floor: int = 0  # the lowest checkpoint id the current restart can have restored
    samples: tuple[SubtaskSample, ...] = ()  # the current attempt's samples at its last poll, as Flink served them
    closed: dict[int, SubtaskSample] = field(default_factory=dict)  # per subtask the last sample of the attempt before
    last: Mapping[Key, int] | None = None  # the current attempt's counts at its last poll
    last_at: float = 0.0  # monotonic time of that poll
    steady: float | None = None  # monotonic time since which the counts are `last`
    ends: dict[Key, int] = field(default_factory=dict)  # end offsets taken while the counts were steady
    ends_at: float | None = None  # monotonic time they were taken
    quiet: float = SHORTEST_QUIET  # seconds counts must be steady to be final
    highly_available: bool = False  # the cluster recovers a suspended job (a JobManager failover)
    begun: list[WatchAttempt] = field(default_factory=list)  # each attempt seen running, and why it began
    began: tuple[int, int] | None = None  # the running job's start time and source parallelism at the last poll
    awaiting: bool = False  # an attempt ended and the next one has not been seen running yet
    sources: tuple[str, ...] = ()  # the savepoint's source operators (those holding Kafka splits)
    readers: KafkaSourceReaders = field(default_factory=KafkaSourceReaders)  # a KafkaSource's per-partition gauges

    def __post_init__(self) -> None:
        self.rest = JobRest(self.flink, self.settings.rest_timeout)

    def now(self) -> float:
        return round(time.monotonic() - self.start, 3)

    def configured(self) -> None:
        """Read what the watch needs of the JobManager's configuration (`JobRest.configured`)."""
        self.quiet, self.highly_available = self.rest.configured()

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

    def follow(self, document: Mapping[str, Any], source: dict[str, Any]) -> dict[str, Any]:
        """The source vertex as the running job has it now (GET /jobs/:id: a rescale changes its parallelism, so
        the subtasks to poll), and each attempt noted once it runs, with why it began. A rescale or a failover
        that came between two polls ends the attempt before it here: its last counts go to the tally."""
        vertex = next((v for v in document.get("vertices", []) if v.get("id") == source["id"]), None)
        if vertex is None or document.get("state") != "RUNNING":
            return source
        now = (int(document.get("start-time") or 0), int(vertex["parallelism"]))
        cause = RESTORED if self.began is None else new_attempt_cause(self.began, now)
        if self.began is not None and cause is not None and not self.awaiting:
            self.restarted(
                f"a {cause} at {self.now():g} s came between two polls: what its readers read after the last one is "
                "not counted"
            )
        if self.began is None or self.awaiting:
            self.begun.append(WatchAttempt(len(self.attempts), self.now(), cause or RESTART, now[1]))
            self.awaiting = False
        self.began = now
        return dict(vertex)

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
        start = None if self.attempts else self.resume
        return self.report(judge_positions(self.readers.samples, start, self.offsets))

    def source_restored(self, job: str, source: Mapping[str, Any]) -> bool:
        """Whether the savepoint's sources are no vertex of the job (their splits dropped): an error finding."""
        if not self.sources or source.get("id") in self.sources:
            return False
        return self.report([dropped(self.sources, source, job)])

    def counted(self, samples: tuple[SubtaskSample, ...]) -> tuple[SubtaskSample, ...]:
        """Note a poll's counts for the tally, without those a restart's new attempt has not reported yet
        (`fresh_sample`); the samples so cleaned. A drop is a restart of the job missed between polls; counts
        steady since the last end offsets were taken get new ones, which the tally judges them against."""
        raw = samples
        samples = tuple(fresh_sample(sample, self.closed.get(sample.subtask)) for sample in raw)
        read = _summed(samples)
        if self.last is not None and any(read.get(key, 0) < count for key, count in self.last.items()):
            self.restarted(f"its counts dropped between two polls at {self.now():g} s: a restart")
            samples = tuple(fresh_sample(sample, self.closed.get(sample.subtask)) for sample in raw)
            read = _summed(samples)
        self.samples = raw
        self.spans = spans_since(
            spans_with(self.spans, read, time.time()), self.checkpoints.newest_trigger - CLOCK_MARGIN
        )
        at = time.monotonic()
        self.steady = steady_since(self.steady, self.last, read, at)
        self.last, self.last_at = read, at
        if self.settings.bootstrap is not None and self.steady < at and (self.ends_at or 0) <= self.steady:
            self.ends = {key: offsets.end for key, offsets in self.kafka_offsets().items()}
            self.ends_at = time.monotonic()
        return samples

    def restarted(self, why: str) -> None:
        """Close the current attempt (the job is restarting): its last counts go to the tally."""
        self.ended_spans = None
        if self.last is not None and any(self.last.values()):
            self.attempts.append(self.attempt_reads(why))
            self.closed = {sample.subtask: sample for sample in self.samples}
            self.ended_spans = self.spans
        self.spans = ()
        self.restart_floor = max(self.checkpoints.newest_completed, self.restored_id or 0)
        self.samples, self.last, self.steady, self.ends, self.ends_at = (), None, None, {}, None
        self.checkpoints.restarted()
        self.attempt_start, self.awaiting = None, True

    def attempt_reads(self, why: str) -> AttemptReads:
        """The current attempt's last counts, final when they had been steady for `quiet` seconds with the end
        offsets taken meanwhile."""
        steady, ends_at = self.steady, self.ends_at
        final = steady is not None and ends_at is not None and ends_at >= steady and self.last_at - steady >= self.quiet
        ends = self.ends if final else {key: offsets.end for key, offsets in self.kafka_offsets().items()}
        if self.attempts:  # a restart: from its checkpoint's offsets (unknown: none, and the tally says so)
            start = self.attempt_start or {}
        else:  # the restored run: from the restored offsets, a partition the savepoint lacks from its log start
            start = {key: self.resume.get(key, offsets.log_start) for key, offsets in self.offsets.items()}
            start |= self.resume
        read = dict(self.last or {})
        return AttemptReads(len(self.attempts), start, read, ends, final, None if final else why)

    def restart_point(self, restored: CheckpointRef | None, history: tuple[CheckpointRef, ...] = ()) -> None:
        """The offsets a restarted attempt starts from: the checkpoint Flink says it restored, or, when it restored
        what the attempt before it restored (the savepoint, or the same checkpoint: no newer one completed between),
        that attempt's start. Flink restores the newest completed
        checkpoint, so a restored id below the newest one completed before the restart is the statistics' cached
        answer from before it: wait. The attempt that ended is then tallied up to that checkpoint (`history`: the
        checkpoint statistics, which say when it was triggered and completed)."""
        if not self.attempts or self.attempt_start is not None or restored is None:
            return
        if restored.id < self.restart_floor:  # Flink's statistics still name what the attempt before restored
            return
        again = restored.id == self.restored_id  # what the attempt that ended restored: nothing it read is kept
        if again:
            self.attempt_start = dict(self.resume if self.restored_start is None else self.restored_start)
        elif restored.id in self.checkpoints.checkpointed:
            self.attempt_start = dict(self.checkpoints.checkpointed[restored.id])
        elif restored.external_path:
            self.attempt_start = checkpoint_offsets(restored)
        if self.attempt_start is None:  # gone (subsumed): asked again at the next poll
            return
        self.restored_id, self.restored_start = restored.id, self.attempt_start
        if self.ended_spans is not None:
            self.attempts[-1] = self.rolled_back(restored.id, again, history)

    def rolled_back(self, checkpoint: int, again: bool, history: tuple[CheckpointRef, ...]) -> AttemptReads:
        """The attempt that ended last, tallied up to the checkpoint its restart resumed from (`again`: what that
        attempt itself restored, the savepoint or the same checkpoint, so nothing it read is kept); as it was when
        the statistics do not say when that checkpoint was taken."""
        ended, spans, self.ended_spans = self.attempts[-1], self.ended_spans or (), None
        resumed = dict(self.attempt_start or {})
        if again:
            return AttemptReads(ended.number, ended.start, {}, resumed, True)
        taken = next(
            (c for c in history if c.id == checkpoint and c.trigger_timestamp and c.latest_ack_timestamp), None
        )
        if taken is None:
            return ended
        triggered = taken.trigger_timestamp / 1000 - CLOCK_MARGIN
        completed = taken.latest_ack_timestamp / 1000 + CLOCK_MARGIN
        return kept(ended, spans, resumed, checkpoint, triggered, completed, self.quiet)

    def final_tally(self, why: str) -> tuple[PartitionTally, ...]:
        """Per partition the records read twice over every attempt (needs the Kafka offsets: `--bootstrap`)."""
        if self.settings.bootstrap is None:
            return ()
        attempts = [*self.attempts]
        if self.last is not None:
            attempts.append(self.attempt_reads(why))
        return tally(attempts)

    @property
    def topics(self) -> frozenset[str]:
        return frozenset(topic for topic, _ in self.resume)

    def kafka_offsets(self) -> dict[Key, PartitionOffsets]:
        if self.settings.bootstrap is None:
            return {}
        return topics_offsets(self.settings.bootstrap, sorted(self.topics))

    def resumed_from(self, location: str) -> bool:
        """Take the offsets the job resumes from (`location`'s) and check them against the log start."""
        if not self.resume:
            with self.progress.step(f"read the restored savepoint {location}"):
                tables = savepoint_tables(location)
                self.resume, self.sources = tables.resume_offsets, split_operators(tables)
        self.offsets = self.kafka_offsets()
        expired = check_offsets(self.offsets, self.resume, {}, None)
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
        self.restored, self.restored_id = restored, restored.id
        return bool(restored.external_path) and self.resumed_from(str(restored.external_path))

    def judge(self, samples: tuple[SubtaskSample, ...], history: tuple[CheckpointRef, ...]) -> bool:
        """Judge one poll's samples, and the oldest polls a checkpoint taken after them can prove; whether an
        error was found."""
        findings = judge_sample(samples, self.resume, self.offsets)
        if any(f.kind == READ_MORE_THAN_AVAILABLE for f in findings):
            # The end offsets so far may be old: a finding stands only against offsets newer than the counts.
            self.offsets = self.kafka_offsets()
            findings = judge_sample(samples, self.resume, self.offsets)
        findings += self.checkpoints.judge(history, self.resume)
        read = _summed(samples)
        if any(read.values()):
            self.mark("read")
            self.checkpoints.polled(read)
        return self.report(findings)

    def probe(self, job: str) -> bool:
        """Within `probe` seconds of the first read: judge the poll the last triggered checkpoint followed once it
        completed, and trigger one after the newest poll when none runs; whether an error was found."""
        error = self.report(self.checkpoints.probed(self.flink, job, self.resume))
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
            if phase != CANCELLING and watch.last is not None:
                watch.restarted(
                    f"attempt {len(watch.attempts)} was {'suspended' if phase == SUSPENDED else 'restarted'} at "
                    f"{watch.now():g} s while its readers were reading: what they read after its last poll is not "
                    "counted"
                )
            time.sleep(settings.interval)
            continue
        vertices = document.get("vertices", [])
        if vertices and all(v.get("status") == "RUNNING" for v in vertices):
            watch.mark("running")
        source = watch.follow(document, source)
        try:
            checkpoints = watch.rest.ask(f"GET /jobs/{job}/checkpoints", lambda: flink.checkpoints(job))
        except (FlinkRestError, FlinkUnreachableError):  # still initialising, or ending: the next look says
            checkpoints = None
        if checkpoints is not None:
            error |= watch.restored_from(job, checkpoints.latest_restored)
            watch.restart_point(checkpoints.latest_restored, checkpoints.history)
        samples = watch.sample(job, source)
        if samples is None:  # its metrics are gone (the job is ending, the next look says how) or not there yet
            time.sleep(settings.interval)
            continue
        polls += 1
        samples = watch.counted(samples)
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
    if watch.readers.seen and not (error and acts):  # a KafkaSource followed to its end or the watch's
        watch.report(not_read(frozenset(watch.readers.held), watch.resume, watch.kafka_offsets()))
    stopped = "the job ended" if phase in ENDED else "the watch ended"
    tallied = watch.final_tally(
        f"its counts changed within the last {watch.quiet:g} s before {stopped}: what its readers read after the "
        "last poll is not counted"
    )
    watch.report([_read_twice(t) for t in tallied if t.read_twice])
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
        attempts=tuple(watch.begun),
    )


def _read_twice(tallied: PartitionTally) -> Finding:
    """The final tally of a partition read twice, as a finding."""
    figure = "exactly" if tallied.exact else "at least"
    why = "" if tallied.exact else f" (a lower bound: {tallied.why})"
    detail = f"{figure} {tallied.read_twice} of the {tallied.read} records its readers read were read twice{why}"
    return Finding(READ_TWICE, ERROR, tallied.topic, tallied.partition, tallied.read_twice, detail=detail)


def _summed(samples: tuple[SubtaskSample, ...]) -> dict[Key, int]:
    """Per partition the records all its readers read, over every subtask."""
    read: dict[Key, int] = {}
    for sample in samples:
        for key, count in sample.partitions.items():
            read[key] = read.get(key, 0) + count
    return read


def _same_location(path: str | None, other: str | None) -> bool:
    """Whether two spellings name one savepoint: Flink reports `file:/x` for the `/x` or `file:///x/` it was given."""

    def plain(location: str) -> str:
        local = local_file_uri_path(location)
        return (location if local is None else local).rstrip("/")

    return path is not None and other is not None and plain(path) == plain(other)
