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
- `expired_unread`: the audit's offset check against the restored offsets (the log starts above them).

`judge_sample` is the pure part; `run_watch` polls and acts (stop-with-savepoint, cancel or report).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from splitaudit.audit.findings import ERROR, EXPIRED_UNREAD, Finding
from splitaudit.audit.offsets import check_offsets
from splitaudit.audit.rewind import resume_offsets
from splitaudit.audit.savepoint_tables import savepoint_tables
from splitaudit.clients.flink import TERMINAL_STATES, FlinkRestClient
from splitaudit.clients.kafka import PartitionOffsets, partition_offsets
from splitaudit.errors import UsageError
from splitaudit.guard.results import ACTIONS, CANCEL, REPORT, STOP, WatchEvent, WatchReport
from splitaudit.progress import Progress

PARTITION_READ_TWICE = "partition_read_twice"
READ_MORE_THAN_AVAILABLE = "read_more_than_available"

SOURCE_METRICS = "Source__"  # Flink's prefix of a chained source operator's metrics
PARTITION_METRIC = ".KafkaIOReader_rawSize/"  # Beam KafkaIO's per-partition reader metric: <topic>-<partition>
_DISTRIBUTION_COUNT = re.compile(r"\bcount=(\d+)")  # Flink shows a Beam distribution as DistributionResult{…}

Key = tuple[str, int]


@dataclass(frozen=True)
class SubtaskSample:
    """What one source subtask's metrics say at one poll: per topic partition, the records its Kafka readers
    read (Beam's per-partition distribution counts one per record)."""

    subtask: int
    partitions: Mapping[Key, int]


def subtask_sample(subtask: int, metrics: Mapping[str, str], topics: frozenset[str]) -> SubtaskSample:
    """Read a source subtask's metrics (`FlinkRestClient.subtask_metrics` with the source prefix). Only
    partitions of `topics` (all when empty) count, since a topic name may itself end in `-<digits>`."""
    partitions: dict[Key, int] = {}
    for name, value in metrics.items():
        _, marker, suffix = name.partition(PARTITION_METRIC)
        topic, dash, number = suffix.rpartition("-")
        count = _DISTRIBUTION_COUNT.search(value)
        if marker and dash and number.isdigit() and count and (topic in topics or not topics):
            partitions[(topic, int(number))] = int(count.group(1))
    return SubtaskSample(subtask, partitions)


def judge_sample(
    samples: tuple[SubtaskSample, ...], resume: Mapping[Key, int], kafka: Mapping[Key, PartitionOffsets]
) -> list[Finding]:
    """The double-read findings of one poll: partitions two subtasks read and (with `kafka`) partitions whose
    readers read more records than the partition holds past its restored offset (from its log start when the
    savepoint lacks it): two readers of one split index on one subtask show only that way."""
    findings: list[Finding] = []
    readers: dict[Key, dict[int, int]] = {}
    for sample in samples:
        for key, count in sample.partitions.items():
            readers.setdefault(key, {})[sample.subtask] = count
    for (topic, partition), counts in sorted(readers.items()):
        if len(counts) > 1:
            detail = (
                f"subtasks {' and '.join(map(str, sorted(counts)))} both run a Kafka reader of this partition "
                "(Beam's KafkaIOReader metric of it on each)"
            )
            findings.append(Finding(PARTITION_READ_TWICE, ERROR, topic, partition, len(counts), detail=detail))
        offsets = kafka.get((topic, partition))
        if offsets is None:
            continue
        start = resume.get((topic, partition), offsets.log_start)
        available, read = max(0, offsets.end - start), sum(counts.values())
        if read > available:
            detail = (
                f"its readers read {read} records since the restore, but it holds {available} past offset "
                f"{start} (end offset {offsets.end}): at least {read - available} were read twice"
            )
            excess = read - available
            findings.append(Finding(READ_MORE_THAN_AVAILABLE, ERROR, topic, partition, excess, detail=detail))
    return findings


def restored_offsets(location: str) -> dict[Key, int]:
    """The offsets a job restored from `location` resumes each partition from, read without Spark."""
    return resume_offsets(savepoint_tables(location))


@dataclass(frozen=True)
class WatchSettings:
    """What `splitaudit watch` follows and what it does on an error."""

    flink_rest: str
    job: str
    bootstrap: str | None = None
    on_error: str = STOP
    interval: float = 1.0  # seconds between polls
    duration: float | None = None  # stop watching after this many seconds (None: until the job ends)
    savepoint_dir: str | None = None  # target of stop-with-savepoint (None: the cluster's default)


def run_watch(settings: WatchSettings, progress: Progress, emit: Callable[[WatchEvent], None]) -> WatchReport:
    """Poll the job until it ends, `duration` passes or an error finding is acted on; `emit` each finding as it
    is found (the CLI writes it as a JSON line)."""
    if settings.on_error not in ACTIONS:
        raise UsageError(f"--on-error must be one of {', '.join(ACTIONS)}, not {settings.on_error!r}")
    flink = FlinkRestClient(settings.flink_rest)
    start = time.monotonic()
    job = flink.job(settings.job)
    sources = [v for v in job.get("vertices", []) if str(v.get("name", "")).startswith("Source:")]
    if not sources:
        raise UsageError(f"job {settings.job} at {settings.flink_rest} has no source vertex to watch")
    source = sources[0]
    restored = flink.checkpoints(settings.job).latest_restored
    resume: dict[Key, int] = {}
    if restored is not None and restored.external_path:
        with progress.step(f"read the restored savepoint {restored.external_path}"):
            resume = restored_offsets(restored.external_path)
    topics = frozenset(topic for topic, _ in resume)
    events: list[WatchEvent] = []
    seen: set[tuple[str, str | None, int | None]] = set()

    def report(findings: list[Finding]) -> bool:
        new = [f for f in findings if (f.kind, f.topic, f.partition) not in seen]
        for finding in new:
            seen.add((finding.kind, finding.topic, finding.partition))
            event = WatchEvent(round(time.monotonic() - start, 3), finding)
            events.append(event)
            emit(event)
        return any(f.severity == ERROR for f in new)

    def kafka_offsets() -> dict[Key, PartitionOffsets]:
        offsets: dict[Key, PartitionOffsets] = {}
        if settings.bootstrap is not None:
            for topic in sorted(topics):
                offsets |= partition_offsets(settings.bootstrap, topic)
        return offsets

    error = report([f for f in check_offsets(kafka_offsets(), resume, {}, None) if f.kind == EXPIRED_UNREAD])
    polls = 0
    state = flink.job_state(settings.job)
    while not error and state not in TERMINAL_STATES:
        if settings.duration is not None and time.monotonic() - start >= settings.duration:
            break
        time.sleep(settings.interval)
        offsets = kafka_offsets()
        samples = tuple(
            subtask_sample(i, flink.subtask_metrics(settings.job, source["id"], i, SOURCE_METRICS), topics)
            for i in range(int(source["parallelism"]))
        )
        polls += 1
        error = report(judge_sample(samples, resume, offsets))
        state = flink.job_state(settings.job)
    action, savepoint = "none", None
    if error and settings.on_error == STOP:
        with progress.step(f"stop job {settings.job} with a savepoint"):
            request = flink.stop_with_savepoint(settings.job, settings.savepoint_dir)
            savepoint = flink.wait_for_savepoint(settings.job, request)
            # The savepoint completes before the job reaches FINISHED: report the state it ends in.
            flink.wait_for_state(settings.job, set(TERMINAL_STATES))
        action = STOP
    elif error and settings.on_error == CANCEL:
        with progress.step(f"cancel job {settings.job}"):
            flink.cancel(settings.job)
        action = CANCEL
    elif error:
        action = REPORT
    return WatchReport(
        job=settings.job,
        restored_from=None if restored is None else restored.external_path,
        polls=polls,
        seconds=round(time.monotonic() - start, 3),
        events=tuple(events),
        action=action,
        savepoint=savepoint,
        job_state=flink.job_state(settings.job),
    )
