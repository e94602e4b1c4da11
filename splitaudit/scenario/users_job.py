"""The savepoint restore of a job shaped like the ones users run (beam_pipelines/java/users-job), and the truth
about what it read twice or lost, found without any lineage in its outputs.

The job reads JSON weather records, parses and maps them, and writes one output per input to an output topic
and to Parquet files; neither output carries Kafka coordinates. Every input record's `timestamp` is unique (a
base time plus the record's number in microseconds), so it is the record's identity: each output record is
matched back to the input (partition, offset) carrying the same identity, in Python with pyarrow. That is the
test oracle, independent of splitaudit's Spark audit.

On a real stack, for one jar (stock or patched) and one consumer configuration (`none`, `group`, `earliest`):

1. create the input topic (P partitions) and the output topic;
2. produce N records per partition and run the job at parallelism 2 (with `none` the job starts at the log end,
   so the N are produced once the job runs and a checkpoint completed: its readers are placed by then);
3. wait until both outputs hold the N per partition and a checkpoint interval adds nothing; savepoint, cancel;
4. produce M per partition while the job is down, and ask `guard` (with the topic's offsets) what the restore
   will do;
5. restore from the savepoint (proven through REST), wait until both outputs hold the backlog and a checkpoint
   completed (every reader of the restored job has started by then);
6. produce K per partition; wait until both outputs hold every record and a checkpoint interval adds nothing;
   savepoint, cancel;
7. read the input topic, the output topic and the Parquet files, and count per partition.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq

from splitaudit.clients import kafka as kafka_client
from splitaudit.errors import ExternalError, UsageError
from splitaudit.guard.predict import run_guard
from splitaudit.home import users_job_jars
from splitaudit.polling import poll
from splitaudit.progress import Progress
from splitaudit.scenario.restore import (
    ScenarioRun,
    ScenarioSettings,
    checkpoint_after_now,
    own_stack,
    wait_until_settled,
)
from splitaudit.scenario.users_job_results import (
    CONSUMERS,
    OffsetRange,
    OutputTruth,
    PartitionTruth,
    UsersJobReport,
    offset_runs,
)
from splitaudit.stack.stack import Stack

# The first record's time; record i is this plus i microseconds, so its `timestamp` names it.
BASE_TIME = datetime(2025, 6, 1, tzinfo=UTC)
STATIONS = ("Aberdeen", "Bergen", "Cork", "Dundee", "Esbjerg", "Faro", "Genoa")


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
    """The knobs of the users'-job scenario: records per partition in each phase, the job's consumer."""

    consumer: str = "none"
    partitions: int = 4
    before: int = 500  # N per partition, read by the first job
    down: int = 500  # M per partition, produced while the job is down
    after: int = 500  # K per partition, produced once the restored job runs
    parallelism: int = 2
    lineage: bool = False  # the job adds the lineage kit's columns to its Parquet rows
    timeout: float = 300.0  # for each wait on the outputs


class UsersJobRun(ScenarioRun):
    """A `ScenarioRun` of the users' job: weather records in, an output topic and a Parquet directory out."""

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
        self.input_topic = next(iter(self.topics))
        self.output_topic = f"{self.input_topic}-out"
        self.parquet_dir = run_dir / "parquet"
        bootstrap = stack.kafka.bootstrap
        with self.steps.step(f"create output topic {self.output_topic} ({settings.partitions} partitions)"):
            kafka_client.create_topic(bootstrap, self.output_topic, settings.partitions)
        self.args = [
            f"--bootstrapServers={bootstrap}",
            f"--inputTopic={self.input_topic}",
            f"--outputTopic={self.output_topic}",
            f"--parquetDir={self.parquet_dir}",
            f"--consumer={settings.consumer}",
            f"--groupId={self.input_topic}",
            f"--lineage={'true' if settings.lineage else 'false'}",
        ]

    def record(self, number: int) -> tuple[str, str]:
        return weather_record(number)

    def produce_each(self, per_partition: int, what: str) -> dict[int, OffsetRange | None]:
        """Produce `per_partition` records to each partition; the offsets each partition got."""
        first = {p: self.produced.get((self.input_topic, p), 0) for p in range(self.job.partitions)}
        self.produce(per_partition * self.job.partitions, what=what)
        return {
            p: (first[p], first[p] + per_partition - 1) if per_partition else None for p in range(self.job.partitions)
        }

    def topic_rows(self) -> int:
        """Records in the output topic (its end offsets: the job writes no transactions)."""
        offsets = kafka_client.partition_offsets(self.stack.kafka.bootstrap, self.output_topic)
        return sum(o.end - o.log_start for o in offsets.values())

    def parquet_files(self) -> list[Path]:
        """The Parquet files FileIO finalized (its temporary files live in hidden folders)."""
        return sorted(self.parquet_dir.glob("*.parquet")) if self.parquet_dir.is_dir() else []

    def parquet_rows(self) -> int:
        """Rows of the finalized Parquet files, from their footers."""
        return sum(pq.ParquetFile(path).metadata.num_rows for path in self.parquet_files())

    def output_rows(self) -> int:
        """Rows of both outputs together, for waiting until neither grows."""
        return self.topic_rows() + self.parquet_rows()

    def wait_for_outputs(self, job: str, records: int) -> int:
        """Wait until the output topic holds at least `records` records, the Parquet files as many as the topic
        (their windows lag), and a checkpoint interval adds nothing to either; that checkpoint's id."""
        with self.steps.step(f"wait for {records} records in both outputs, until a checkpoint adds none") as out:
            seen = [0, 0]

            def arrived() -> bool:
                # No failover is part of the scenario: a job that failed once (and restarted) is an error.
                failure = self.flink.job_exceptions(job)
                if failure:
                    raise ExternalError(f"job {job} failed: {failure.splitlines()[0]}")
                seen[:] = [self.topic_rows(), self.parquet_rows()]
                return seen[0] >= records and seen[1] == seen[0]

            poll(
                f"{records} records in {self.output_topic} and as many in {self.parquet_dir}",
                arrived,
                timeout=self.settings.timeout,
                interval=1.0,
                last_seen=lambda: f"{seen[0]} in the topic, {seen[1]} in Parquet",
            )
            checkpoint = wait_until_settled(self.flink, job, self.output_rows, "the outputs", self.settings.timeout)
            out.append(f"{self.topic_rows()} in the topic, {self.parquet_rows()} in Parquet; checkpoint {checkpoint}")
        return checkpoint

    def truth(
        self, phases: dict[str, dict[int, OffsetRange | None]]
    ) -> tuple[tuple[PartitionTruth, ...], tuple[int, int]]:
        """Match both outputs back to the input by each record's `timestamp`; per partition, and the output records
        that match no input record (topic, Parquet)."""
        bootstrap = self.stack.kafka.bootstrap
        identity: dict[str, tuple[int, int]] = {}
        for record in kafka_client.read_topic(bootstrap, self.input_topic):
            stamp = json.loads(record.value or b"{}")["timestamp"]
            if stamp in identity:
                raise ExternalError(
                    f"input records {identity[stamp]} and {record.partition, record.offset} share {stamp}"
                )
            identity[stamp] = (record.partition, record.offset)
        from_topic = Counter(
            json.loads(record.value or b"{}")["timestamp"]
            for record in kafka_client.read_topic(bootstrap, self.output_topic)
        )
        from_parquet = Counter(
            stamp
            for path in self.parquet_files()
            for stamp in pq.read_table(path, columns=["timestamp"])["timestamp"].to_pylist()
        )
        unmatched = tuple(
            sum(n for stamp, n in counts.items() if stamp not in identity) for counts in (from_topic, from_parquet)
        )
        partitions = []
        for partition in range(self.job.partitions):
            produced = self.produced.get((self.input_topic, partition), 0)
            outputs = []
            for counts in (from_topic, from_parquet):
                per_offset = Counter(
                    {offset: counts.get(stamp, 0) for stamp, (p, offset) in identity.items() if p == partition}
                )
                outputs.append(
                    OutputTruth(
                        rows=sum(per_offset.values()),
                        produced_offsets=produced,
                        read_twice=offset_runs(o for o, n in per_offset.items() if n == 2),
                        read_more=offset_runs(o for o, n in per_offset.items() if n > 2),
                        missing=offset_runs(o for o, n in per_offset.items() if n == 0),
                    )
                )
            partitions.append(
                PartitionTruth(
                    partition=partition,
                    before=phases["before"][partition],
                    down=phases["down"][partition],
                    after=phases["after"][partition],
                    topic=outputs[0],
                    parquet=outputs[1],
                )
            )
        return tuple(partitions), (unmatched[0], unmatched[1])


def run_users_job_scenario(
    stack: Stack, run_dir: Path, jar: Path, variant: str, progress: Progress, settings: UsersJobSettings
) -> UsersJobReport:
    """Run the users' job through a savepoint restore on a running `stack`; everything under `run_dir` (new)."""
    if settings.consumer not in CONSUMERS:
        raise UsageError(f"--consumer must be one of {', '.join(CONSUMERS)}, not {settings.consumer!r}")
    run = UsersJobRun(stack, run_dir, f"users-{variant}-{settings.consumer}", settings, progress)
    each = settings.partitions
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
    savepoint_before = run.savepoint_and_cancel(job_before)
    phases["down"] = run.produce_each(settings.down, " while the job is down")
    # What the guard says the restore will do, judged now, as a user would before restoring: the test compares
    # its twin starts with what the restored job then reads twice.
    guard = run_guard(savepoint_before, jar, stack.kafka.bootstrap, None, progress)
    job_after, _ = run.restore(jar, savepoint_before, "restore from the savepoint")
    # Every reader of the restored job (the twin of a stock build too) has started once the backlog is in the
    # outputs and a checkpoint completed after it.
    run.wait_for_outputs(job_after, (settings.before + settings.down) * each)
    phases["after"] = run.produce_each(settings.after, " after the restored job runs")
    run.wait_for_outputs(job_after, (settings.before + settings.down + settings.after) * each)
    savepoint_after = run.savepoint_and_cancel(job_after)
    with run.steps.step("match both outputs to the input records by their timestamp") as out:
        partitions, unmatched = run.truth(phases)
        extra = sum(p.topic.extra_rows for p in partitions)
        missing = sum(p.topic.missing_count for p in partitions)
        out.append(f"output topic: {extra} extra rows, {missing} offsets missing")
    return UsersJobReport(
        variant=variant,
        consumer=settings.consumer,
        lineage=settings.lineage,
        jar=str(jar),
        run_dir=str(run_dir),
        input_topic=run.input_topic,
        output_topic=run.output_topic,
        parquet_dir=str(run.parquet_dir),
        job_id_before=job_before,
        job_id_after=job_after,
        savepoint_before=savepoint_before,
        savepoint_after=savepoint_after,
        records=(settings.before, settings.down, settings.after),
        partitions=partitions,
        unmatched_rows=unmatched,
        steps=tuple(run.steps.done),
        guard=guard,
    )


def run_users_job_with_own_stack(
    run_dir: Path, variant: str, progress: Progress, settings: UsersJobSettings, keep_stack: bool
) -> UsersJobReport:
    """Bring a stack up in `<run_dir>/stack`, run the users'-job scenario in `<run_dir>/<variant>`, bring it down."""
    jar = users_job_jar(variant)
    with own_stack(run_dir, progress, keep_stack) as stack:
        return run_users_job_scenario(stack, run_dir / variant, jar, variant, progress, settings)
