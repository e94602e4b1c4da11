"""The savepoint restore of a windowed word count (the users' job module's `WordCountPipeline`), and the truth
about what its aggregates should have been, for reconciling them (`splitaudit audit --aggregate`).

The job reads text lines with KafkaIO, splits them into words, windows them (processing time: the global window
with a discarding pane every `window_seconds` after a pane's first word; or event time: fixed windows of the
records' log-append time), counts each word (`Count.perElement`; or sums or maxes its length) and writes each
pane's aggregate to an output topic: key the word, value `{"value": n, "window_start": ms}`. Nothing in its output
names the records it counted: a double read shows only as a count too high.

On a real stack, for one jar (stock or patched) and one consumer configuration (`none`: Kafka's default latest;
`earliest`; `group`: a group with commitOffsetsInFinalize):

1. create the input topic (P partitions, log-append time) and the output topic;
2. run the job at parallelism 2 (with `none`, once a checkpoint completed: its readers are placed at the log end)
   and produce N lines per partition (line i to partition i % P);
3. wait until the job's output for them is written (the output topic's records since the job started add up to
   the aggregate of the lines fed, for a max: hold every word fed) and checkpoints over 3 s add no record;
   savepoint SP0, cancel;
4. produce M lines per partition while the job is down (with `group` and `commit_at`, set the group's committed
   offsets to that offset of every partition first); note each partition's log end and the group's committed
   offsets (where the stock twin starts, as the guard knows them);
5. restore from SP0 (proven through REST) and wait as in 3 for the backlog's output;
6. produce K lines per partition; wait as in 3; savepoint SP1, cancel;
7. read the input and the output topics back as pyarrow tables (`WordCountReport.source` and `.sink`): the test
   computes its truth from them (`words_in`, `per_key`) independently of splitaudit's Spark audit.

The job's entry class is given to Flink on the run and on the restore: the users' job jar's manifest names the
weather job.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import pyarrow as pa
import pyarrow.compute as pc

from splitaudit.clients import kafka as kafka_client
from splitaudit.errors import ExternalError, UsageError
from splitaudit.polling import poll
from splitaudit.progress import Progress, TimedStep
from splitaudit_lab.scenario.restore import ScenarioRun, ScenarioSettings, checkpoint_after_now, wait_until_settled
from splitaudit_lab.stack.stack import Stack

ENTRY_CLASS = "dev.splitaudit.usersjob.WordCountPipeline"
CONSUMERS = ("none", "earliest", "group")
AGGREGATES = ("count", "sum", "max")  # WordCountPipeline's --aggregate: sum and max of each word's length
Partition = tuple[str, int]


def line(number: int) -> str:
    """Input line `number`: a word in every line, one of 7 and one of 50 (so keys' counts differ by offset range),
    and a word naming the line's tens (keys present in only some ranges)."""
    return f"all m{number % 7} f{number % 50} t{number // 10}"


@dataclass(frozen=True)
class WordCountSettings:
    """The knobs of the word-count scenario; refused when made (UsageError, exit 2) for a consumer or an
    aggregate the job does not know, and for `commit_at` without the group consumer."""

    consumer: str = "none"
    aggregate: str = "count"
    event_time: bool = False
    window_seconds: int = 2
    partitions: int = 4
    before: int = 250  # N per partition, read by the first job
    down: int = 250  # M per partition, produced while the job is down
    after: int = 250  # K per partition, produced once the restored job runs
    parallelism: int = 2
    timeout: float = 300.0  # for each wait on the output
    commit_at: int | None = None  # with `group`: the offset the group's committed offsets are set to while down

    def __post_init__(self) -> None:
        if self.commit_at is not None and self.consumer != "group":
            raise UsageError("commit_at sets a group's committed offsets: it needs the group consumer")
        if self.consumer not in CONSUMERS:
            raise UsageError(f"consumer must be one of {', '.join(CONSUMERS)}, not {self.consumer!r}")
        if self.aggregate not in AGGREGATES:
            raise UsageError(f"aggregate must be one of {', '.join(AGGREGATES)}, not {self.aggregate!r}")


@dataclass(frozen=True)
class WordCountReport:
    """What a run did and read back: the ids and savepoints, each partition's offsets at the moments the truth
    needs, and both topics' records (`source`: partition, offset, value, timestamp; `sink`: partition, offset,
    key, value, timestamp, with the output's end offsets when each job started)."""

    variant: str
    settings: WordCountSettings
    jar: str
    input_topic: str
    output_topic: str
    group: str
    job_id_before: str
    job_id_after: str
    savepoint_before: str
    savepoint_after: str
    sp0_offsets: Mapping[int, int]  # the input's log end at SP0: everything before it read by the first job
    log_end_at_restore: Mapping[int, int]  # the input's log end when the restore was submitted
    committed_at_restore: Mapping[int, int | None]  # the group's committed offsets then (None: no group)
    sp1_offsets: Mapping[int, int]  # the input's log end at SP1
    output_at_restore: Mapping[int, int]  # the output topic's end offsets when the restore was submitted
    source: pa.Table
    sink: pa.Table
    steps: tuple[TimedStep, ...]


GLOBAL_WINDOW = -1  # the output's window_start of a pane of the global window (processing-time panes)
WindowKey = tuple[int, str]  # (window start in epoch ms, or GLOBAL_WINDOW; word)


def words_in(
    source: pa.Table, ranges: Mapping[int, tuple[int, int]], aggregate: str, window_ms: int | None = None
) -> dict[WindowKey, int]:
    """Per (window, word), the aggregate (count, or sum or max of the word's length) of the words of the source
    lines at offsets [first, end) of each partition in `ranges`: with `window_ms` in the fixed window of the line's
    Kafka timestamp (Beam's FixedWindows, no offset), else in the global window."""
    keep = pa.array([False] * source.num_rows, pa.bool_())
    for partition, (first, end) in ranges.items():
        inside = pc.and_(
            pc.equal(source["partition"], partition),
            pc.and_(pc.greater_equal(source["offset"], first), pc.less(source["offset"], end)),
        )
        keep = pc.or_(keep, inside)
    lines = source.filter(keep)
    split = pc.split_pattern(pc.cast(lines["value"], pa.string()), " ")
    words = pc.list_flatten(split)
    if window_ms is None:
        window = pa.repeat(pa.scalar(GLOBAL_WINDOW, pa.int64()), len(words))
    else:
        stamps = lines["timestamp"].to_numpy()
        starts = pa.array(stamps - stamps % window_ms, pa.int64())
        window = pc.take(starts, pc.list_parent_indices(split))
    table = pa.table({"window": window, "word": words, "length": pc.utf8_length(words)})
    column, function = {"count": ("word", "count"), "sum": ("length", "sum"), "max": ("length", "max")}[aggregate]
    return _per_window_and_word(table, column, function)


def per_key(sink: pa.Table, first: Mapping[int, int]) -> dict[WindowKey, int]:
    """Per (window, word), the sum of the output's values (discarding panes: each pane's own aggregate) over the
    records at or after `first` of each output partition (e.g. those the restored job wrote)."""
    keep = pa.array([False] * sink.num_rows, pa.bool_())
    for partition, offset in first.items():
        inside = pc.and_(pc.equal(sink["partition"], partition), pc.greater_equal(sink["offset"], offset))
        keep = pc.or_(keep, inside)
    rows = sink.filter(keep)
    values = [json.loads(v) for v in rows["value"].to_pylist()]
    table = pa.table(
        {
            "window": pa.array([v["window_start"] for v in values], pa.int64()),
            "word": pc.cast(rows["key"], pa.string()),
            "value": pa.array([v["value"] for v in values], pa.int64()),
        }
    )
    return _per_window_and_word(table, "value", "sum")


def _per_window_and_word(table: pa.Table, column: str, function: str) -> dict[WindowKey, int]:
    """`function` of `column` per (window, word) of `table`."""
    grouped = table.group_by(["window", "word"]).aggregate([(column, function)])
    found = zip(
        grouped["window"].to_pylist(),
        grouped["word"].to_pylist(),
        grouped[f"{column}_{function}"].to_pylist(),
        strict=True,
    )
    return {(window, word): value for window, word, value in found}


class WordCountRun(ScenarioRun):
    """A `ScenarioRun` of the word count: text lines in, per-word aggregates out to a topic."""

    # KafkaIO reads the records' log-append time (the event time of the event-time windows).
    topic_config = MappingProxyType({"message.timestamp.type": "LogAppendTime"})
    entry_class = ENTRY_CLASS  # the users-job jar's manifest names the users' job

    def __init__(self, stack: Stack, run_dir: Path, name: str, settings: WordCountSettings, progress: Progress):
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
        self.input_topic = next(iter(self.topics))
        self.output_topic = f"{self.input_topic}-out"
        self.group = self.input_topic
        bootstrap = stack.kafka.bootstrap
        with self.steps.step(f"create output topic {self.output_topic} ({settings.partitions} partitions)"):
            kafka_client.create_topic(bootstrap, self.output_topic, settings.partitions)
        self.args = [
            f"--bootstrapServers={bootstrap}",
            f"--inputTopic={self.input_topic}",
            f"--outputTopic={self.output_topic}",
            f"--consumer={settings.consumer}",
            f"--groupId={self.group}",
            f"--aggregate={settings.aggregate}",
            f"--eventTime={'true' if settings.event_time else 'false'}",
            f"--windowSeconds={settings.window_seconds}",
        ]

    def record(self, number: int) -> tuple[str, str]:
        return str(number), line(number)

    def ends(self, topic: str) -> dict[int, int]:
        """Each partition's end offset of `topic` now."""
        return {p: o.end for (_, p), o in kafka_client.partition_offsets(self.stack.kafka.bootstrap, topic).items()}

    def input_table(self) -> pa.Table:
        """The input topic's records: partition, offset, value (the line), timestamp."""
        records = kafka_client.read_topic(self.stack.kafka.bootstrap, self.input_topic)
        return pa.table(
            {
                "partition": pa.array([r.partition for r in records], pa.int32()),
                "offset": pa.array([r.offset for r in records], pa.int64()),
                "value": pa.array([(r.value or b"").decode() for r in records], pa.string()),
                "timestamp": pa.array([r.timestamp for r in records], pa.int64()),
            }
        )

    def output_table(self) -> pa.Table:
        """The output topic's records: partition, offset, key (the word), value (its JSON), timestamp."""
        records = kafka_client.read_topic(self.stack.kafka.bootstrap, self.output_topic)
        return pa.table(
            {
                "partition": pa.array([r.partition for r in records], pa.int32()),
                "offset": pa.array([r.offset for r in records], pa.int64()),
                "key": pa.array([(r.key or b"").decode() for r in records], pa.string()),
                "value": pa.array([(r.value or b"").decode() for r in records], pa.string()),
                "timestamp": pa.array([r.timestamp for r in records], pa.int64()),
            }
        )

    def fed_since(self, first: Mapping[int, int]) -> dict[int, tuple[int, int]]:
        """Per partition, the input offsets [first, log end now): what the running job is to aggregate."""
        return {p: (first[p], end) for p, end in self.ends(self.input_topic).items()}

    def wait_for_output(self, job: str, fed: Mapping[int, tuple[int, int]], written_from: Mapping[int, int]) -> int:
        """Wait until the output records the job wrote (at or after `written_from` of each output partition) hold
        the aggregate of the input lines `fed`: their values add up to at least the lines' count or sum, or, for a
        max, name every word; then until checkpoints over 3 s add no output record. The last checkpoint's id."""
        window_ms = self.job.window_seconds * 1000 if self.job.event_time else None
        wanted = words_in(self.input_table(), fed, self.job.aggregate, window_ms)
        total = sum(wanted.values())
        with self.steps.step(
            f"wait for the output of {sum(e - f for f, e in fed.values())} lines, then no growth"
        ) as out:
            seen = [0]

            def arrived() -> bool:
                failure = self.flink.job_exceptions(job)
                if failure:
                    raise ExternalError(f"job {job} failed: {failure.splitlines()[0]}")
                emitted = per_key(self.output_table(), written_from)
                if self.job.aggregate == "max":
                    seen[0] = len(emitted.keys() & wanted.keys())
                    return seen[0] >= len(wanted)
                seen[0] = sum(emitted.values())
                return seen[0] >= total

            poll(
                f"the output of the job {job} in {self.output_topic}",
                arrived,
                timeout=self.settings.timeout,
                interval=1.0,
                last_seen=lambda: f"{seen[0]} of {len(wanted) if self.job.aggregate == 'max' else total}",
            )
            checkpoint = wait_until_settled(
                self.flink,
                job,
                lambda: sum(self.ends(self.output_topic).values()),
                "the output topic",
                self.settings.timeout,
            )
            out.append(f"{seen[0]} in the output; checkpoint {checkpoint}")
        return checkpoint


def run_word_count_scenario(
    stack: Stack, run_dir: Path, jar: Path, variant: str, progress: Progress, settings: WordCountSettings
) -> WordCountReport:
    """Run the word count through a savepoint restore on a running `stack`; everything under `run_dir` (new)."""
    run = WordCountRun(stack, run_dir, f"words-{variant}-{settings.consumer}", settings, progress)
    each = settings.partitions
    # Each job of this 164 MB jar leaves its classes in the TaskManager's metaspace: two fit, more did not.
    with run.steps.step("restart the TaskManager (a fresh metaspace for the scenario's two jobs)"):
        stack.flink.restart_taskmanager()
    start = dict.fromkeys(range(each), 0)
    out_start = run.ends(run.output_topic)
    if settings.consumer == "none":
        # Without a group the readers start at the log end: lines produced before they are placed are never read.
        job_before = run.run_job(jar)
        with run.steps.step("wait for a checkpoint (the readers are placed at the log end)") as out:
            out.append(f"checkpoint {checkpoint_after_now(run.flink, job_before)}")
        run.produce(settings.before * each, what=" (before the savepoint)")
    else:
        run.produce(settings.before * each, what=" (before the savepoint)")
        job_before = run.run_job(jar)
    run.wait_for_output(job_before, run.fed_since(start), out_start)
    sp0_offsets = run.ends(run.input_topic)
    savepoint_before = run.savepoint_and_cancel(job_before)
    bootstrap = stack.kafka.bootstrap
    if settings.commit_at is not None:
        with run.steps.step(f"set the group's committed offsets to {settings.commit_at}"):
            kafka_client.set_committed_offsets(
                bootstrap, run.group, run.input_topic, dict.fromkeys(range(each), settings.commit_at)
            )
    run.produce(settings.down * each, what=" while the job is down")
    group = settings.consumer == "group"
    with run.steps.step("the input's log end and the group's committed offsets before the restore") as out:
        offsets = kafka_client.partition_offsets(bootstrap, run.input_topic, run.group if group else None)
        log_end = {p: o.end for (_, p), o in offsets.items()}
        committed = {p: o.committed for (_, p), o in offsets.items()}
        output_at_restore = run.ends(run.output_topic)
        out.append(f"log end {log_end}, committed {committed}")
    job_after, _ = run.restore(jar, savepoint_before, "restore from SP0")
    run.wait_for_output(job_after, run.fed_since(sp0_offsets), output_at_restore)
    run.produce(settings.after * each, what=" after the restored job runs")
    run.wait_for_output(job_after, run.fed_since(sp0_offsets), output_at_restore)
    sp1_offsets = run.ends(run.input_topic)
    savepoint_after = run.savepoint_and_cancel(job_after)
    with run.steps.step("read both topics back") as out:
        source, sink = run.input_table(), run.output_table()
        out.append(f"{source.num_rows} input records, {sink.num_rows} output records")
    return WordCountReport(
        variant=variant,
        settings=settings,
        jar=str(jar),
        input_topic=run.input_topic,
        output_topic=run.output_topic,
        group=run.group,
        job_id_before=job_before,
        job_id_after=job_after,
        savepoint_before=savepoint_before,
        savepoint_after=savepoint_after,
        sp0_offsets=sp0_offsets,
        log_end_at_restore=log_end,
        committed_at_restore=committed,
        sp1_offsets=sp1_offsets,
        output_at_restore=output_at_restore,
        source=source,
        sink=sink,
        steps=tuple(run.steps.done),
    )
