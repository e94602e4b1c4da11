"""The savepoint restore of a job shaped like the ones users run (beam_pipelines/java/users-job), and the truth
about what it read twice or lost, found without any lineage in its outputs.

The job reads JSON weather records, parses and maps them, and writes one output per input to an output topic, to
TextIO JSON lines files and to Parquet files (FileIO), the file sinks in fixed windows of the records' log-append
times with Beam's default names; no output carries Kafka coordinates. Every input record's `timestamp` is unique
(a base time plus the record's number in microseconds), so it is the record's identity: each output record is
matched back to the input (partition, offset) carrying the same identity, in Python with pyarrow. That is the
test oracle, independent of splitaudit's Spark audit.

On a real stack, for one jar (stock or patched), one consumer configuration (`none`, `group`, `earliest`) and,
with `group`, one treatment of the group's committed offsets (`committed`, `deleted`, `mid-window`):

1. create the input topic (P partitions, log-append time) and the output topic;
2. produce N records per partition and run the job at parallelism 2 (with `none` the job starts at the log end,
   so the N are produced once the job runs and a checkpoint completed: its readers are placed by then); every
   phase is produced in batches half a window apart, so its records span several windows;
3. wait until the outputs settle (below); with `open_window`, produce that many more records per partition into a
   window and wait until its files are written, then as many into the next and wait until the job read them
   (the first window closed moments before the savepoint, the second still open at it, its records buffered in
   the window operators' state); savepoint, cancel; snapshot both file sinks (each finalized
   file's name, inode, modification time, size and records);
4. leave the group's committed offsets, delete the group, or set them to the middle of a closed window;
5. produce M per partition while the job is down, and ask `guard` (with the topic's offsets) what the restore
   will do;
6. restore from the savepoint (proven through REST; with `watch`, submitted under `splitaudit watch --on-error
   report`, which proves it and follows the job to its end), wait until the outputs settle (every reader of the
   restored job has started by then);
7. produce K per partition; wait until the outputs settle; savepoint, cancel;
8. read the input topic, the output topic and both file sinks; count per partition, and compare the file sinks
   with their snapshot: files replaced, records the sink lost or shows once although read twice.

The outputs have settled when the output topic holds the records expected, every window holding a produced record
has fired (the job's lowest input watermark is past its end) and then checkpoints over 3 s add nothing to any
output. The file sinks are not waited for to hold the topic's count: a rewritten window holds fewer rows.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType

import pyarrow.parquet as pq

from splitaudit.clients import kafka as kafka_client
from splitaudit.errors import ExternalError, UsageError
from splitaudit.guard.predict import SinkFolder, run_guard
from splitaudit.guard.results import WatchReport
from splitaudit.home import users_job_jars
from splitaudit.polling import poll
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import (
    ScenarioRun,
    ScenarioSettings,
    checkpoint_after_now,
    own_stack,
    wait_until_settled,
)
from splitaudit_lab.scenario.users_job_results import (
    CONSUMERS,
    GROUP_OFFSETS,
    FileSinkTruth,
    MidWindowOffset,
    OffsetRange,
    OutputTruth,
    PartitionTruth,
    ReplacedFile,
    TempFile,
    UsersJobReport,
    Window,
    offset_runs,
)
from splitaudit_lab.scenario.watched import watching_restore
from splitaudit_lab.stack.stack import Stack

# The first record's time; record i is this plus i microseconds, so its `timestamp` names it.
BASE_TIME = datetime(2025, 6, 1, tzinfo=UTC)
STATIONS = ("Aberdeen", "Bergen", "Cork", "Dundee", "Esbjerg", "Faro", "Genoa")
BATCHES = 4  # each phase is produced in this many batches, half a window apart
TEMP_FOLDER = ".temp-beam"  # Beam's temporary folders in a file sink's directory (`.temp-beam-<uuid>`)


def weather_record(number: int) -> tuple[str, str]:
    """Key (the station) and JSON value of input record `number`: the job's input as a weather feed writes it."""
    station = STATIONS[number % len(STATIONS)]
    when = BASE_TIME + timedelta(microseconds=number)
    value = {
        "station": station,
        "timestamp": when.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "temperature": round(-5.0 + (number * 37 % 400) / 10.0, 1),
        "rainfall": round((number * 13 % 50) / 10.0, 1),
    }
    return station, json.dumps(value)


def users_job_jar(variant: str) -> Path:
    """The users' job's shaded jar of a variant ("stock" or "patched"), as the Maven build leaves it."""
    jars = users_job_jars()
    if variant not in jars:
        raise UsageError(f"the users' job has no {variant} jar (stock or patched)")
    if not jars[variant].is_file():
        raise ExternalError(f"{jars[variant]} is missing; run `splitaudit setup`")
    return jars[variant]


@dataclass(frozen=True)
class UsersJobSettings:
    """The knobs of the users'-job scenario: records per partition in each phase, the job's consumer. Refused when
    made (a UsageError, exit 2) for a consumer or a treatment of the group's offsets the scenario does not know, and
    for a treatment of the group's offsets without a group."""

    consumer: str = "none"
    group_offsets: str = "committed"  # one of GROUP_OFFSETS: the group's committed offsets before the restore
    window_seconds: int = 2  # the file sinks' fixed windows
    partitions: int = 4
    before: int = 500  # N per partition, read by the first job
    down: int = 500  # M per partition, produced while the job is down
    after: int = 500  # K per partition, produced once the restored job runs
    parallelism: int = 2
    lineage: bool = False  # the job adds the lineage kit's columns to its Parquet rows
    watch: bool = False  # `splitaudit watch --on-error report` follows the restored job from its submission
    # records per partition produced into a window that closes just before the first savepoint, and as many into one
    # still open at it (`produce_around_the_savepoint`)
    open_window: int = 0
    timeout: float = 300.0  # for each wait on the outputs

    def __post_init__(self) -> None:
        if self.consumer not in CONSUMERS:
            raise UsageError(f"--consumer must be one of {', '.join(CONSUMERS)}, not {self.consumer!r}")
        if self.group_offsets not in GROUP_OFFSETS:
            raise UsageError(f"--group-offsets must be one of {', '.join(GROUP_OFFSETS)}, not {self.group_offsets!r}")
        if self.group_offsets != "committed" and self.consumer != "group":
            raise UsageError(f"--group-offsets {self.group_offsets} needs --consumer group (a group to treat)")


def window_of(millis: int, window_ms: int) -> Window:
    """The fixed window (Beam's `FixedWindows` of `window_ms`, no offset) an event time falls in."""
    start = millis - millis % window_ms
    return start, start + window_ms


def mid_window_offsets(
    times: Mapping[tuple[int, int], int], before: Mapping[int, OffsetRange], window_ms: int
) -> tuple[MidWindowOffset, ...]:
    """Per partition, an offset half-way through its offsets in one window that closed before the savepoint: the
    window holding the middle offset of the lowest partition's records produced before the savepoint. `times`
    gives each (partition, offset)'s log-append time. A partition with fewer than two records in that window has
    no middle to cut it at, and is an error."""
    first_partition = min(before)
    low, high = before[first_partition]
    window = window_of(times[first_partition, (low + high) // 2], window_ms)
    chosen = []
    for partition, (low, high) in sorted(before.items()):
        inside = [o for o in range(low, high + 1) if window_of(times[partition, o], window_ms) == window]
        if len(inside) < 2:
            raise ExternalError(
                f"partition {partition} has {len(inside)} records in window {window}; the window has no middle"
            )
        offsets = (inside[0], inside[-1])
        chosen.append(MidWindowOffset(partition, inside[0] + len(inside) // 2, window, offsets))
    return tuple(chosen)


@dataclass(frozen=True)
class FileSnapshot:
    """One finalized file of a file sink at one moment: what tells a rewritten file from the one before it."""

    name: str
    inode: int
    mtime_ns: int
    size: int
    identities: tuple[str, ...]  # its records' `timestamp`s, one per row


@dataclass(frozen=True)
class FileSink:
    """One of the job's file sinks: its directory and the suffix of its finalized files. Beam writes into hidden
    `.temp-beam*` folders beside them and renames each finished file into the directory."""

    name: str  # "text" or "parquet"
    directory: Path
    suffix: str  # ".json" or ".parquet"

    def finalized(self) -> list[Path]:
        return sorted(self.directory.glob(f"*{self.suffix}")) if self.directory.is_dir() else []

    def identities(self, path: Path) -> tuple[str, ...]:
        """The `timestamp` of every row of a finalized file."""
        if self.suffix == ".parquet":
            return tuple(pq.read_table(path, columns=["timestamp"])["timestamp"].to_pylist())
        return tuple(json.loads(line)["timestamp"] for line in path.read_text().splitlines() if line)

    def rows(self) -> int:
        """Rows of the finalized files (Parquet from their footers)."""
        if self.suffix == ".parquet":
            return sum(pq.ParquetFile(path).metadata.num_rows for path in self.finalized())
        return sum(len(self.identities(path)) for path in self.finalized())

    def snapshot(self) -> dict[str, FileSnapshot]:
        """Every finalized file, by name."""
        files = {}
        for path in self.finalized():
            status = path.stat()
            files[path.name] = FileSnapshot(
                path.name, status.st_ino, status.st_mtime_ns, status.st_size, self.identities(path)
            )
        return files

    def temp_files(self) -> tuple[TempFile, ...]:
        """Files left in Beam's temporary folders, never finalized."""
        found = (
            path for folder in self.directory.glob(f"{TEMP_FOLDER}*") for path in folder.rglob("*") if path.is_file()
        )
        return tuple(TempFile(str(p.relative_to(self.directory)), p.stat().st_size) for p in sorted(found))


class UsersJobRun(ScenarioRun):
    """A `ScenarioRun` of the users' job: weather records in, an output topic and two file sinks out."""

    # The job takes each record's event time from the broker (KafkaIO withLogAppendTime).
    topic_config = MappingProxyType({"message.timestamp.type": "LogAppendTime"})

    def __init__(self, stack: Stack, run_dir: Path, name: str, settings: UsersJobSettings, progress: Progress):
        super().__init__(
            stack,
            run_dir,
            name,
            ScenarioSettings(
                partitions=settings.partitions, parallelism=settings.parallelism, timeout=settings.timeout
            ),
            progress,
        )
        self.job = settings
        self.window_ms = settings.window_seconds * 1000
        self.input_topic = next(iter(self.topics))
        self.output_topic = f"{self.input_topic}-out"
        self.text = FileSink("text", run_dir / "text", ".json")
        self.parquet = FileSink("parquet", run_dir / "parquet", ".parquet")
        # Epoch ms by which every record produced so far was appended (the broker shares this machine's clock).
        self.produced_by = 0
        bootstrap = stack.kafka.bootstrap
        with self.steps.step(f"create output topic {self.output_topic} ({settings.partitions} partitions)"):
            kafka_client.create_topic(bootstrap, self.output_topic, settings.partitions)
        self.args = [
            f"--bootstrapServers={bootstrap}",
            f"--inputTopic={self.input_topic}",
            f"--outputTopic={self.output_topic}",
            f"--textDir={self.text.directory}",
            f"--parquetDir={self.parquet.directory}",
            f"--windowSeconds={settings.window_seconds}",
            f"--consumer={settings.consumer}",
            f"--groupId={self.group}",
            f"--lineage={'true' if settings.lineage else 'false'}",
        ]

    @property
    def group(self) -> str:
        """The job's consumer group with `--consumer group`."""
        return self.input_topic

    def record(self, number: int) -> tuple[str, str]:
        return weather_record(number)

    def produce_each(self, per_partition: int, what: str) -> dict[int, OffsetRange | None]:
        """Produce `per_partition` records to each partition, in BATCHES batches half a window apart (so they span
        several windows); the offsets each partition got."""
        first = {p: self.produced.get((self.input_topic, p), 0) for p in range(self.job.partitions)}
        for batch in range(BATCHES):
            if batch:
                time.sleep(self.job.window_seconds / 2)
            share = per_partition * (batch + 1) // BATCHES - per_partition * batch // BATCHES
            self.produce(share * self.job.partitions, what=f"{what}, batch {batch + 1} of {BATCHES}")
        self.produced_by = int(time.time() * 1000)
        return {
            p: (first[p], first[p] + per_partition - 1) if per_partition else None for p in range(self.job.partitions)
        }

    def topic_rows(self) -> int:
        """Records in the output topic (its end offsets: the job writes no transactions)."""
        offsets = kafka_client.partition_offsets(self.stack.kafka.bootstrap, self.output_topic)
        return sum(o.end - o.log_start for o in offsets.values())

    def output_rows(self) -> tuple[int, int, int]:
        """Rows of the output topic and of each file sink's finalized files."""
        return self.topic_rows(), self.text.rows(), self.parquet.rows()

    def wait_for_outputs(self, job: str, records: int) -> int:
        """Wait until the output topic holds at least `records` records, the job's lowest input watermark is past
        the end of the window of the last record produced (every window holding one has fired), and checkpoints
        over 3 s add nothing to any output; the last one's id."""
        fired = window_of(self.produced_by, self.window_ms)[1]
        with self.steps.step(f"wait for {records} records in the topic, windows to {fired}, then no growth") as out:
            topic_rows, watermark = [0], [-1]

            def arrived() -> bool:
                # No failover is part of the scenario: a job that failed once (and restarted) is an error.
                failure = self.flink.job_exceptions(job)
                if failure:
                    raise ExternalError(f"job {job} failed: {failure.splitlines()[0]}")
                topic_rows[0] = self.topic_rows()
                watermark[0] = min(self.flink.input_watermarks(job).values(), default=-1)
                return topic_rows[0] >= records and watermark[0] >= fired

            poll(
                f"{records} records in {self.output_topic} and the watermark past {fired}",
                arrived,
                timeout=self.settings.timeout,
                interval=1.0,
                last_seen=lambda: f"{topic_rows[0]} in the topic, lowest input watermark {watermark[0]}",
            )
            checkpoint = wait_until_settled(self.flink, job, self.output_rows, "the outputs", self.settings.timeout)
            topic, text, parquet = self.output_rows()
            out.append(f"{topic} in the topic, {text} in text, {parquet} in Parquet; checkpoint {checkpoint}")
        return checkpoint

    def produce_around_the_savepoint(self, per_partition: int) -> dict[int, OffsetRange | None]:
        """Produce `per_partition` records to each partition into two windows, the savepoint to come between their
        ends: into the first, wait until both file sinks wrote its file (it fired); then at once into the second
        and wait until the output topic holds them (the job read them). Savepointed at once, the first window
        closed moments before it and the second is still open at it (the job's watermark cannot pass its end
        sooner). Their offsets (the two batches: consecutive)."""
        first = {p: self.produced.get((self.input_topic, p), 0) for p in range(self.job.partitions)}
        sinks = (self.text, self.parquet)
        files = [len(sink.finalized()) for sink in sinks]
        self._produce_into_a_window(per_partition, " into a window that closes just before the savepoint")
        poll("the file sinks to write the window's files",
             lambda: all(len(sink.finalized()) > n for sink, n in zip(sinks, files, strict=True)),
             timeout=self.settings.timeout, interval=0.1)  # fmt: skip
        self._produce_into_a_window(per_partition, " into a window left open at the savepoint")
        return {p: (first[p], first[p] + 2 * per_partition - 1) for p in range(self.job.partitions)}

    def _produce_into_a_window(self, per_partition: int, what: str) -> None:
        """Produce `per_partition` records to each partition into a window with at least half of it to run (the
        current one, or the next just after it starts), and wait until the output topic holds them."""
        now = int(time.time() * 1000)
        left = window_of(now, self.window_ms)[1] - now
        if left < self.window_ms / 2:
            time.sleep(left / 1000 + 0.05)  # just past the next window's start
        expected = self.topic_rows() + per_partition * self.job.partitions
        self.produce(per_partition * self.job.partitions, what=what)
        self.produced_by = int(time.time() * 1000)
        poll(f"{expected} records in {self.output_topic}", lambda: self.topic_rows() >= expected,
             timeout=self.settings.timeout, interval=0.1)  # fmt: skip

    def input_records(self) -> tuple[dict[str, tuple[int, int]], dict[tuple[int, int], int]]:
        """The input topic's records: each identity's (partition, offset), and each (partition, offset)'s
        log-append time."""
        identity: dict[str, tuple[int, int]] = {}
        times: dict[tuple[int, int], int] = {}
        for record in kafka_client.read_topic(self.stack.kafka.bootstrap, self.input_topic):
            stamp = json.loads(record.value or b"{}")["timestamp"]
            if stamp in identity:
                raise ExternalError(
                    f"input records {identity[stamp]} and {record.partition, record.offset} share {stamp}"
                )
            if record.timestamp is None:
                raise ExternalError(f"input record {record.partition, record.offset} has no timestamp")
            identity[stamp] = (record.partition, record.offset)
            times[record.partition, record.offset] = record.timestamp
        return identity, times

    def treat_group_offsets(self, before: Mapping[int, OffsetRange]) -> tuple[MidWindowOffset, ...]:
        """Leave, delete or set to mid-window the group's committed offsets, as the settings say; where
        `mid-window` set them."""
        how = self.job.group_offsets
        if how == "committed":
            return ()
        bootstrap = self.stack.kafka.bootstrap
        with self.steps.step(f"group offsets: {how}") as out:
            if how == "deleted":
                kafka_client.delete_group(bootstrap, self.group)
                out.append(f"group {self.group} deleted")
                return ()
            _, times = self.input_records()
            chosen = mid_window_offsets(times, before, self.window_ms)
            kafka_client.set_committed_offsets(bootstrap, self.group, self.input_topic, {
                m.partition: m.offset for m in chosen
            })  # fmt: skip
            out.append(", ".join(f"{m.partition}: {m.offset} in {m.window_offsets}" for m in chosen))
            return chosen

    def truth(
        self, phases: dict[str, dict[int, OffsetRange | None]], first: Mapping[str, Mapping[str, FileSnapshot]]
    ) -> tuple[tuple[PartitionTruth, ...], tuple[int, int, int], tuple[Window, ...], tuple[FileSinkTruth, ...]]:
        """Match every output back to the input by each record's `timestamp`: per partition; the output records
        that match no input record (topic, text, Parquet); the windows of the records produced before the
        savepoint; and each file sink against its snapshot `first` (taken after the first job)."""
        identity, times = self.input_records()
        from_topic = Counter(
            json.loads(record.value or b"{}")["timestamp"]
            for record in kafka_client.read_topic(self.stack.kafka.bootstrap, self.output_topic)
        )
        sinks = (self.text, self.parquet)
        last = {sink.name: sink.snapshot() for sink in sinks}
        in_sink = {name: Counter(s for f in files.values() for s in f.identities) for name, files in last.items()}
        before_sink = {name: {s for f in files.values() for s in f.identities} for name, files in first.items()}
        counts = (from_topic, in_sink["text"], in_sink["parquet"])
        unmatched = tuple(sum(n for stamp, n in c.items() if stamp not in identity) for c in counts)
        partitions = []
        for partition in range(self.job.partitions):
            stamps = {offset: stamp for stamp, (p, offset) in identity.items() if p == partition}
            outputs = [self._output_truth(stamps, from_topic, from_topic, None)]
            for sink in sinks:
                outputs.append(self._output_truth(stamps, in_sink[sink.name], from_topic, before_sink[sink.name]))
            partitions.append(
                PartitionTruth(
                    partition=partition,
                    before=phases["before"][partition],
                    down=phases["down"][partition],
                    after=phases["after"][partition],
                    topic=outputs[0],
                    text=outputs[1],
                    parquet=outputs[2],
                )
            )
        windows_before = sorted(
            {
                window_of(times[p, o], self.window_ms)
                for p, run in phases["before"].items()
                if run is not None
                for o in range(run[0], run[1] + 1)
            }
        )
        files = tuple(self._sink_truth(sink, first[sink.name], last[sink.name], identity, times) for sink in sinks)
        return tuple(partitions), (unmatched[0], unmatched[1], unmatched[2]), tuple(windows_before), files

    @staticmethod
    def _output_truth(
        stamps: Mapping[int, str], counts: Counter[str], topic: Counter[str], before: set[str] | None
    ) -> OutputTruth:
        """One output's truth of one partition (`stamps`: offset -> identity); a file sink's also against the
        output topic (`topic`, every record read) and its snapshot after the first job (`before`)."""
        per_offset = {offset: counts.get(stamp, 0) for offset, stamp in stamps.items()}

        def where(wanted: Iterable[bool]) -> tuple[OffsetRange, ...]:
            return offset_runs(o for o, keep in zip(per_offset, wanted, strict=True) if keep)

        masked: tuple[OffsetRange, ...] = ()
        lost: tuple[OffsetRange, ...] = ()
        if before is not None:
            masked = where(n == 1 and topic.get(stamps[o], 0) >= 2 for o, n in per_offset.items())
            lost = where(n == 0 and stamps[o] in before for o, n in per_offset.items())
        return OutputTruth(
            rows=sum(per_offset.values()),
            produced_offsets=len(stamps),
            read_twice=offset_runs(o for o, n in per_offset.items() if n == 2),
            read_more=offset_runs(o for o, n in per_offset.items() if n > 2),
            missing=offset_runs(o for o, n in per_offset.items() if n == 0),
            masked_duplicates=masked,
            lost_by_rewrite=lost,
        )

    def _sink_truth(
        self,
        sink: FileSink,
        first: Mapping[str, FileSnapshot],
        last: Mapping[str, FileSnapshot],
        identity: Mapping[str, tuple[int, int]],
        times: Mapping[tuple[int, int], int],
    ) -> FileSinkTruth:
        """A file sink's files replaced since its snapshot `first`, each with the window its records fall in."""
        replaced = []
        for name in sorted(first.keys() & last.keys()):
            old, new = first[name], last[name]
            if (old.inode, old.mtime_ns, old.identities) == (new.inode, new.mtime_ns, new.identities):
                continue
            windows = {
                window_of(times[identity[s]], self.window_ms) for s in old.identities + new.identities if s in identity
            }
            window = windows.pop() if len(windows) == 1 else None
            replaced.append(ReplacedFile(name, window, len(old.identities), len(new.identities)))
        return FileSinkTruth(
            name=sink.name,
            directory=str(sink.directory),
            files_before=len(first),
            files_after=len(last),
            replaced=tuple(replaced),
            temp_files=sink.temp_files(),
        )


def run_users_job_scenario(
    stack: Stack, run_dir: Path, jar: Path, variant: str, progress: Progress, settings: UsersJobSettings
) -> UsersJobReport:
    """Run the users' job through a savepoint restore on a running `stack`; everything under `run_dir` (new)."""
    run = UsersJobRun(stack, run_dir, f"users-{variant}-{settings.consumer}", settings, progress)
    each = settings.partitions
    # Each job of this 164 MB jar leaves its classes in the TaskManager's metaspace: two fit, more did not.
    with run.steps.step("restart the TaskManager (a fresh metaspace for the scenario's two jobs)"):
        stack.flink.restart_taskmanager()
    phases: dict[str, dict[int, OffsetRange | None]] = {}
    if settings.consumer == "none":
        # A consumer without a group starts at the log end: records produced before its readers are placed
        # would never be read. They are placed once the job runs and has completed a checkpoint.
        job_before = run.run_job(jar)
        with run.steps.step("wait for a checkpoint (the readers are placed at the log end)") as out:
            out.append(f"checkpoint {checkpoint_after_now(run.flink, job_before)}")
        phases["before"] = run.produce_each(settings.before, " (before the savepoint)")
    else:
        phases["before"] = run.produce_each(settings.before, " (before the savepoint)")
        job_before = run.run_job(jar)
    run.wait_for_outputs(job_before, settings.before * each)
    if settings.open_window:
        around = run.produce_around_the_savepoint(settings.open_window)
        phases["before"] = {p: _joined(phases["before"][p], around[p]) for p in phases["before"]}
    savepoint_before = run.savepoint_and_cancel(job_before)
    with run.steps.step("snapshot both file sinks") as out:
        first = {sink.name: sink.snapshot() for sink in (run.text, run.parquet)}
        out.append(", ".join(f"{name}: {len(files)} files" for name, files in first.items()))
    before = {p: run for p, run in phases["before"].items() if run is not None}
    mid_window = run.treat_group_offsets(before)
    phases["down"] = run.produce_each(settings.down, " while the job is down")
    # What the guard says the restore will do, judged now, as a user would before restoring: the test compares
    # its twin starts with what the restored job then reads twice, and the window files it names with those the
    # restored job then replaces.
    guard = run_guard(
        savepoint_before, jar, stack.kafka.bootstrap, None, progress, sink=SinkFolder(str(run.text.directory))
    )
    with ExitStack() as restored:
        watching: Future[WatchReport] | None = None
        if settings.watch:  # the watch proves where the job restored from
            job_after, watching = restored.enter_context(watching_restore(run, jar, savepoint_before))
        else:
            job_after, _ = run.restore(jar, savepoint_before, "restore from the savepoint")
        # Every reader of the restored job (the twin of a stock build too) has started once the backlog is in the
        # outputs and a checkpoint completed after it.
        read_before = settings.before + 2 * settings.open_window
        run.wait_for_outputs(job_after, (read_before + settings.down) * each)
        phases["after"] = run.produce_each(settings.after, " after the restored job runs")
        run.wait_for_outputs(job_after, (read_before + settings.down + settings.after) * each)
        savepoint_after = run.savepoint_and_cancel(job_after)
        watch = None if watching is None else watching.result()
    with run.steps.step("match every output to the input records by their timestamp") as out:
        partitions, unmatched, windows_before, file_sinks = run.truth(phases, first)
        extra = sum(p.topic.extra_rows for p in partitions)
        missing = sum(p.topic.missing_count for p in partitions)
        replaced = ", ".join(f"{sink.name} {len(sink.replaced)}" for sink in file_sinks)
        out.append(f"output topic: {extra} extra rows, {missing} offsets missing; files replaced: {replaced}")
    return UsersJobReport(
        variant=variant,
        consumer=settings.consumer,
        group_offsets=settings.group_offsets,
        lineage=settings.lineage,
        window_seconds=settings.window_seconds,
        jar=str(jar),
        run_dir=str(run_dir),
        input_topic=run.input_topic,
        output_topic=run.output_topic,
        text_dir=str(run.text.directory),
        parquet_dir=str(run.parquet.directory),
        job_id_before=job_before,
        job_id_after=job_after,
        savepoint_before=savepoint_before,
        savepoint_after=savepoint_after,
        records=(settings.before, settings.down, settings.after),
        partitions=partitions,
        unmatched_rows=unmatched,
        windows_before=windows_before,
        mid_window=mid_window,
        file_sinks=(file_sinks[0], file_sinks[1]),
        steps=tuple(run.steps.done),
        guard=guard,
        watch=watch,
    )


def _joined(first: OffsetRange | None, then: OffsetRange | None) -> OffsetRange | None:
    """Two consecutive offset runs of one partition as one."""
    if first is None or then is None:
        return first or then
    return first[0], then[1]


def run_users_job_with_own_stack(
    run_dir: Path, variant: str, progress: Progress, settings: UsersJobSettings, keep_stack: bool
) -> UsersJobReport:
    """Bring a stack up in `<run_dir>/stack`, run the users'-job scenario in `<run_dir>/<variant>`, bring it down."""
    jar = users_job_jar(variant)
    with own_stack(run_dir, progress, keep_stack) as stack:
        return run_users_job_scenario(stack, run_dir / variant, jar, variant, progress, settings)
