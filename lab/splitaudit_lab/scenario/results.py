"""Result of the restore scenario (`splitaudit scenario`), rendered by an Output."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from splitaudit.audit.checks.findings import (
    DOUBLE_ASSIGNMENT,
    DOUBLE_ASSIGNMENT_KINDS,
    NEW_PARTITION,
    REPLAY,
    UNASSIGNED,
    Findings,
)
from splitaudit.guard.results import GuardReport, WatchReport
from splitaudit.progress import TimedStep

# The faults `scenario --fault` causes; here, beside the results, so the command line names them without
# importing the scenario's Kafka, Flink and pyarrow code.
TASKMANAGER_KILL = "taskmanager-kill"
BROKER_RESTART = "broker-restart"
JOBMANAGER_KILL = "jobmanager-kill"
FAULTS = (TASKMANAGER_KILL, BROKER_RESTART, JOBMANAGER_KILL)
# KafkaIO's reads `python-scenario --read` chooses: the legacy UnboundedSource (use_deprecated_read, in Beam's
# UnboundedSourceWrapper) or the splittable DoFn.
READS = ("deprecated", "sdf")


@dataclass(frozen=True)
class PartitionCounts:
    """What the auditor found in the sink for one partition, against the offsets the scenario produced."""

    topic: str
    partition: int
    expected_records: int  # offsets 0 .. expected_records-1 exist in the topic
    sink_rows: int
    duplicate_rows: int  # sink rows minus distinct (topic, partition, offset) keys
    missing_offsets: int  # produced offsets absent from the sink
    double_read_offsets: int  # extra rows of offsets two readers emitted within one generation (double assignment)
    replayed_offsets: int  # extra rows of offsets emitted again in another generation (replay)

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "expected_records": self.expected_records,
            "sink_rows": self.sink_rows,
            "duplicate_rows": self.duplicate_rows,
            "missing_offsets": self.missing_offsets,
            "double_read_offsets": self.double_read_offsets,
            "replayed_offsets": self.replayed_offsets,
        }


def partition_counts(findings: Findings, expected: dict[tuple[str, int], int]) -> tuple[PartitionCounts, ...]:
    """Per-partition counts from an audit of the sink, for topics whose partition (t, p) holds offsets
    0..expected[t, p]-1 (the scenario's topics are fresh and dense, so distinct sink offsets are all in range),
    in the order of `expected`'s topics, then by partition."""
    coverage = {(c.topic, c.partition): c for c in findings.coverage}
    order = {topic: index for index, topic in enumerate(dict.fromkeys(topic for topic, _ in expected))}

    def extra(kind: str, topic: str, partition: int) -> int:
        return sum(f.count for f in findings.findings if (f.kind, f.topic, f.partition) == (kind, topic, partition))

    counts = []
    for (topic, partition), records in sorted(expected.items(), key=lambda item: (order[item[0][0]], item[0][1])):
        c = coverage.get((topic, partition))
        counts.append(
            PartitionCounts(
                topic=topic,
                partition=partition,
                expected_records=records,
                sink_rows=0 if c is None else c.rows,
                duplicate_rows=0 if c is None else c.duplicates,
                missing_offsets=records - (0 if c is None else c.distinct),
                double_read_offsets=extra(DOUBLE_ASSIGNMENT, topic, partition),
                replayed_offsets=extra(REPLAY, topic, partition),
            )
        )
    return tuple(counts)


@dataclass(frozen=True)
class ScenarioReport:
    """One restore scenario run of one job jar (stock or patched): where everything is and what the sink holds."""

    variant: str  # "stock" | "patched" | a user's label for --jar
    # "savepoint": cancel and restore; "taskmanager-kill": kill -9 the TaskManager, Flink fails over;
    # "broker-restart": the Kafka broker stopped and started again; "jobmanager-kill": kill -9 the JobManager,
    # the job resubmitted from its latest retained checkpoint
    restart: str
    continuous: bool  # records produced all along, through the savepoint, the cancellation and the restore
    parallelism: int  # of the first job
    restore_parallelism: int  # of the job after the restore (the same as `parallelism` for a fault)
    jar: str
    run_dir: str
    topics: tuple[str, ...]  # the topics the job reads
    job_id_before: str
    job_id_after: str  # the same job as job_id_before unless the job was restored from state
    savepoint_before: str  # for a fault: the checkpoint the job restarted from, or the last one before the fault
    savepoint_after: str
    sink_path: str
    sink_format: str
    expected_records: int
    records_per_second: float  # records read after the restore / seconds from restore to all in the sink
    partitions: tuple[PartitionCounts, ...]
    steps: tuple[TimedStep, ...]
    audit: Findings  # `splitaudit audit` of the sink, the savepoint after and (after a restore) the one before

    @property
    def double_assigned(self) -> tuple[tuple[str, int], ...]:
        """The (topic, partition)s the auditor reports as assigned twice (in the sink or in the savepoint), in the
        order of `partitions`."""
        found = {
            (f.topic, f.partition)
            for f in self.audit.findings
            if f.kind in DOUBLE_ASSIGNMENT_KINDS and f.topic is not None and f.partition is not None
        }
        return tuple((p.topic, p.partition) for p in self.partitions if (p.topic, p.partition) in found)

    @property
    def sink_rows(self) -> int:
        return sum(p.sink_rows for p in self.partitions)

    @property
    def duplicate_rows(self) -> int:
        return sum(p.duplicate_rows for p in self.partitions)

    @property
    def missing_offsets(self) -> int:
        return sum(p.missing_offsets for p in self.partitions)

    @property
    def double_read_offsets(self) -> int:
        return sum(p.double_read_offsets for p in self.partitions)

    @property
    def replayed_offsets(self) -> int:
        return sum(p.replayed_offsets for p in self.partitions)

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "restart": self.restart,
            "continuous": self.continuous,
            "parallelism": self.parallelism,
            "restore_parallelism": self.restore_parallelism,
            "jar": self.jar,
            "run_dir": self.run_dir,
            "topics": list(self.topics),
            "job_id_before": self.job_id_before,
            "job_id_after": self.job_id_after,
            "savepoint_before": self.savepoint_before,
            "savepoint_after": self.savepoint_after,
            "sink_path": self.sink_path,
            "sink_format": self.sink_format,
            "expected_records": self.expected_records,
            "records_per_second": self.records_per_second,
            "partitions": [p.to_json() for p in self.partitions],
            "steps": [step.to_json() for step in self.steps],
            "audit": self.audit.to_json(),
            "sink_rows": self.sink_rows,
            "duplicate_rows": self.duplicate_rows,
            "missing_offsets": self.missing_offsets,
            "double_read_offsets": self.double_read_offsets,
            "replayed_offsets": self.replayed_offsets,
        }


@dataclass(frozen=True)
class DemoReport:
    """`splitaudit demo`: the restore scenario with the stock and with the patched jar, on one stack; with
    partitions added to the topic while the job was down, also with the upstream fix's jar (Beam 2.70.0)."""

    run_dir: str
    seconds: float
    stock: ScenarioReport
    patched: ScenarioReport
    added_partitions: int = 0  # partitions added to each topic between the savepoint and the restore
    upstream_fix: ScenarioReport | None = None  # Beam 2.70.0's run, when partitions were added

    @property
    def sides(self) -> tuple[ScenarioReport, ...]:
        """The runs in the order they ran and are shown: stock, the upstream fix (when it ran), patched."""
        return tuple(side for side in (self.stock, self.upstream_fix, self.patched) if side is not None)

    def added(self, side: ScenarioReport) -> frozenset[tuple[str, int]]:
        """The (topic, partition)s of one side's run (each run has topics of its own) added while the job was
        down: the highest `added_partitions` of each topic."""
        counts = {topic: sum(1 for p in side.partitions if p.topic == topic) for topic in side.topics}
        return frozenset((t, p) for t, n in counts.items() for p in range(n - self.added_partitions, n))

    @property
    def as_expected(self) -> bool:
        """The auditor's verdict shows the bug and the fix: stock double-assigns, patched is clean. With added
        partitions: stock double-assigns the partitions it had before (and reads the added ones once), the
        upstream fix never reads the added ones (`partition_unassigned`, nothing read twice), and patched reads
        every offset once, its only findings the added partitions appearing (`partition_new`, info)."""
        if not self.added_partitions:
            return bool(self.stock.double_assigned) and not self.patched.audit.findings
        stock, upstream, patched = self.stock, self.upstream_fix, self.patched
        return (
            set(stock.double_assigned) == {(p.topic, p.partition) for p in stock.partitions} - self.added(stock)
            and upstream is not None
            and _partitions_of(upstream, UNASSIGNED) == self.added(upstream)
            and not upstream.double_assigned
            and upstream.duplicate_rows == 0
            and patched.missing_offsets == 0
            and patched.duplicate_rows == 0
            and all(f.kind == NEW_PARTITION for f in patched.audit.findings)
            and _partitions_of(patched, NEW_PARTITION) == self.added(patched)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "run_dir": self.run_dir,
            "seconds": self.seconds,
            "as_expected": self.as_expected,
            "stock": self.stock.to_json(),
            "patched": self.patched.to_json(),
            "added_partitions": self.added_partitions,
            "upstream_fix": None if self.upstream_fix is None else self.upstream_fix.to_json(),
        }


def _partitions_of(report: ScenarioReport, kind: str) -> frozenset[tuple[str, int]]:
    """The (topic, partition)s of the auditor's findings of one kind on a scenario run."""
    return frozenset(
        (f.topic, f.partition)
        for f in report.audit.findings
        if f.kind == kind and f.topic is not None and f.partition is not None
    )


@dataclass(frozen=True)
class MatrixRun:
    """One (Beam release, Flink version, variant) of the real-cluster matrix and what it is expected to show."""

    beam_version: str
    flink_version: str
    variant: str  # "stock", "patched" (built by Maven) or "patch-jar" (the stock jar after `splitaudit patch-jar`)
    affected: bool  # a stock jar of an affected release: every partition read twice after the restore
    report: ScenarioReport

    @property
    def as_expected(self) -> bool:
        """Affected: double assignment of every partition; otherwise the auditor finds nothing at all."""
        if self.affected:
            return self.report.double_assigned == tuple((p.topic, p.partition) for p in self.report.partitions)
        return not self.report.audit.findings

    def to_json(self) -> dict[str, Any]:
        return {
            "beam_version": self.beam_version,
            "flink_version": self.flink_version,
            "variant": self.variant,
            "affected": self.affected,
            "as_expected": self.as_expected,
            "report": self.report.to_json(),
        }


@dataclass(frozen=True)
class MatrixReport:
    """`splitaudit matrix`: the restore scenario for every Beam release and variant, each on its own Flink."""

    run_dir: str
    seconds: float
    runs: tuple[MatrixRun, ...]

    @property
    def as_expected(self) -> bool:
        return all(run.as_expected for run in self.runs)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_dir": self.run_dir,
            "seconds": self.seconds,
            "as_expected": self.as_expected,
            "runs": [run.to_json() for run in self.runs],
        }


@dataclass(frozen=True)
class WatchedRestore:
    """One watched restore: the watch's report, timings and what the restored job wrote to the sink by the end."""

    variant: str
    backlog: int  # records produced while the job was down
    submitted: float  # seconds from the watch's start (before the submission) to submitting the restore
    watch: WatchReport
    restored_rows: int  # sink rows of the restored job when the watch ended
    restored_offsets: int  # distinct (partition, offset) among them

    @property
    def read_twice(self) -> int:
        return self.restored_rows - self.restored_offsets

    @property
    def since_restore(self) -> dict[str, float | None]:
        """Each stage of the watch's timeline in seconds from submitting the restore (None: not reached)."""
        stages = self.watch.timeline.to_json()
        return {k: None if v is None else round(v - self.submitted, 3) for k, v in stages.items()}

    @property
    def restore_seconds(self) -> float | None:
        """From submitting the restore until Flink's REST API listed the restored job."""
        return self.since_restore["listed"]

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "backlog": self.backlog,
            "restore_seconds": self.restore_seconds,
            "restore_to_end_seconds": round(self.watch.seconds - self.submitted, 3),
            "since_restore": self.since_restore,
            "watch": self.watch.to_json(),
            "restored_rows": self.restored_rows,
            "restored_offsets": self.restored_offsets,
            "read_twice": self.read_twice,
        }


@dataclass(frozen=True)
class WatchedLife:
    """A restored job watched through its whole life, to the end the scenario gave it (stopped with a savepoint
    or cancelled, after a fault or not), beside the truth counted in its sink."""

    variant: str
    end: str  # stop (with a savepoint), cancel, jobmanager-kill, or finish (bounded input)
    fault: str | None  # taskmanager-kill (idle), taskmanager-kill-mid-read, jobmanager-failover or rescale, or None
    watch: WatchReport
    # Per partition of the job's topic, the restored job's records read twice as its sink shows them: per attempt,
    # its rows minus its distinct offsets (a restart's replay of what the attempt before it read is not counted),
    # an attempt that ended by a restart over its rows of offsets below those the next attempt resumed from; after
    # a failover or rescale, over the whole job (`scenario.recovered`).
    read_twice: dict[int, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "end": self.end,
            "fault": self.fault,
            "watch": self.watch.to_json(),
            "read_twice": {str(p): n for p, n in self.read_twice.items()},
        }


@dataclass(frozen=True)
class GuardedRestore:
    """`scenario --guard`: the guard's verdict on the restore and, when it let it through or was forced, the
    watched restore."""

    variant: str
    guard: GuardReport
    forced: bool
    restore: WatchedRestore | None  # None: the guard refused the restore

    @property
    def exit_code(self) -> int:
        """1 when the guard refused the restore or the watch found an error, else 0."""
        if self.restore is None:
            return self.guard.exit_code
        return self.restore.watch.exit_code

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "guard": self.guard.to_json(),
            "forced": self.forced,
            "restore": None if self.restore is None else self.restore.to_json(),
        }
