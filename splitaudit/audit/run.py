"""The `audit` and `diff` commands' work: read the inputs, run the checks, assemble one `Findings`.

Spark starts only for what needs it: a sink, or a Kafka topic read through Spark's Kafka source. The savepoint
checks run on the driver over the savepoint's small tables, so a savepoint-only audit and `diff` start no JVM.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from splitaudit.audit.checks.assignment import AssignmentCheck, PartitionList, check_assignment
from splitaudit.audit.checks.bounded_sources import explain_finished_bounded
from splitaudit.audit.checks.findings import (
    DOUBLE_ASSIGNMENT_KINDS,
    MISSING_PARTITION_KINDS,
    REWIND,
    AggregateTotals,
    Finding,
    Findings,
    SinkFile,
    Summary,
)
from splitaudit.audit.checks.inference import RestoreEvidence, infer_classes
from splitaudit.audit.checks.ledger import (
    Ledger,
    Rewrites,
    check_ledger,
    closure,
    find_rewrites,
    ledger_of,
    windows_after,
)
from splitaudit.audit.checks.offsets import check_offsets, sink_next_offsets
from splitaudit.audit.checks.recreated_topics import check_recreated
from splitaudit.audit.checks.removed_topics import check_removed_topics
from splitaudit.audit.checks.rewind import check_rewind
from splitaudit.audit.checks.savepoint_tables import SavepointTables, savepoint_tables
from splitaudit.audit.request import AuditRequest, DiffRequest
from splitaudit.errors import UsageError
from splitaudit.patch.jar import read_jar_facts
from splitaudit.progress import Progress
from splitaudit.savepoint.fileio import SavepointOptions, list_tree, metadata_written_at

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from splitaudit.audit.passes.parquet_pass import ParquetFiles
    from splitaudit.audit.passes.sink import SinkAudit

DENSE_NOTE = (
    "gaps are judged between each partition's lowest and highest sink offset, assuming dense offsets "
    "(no access to the source topic): transaction markers or compaction would show up as missing"
)


def run_audit(request: AuditRequest, progress: Progress) -> Findings:
    """Audit what was given: the savepoint's assignment (and its rewinds against --before), the sink's duplicates and
    gaps, the sink records past the savepoint's next offsets and, with --bootstrap, the topic's own offsets (real
    gaps, expired records, committed group offsets, lag). The request was checked when it was made: what is left to
    refuse here depends on what the savepoint holds.

    The savepoints are read first (bad input fails with its file and byte offset before anything else), then each of
    `STEPS` runs in turn; every step returns its findings and notes (`Outcome`), and the findings are reported in
    `FINDINGS_ORDER`, the savepoint's own first; a bounded source's splits read to their end between --before and
    --savepoint then explain the partitions they would show as dropped or unassigned (`bounded_sources`). `progress`
    is told each step as it runs (`Progress()` reports nothing; the CLI's `ConsoleProgress` prints them). Spark
    starts (or the active session is taken) only for a sink or a topic read through Spark's Kafka source: a
    savepoint-only audit runs on the driver. Raises UsageError (the CLI's exit 2) for what the savepoint makes
    impossible, and InputError naming the file and byte offset of a savepoint it cannot read. Returns every finding,
    with the coverage, assignment and notes they were judged on; `exit_code` says whether any is an error."""
    run = AuditRun(request, progress)
    outcomes = {name: step(run) for name, step in STEPS}
    findings = [f for name in FINDINGS_ORDER for f in outcomes[name].findings]
    if run.before is not None and run.savepoint is not None:  # what a bounded source's finished splits explain
        findings = explain_finished_bounded(run.before, run.savepoint, findings)
    notes = [n for outcome in outcomes.values() for n in outcome.notes]
    return _findings(findings, run.sink_audit, run.assignment, notes, run.ledger_files, run.aggregate)


@dataclass(frozen=True)
class Outcome:
    """What one step of an audit found, and what it says of how it judged (the notes)."""

    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()


NOTHING = Outcome()


class AuditRun:
    """One audit as its steps run: what the request gives, read before any step (both savepoints' tables, the
    restore they are evidence of, the source topics' cluster), the Spark session the first step that needs one
    starts, and what a step makes for the later ones: the sink's file ledger, the sink's audit, the assignment
    check and the reconciled aggregates."""

    def __init__(self, request: AuditRequest, progress: Progress) -> None:
        self.request = request
        self.progress = progress
        self.savepoint = (
            None if not request.savepoint else _load(request.savepoint, request.savepoint_options, progress)
        )
        self.before = None if not request.before else _load(request.before, request.savepoint_options, progress)
        self.evidence = _restore_evidence(request, self.before)
        self.kafka = None
        if request.bootstrap:
            self.kafka = KafkaSource(request.bootstrap, _required_topics(request, self.savepoint, "--bootstrap"))
        self.ledger: Ledger | None = None
        self.sink_audit: SinkAudit | None = None
        self.assignment: AssignmentCheck | None = None
        self.aggregate: AggregateTotals | None = None
        self._spark: SparkSession | None = None

    @property
    def spark(self) -> SparkSession:
        """The session the sink's steps run on, started when first asked for."""
        if self._spark is None:
            self._spark = _spark(self.request, self.progress)
        return self._spark

    @property
    def ledger_files(self) -> tuple[SinkFile, ...]:
        return () if self.ledger is None else self.ledger.files


def _ledger_step(run: AuditRun) -> Outcome:
    """A file sink's names as a ledger (`checks.ledger`): files of one window written twice, temporary files left
    behind. Not for a topic, a single file, or aggregates (reconciled by key, not by file)."""
    request = run.request
    if not request.sink or request.sink_format == "kafka" or _is_local_file(request.sink) or request.aggregate:
        return NOTHING
    with run.progress.step(f"read the file names of {request.sink}"):
        run.ledger = ledger_of(list_tree(request.sink), request.naming)
        return Outcome(tuple(check_ledger(run.ledger)))


def _aggregate_step(run: AuditRun) -> Outcome:
    """An aggregating sink (--aggregate): reconciled with the source between --before and --savepoint, or, for an
    aggregate a double read leaves as it was, said to be unauditable (nothing read, no Spark)."""
    aggregate = run.request.aggregate
    if aggregate is None:
        return NOTHING
    if not aggregate.auditable:
        from splitaudit.audit.passes.aggregate import unauditable

        return Outcome((unauditable(aggregate),))
    from splitaudit.audit.passes.aggregate_sink import reconcile_sink

    # AuditRequest: --aggregate comes with --sink, --bootstrap, --before and --savepoint
    assert run.before is not None
    assert run.savepoint is not None
    assert run.kafka is not None
    with run.progress.step(f"reconcile the aggregates of {run.request.sink} with {run.kafka.named}"):
        reconciled = reconcile_sink(run.spark, run.request, run.before, run.savepoint, run.kafka.topics)
    run.aggregate = reconciled.totals
    return Outcome(tuple(reconciled.findings), tuple(reconciled.notes))


def _sink_step(run: AuditRun) -> Outcome:
    """The sink's records: duplicates and gaps per partition (judged against the source's offsets with
    --bootstrap, else assuming dense offsets), the windows a restored job wrote again (a windowed file sink), and
    the records past the savepoint's next offsets."""
    request = run.request
    if not request.sink or request.aggregate is not None:
        return NOTHING
    findings: list[Finding] = []
    with (
        run.progress.step(f"audit the {request.sink_format} sink {request.sink}"),
        _judged_sink(run.spark, request, run.kafka) as judged,
    ):
        sink_audit = run.sink_audit = _audit_judged(judged, request, run.savepoint, run.evidence)
        findings += judged.findings + sink_audit.findings
        gaps = DENSE_NOTE if run.kafka is None else run.kafka.gaps_note
        notes = [*judged.notes, gaps, sink_audit.lineage.note]
        if run.ledger is not None and run.ledger.windowed:
            with run.progress.step("count the rows of each file and find the windows written again"):
                found, said = _judge_rewrites(run, judged)
            findings += found
            notes += said
        if run.savepoint is not None:
            from splitaudit.audit.passes.replay import check_past_savepoint

            with run.progress.step("find sink records past the savepoint's next offsets"):
                findings += check_past_savepoint(judged.sink, run.savepoint, exactly_once=request.exactly_once)
    return Outcome(tuple(findings), tuple(notes))


def _assignment_step(run: AuditRun) -> Outcome:
    """The savepoint's partition assignment: partitions held twice, held by nobody, pending and held at once,
    against the topics' partitions as the best evidence at hand lists them (`_partition_list`)."""
    if run.savepoint is None:
        return NOTHING
    with run.progress.step("check the savepoint's partition assignment"):
        partitions = _partition_list(run.request, run.kafka, run.savepoint, run.sink_audit)
        run.assignment = check_assignment(run.savepoint, partitions)
    return Outcome(run.assignment.findings)


def _rewind_step(run: AuditRun) -> Outcome:
    """--before against --savepoint: partitions whose position went backwards, dropped or new; with
    --subscription, the topics the restored job no longer subscribes to that its readers still read."""
    if run.before is None or run.savepoint is None:
        return NOTHING
    with run.progress.step("compare with the earlier savepoint"):
        findings = check_rewind(run.before, run.savepoint)
        if run.request.subscription:
            findings = check_removed_topics(run.before, run.savepoint, run.request.subscription) + findings
        return Outcome(findings)


def _offsets_step(run: AuditRun) -> Outcome:
    """With --bootstrap, the topics' own offsets: records expired before they were read, the group's committed
    offsets and lag, against where the savepoint resumes and what the sink processed."""
    if run.kafka is None:
        return NOTHING
    from splitaudit.clients.kafka import topics_offsets

    kafka = run.kafka
    with run.progress.step(f"compare with the offsets of {kafka.named} at {kafka.bootstrap}"):
        offsets = topics_offsets(kafka.bootstrap, kafka.topics, run.request.group)
        resume = {} if run.savepoint is None else run.savepoint.resume_offsets
        processed = {} if run.sink_audit is None else sink_next_offsets(run.sink_audit.coverage)
        findings = check_offsets(offsets, resume, processed, run.request.group)
        if run.before is not None:  # a topic re-created behind the savepoints: their offsets past its log end
            findings += check_recreated(offsets, run.before.resume_offsets, resume)
        return Outcome(tuple(findings))


# The steps in the order they run: each may use what an earlier one made (the sink's audit lists the partitions
# the assignment check judges when nothing better does, the ledger tells the sink step which windows to judge).
STEPS: tuple[tuple[str, Callable[[AuditRun], Outcome]], ...] = (
    ("ledger", _ledger_step),
    ("aggregate", _aggregate_step),
    ("sink", _sink_step),
    ("assignment", _assignment_step),
    ("rewind", _rewind_step),
    ("offsets", _offsets_step),
)
# The order findings are reported in: the savepoint's own first, then the sink's, then the topic's. Notes keep the
# order the steps ran in.
FINDINGS_ORDER = ("rewind", "assignment", "ledger", "aggregate", "sink", "offsets")


def _is_local_file(path: str) -> bool:
    """A local path naming one file (a sink of one file has no ledger to read)."""
    return len(urlparse(path).scheme) <= 1 and Path(path).is_file()


def _judge_rewrites(run: AuditRun, judged: JudgedSink) -> tuple[list[Finding], list[str]]:
    """The ledger's rows per file and, with --before, the windows the restored job wrote again and, with the
    source topics (--bootstrap), the records those rewrites held once though read twice, or lost. The run's ledger
    becomes the one with rows counted and rewritten files marked."""
    from splitaudit.audit.passes.sink_files import read_files
    from splitaudit.audit.passes.windows import count_rows

    request, before, kafka = run.request, run.before, run.kafka
    assert request.sink is not None
    assert run.ledger is not None
    files = read_files(run.spark, request.sink, request.sink_format)
    run.ledger = count_rows(files, run.ledger, request.sink)
    notes = [f"the sink's file ledger reads {run.ledger.naming}: {len(run.ledger.files)} files"]
    if before is None:
        return [], [*notes, "give --before (the savepoint the job was restored from) to find rewritten windows"]
    records = None
    if kafka is not None:
        from splitaudit.audit.passes.kafka_topic import read_topics

        records = read_topics(run.spark, kafka.bootstrap, kafka.topics)
    rewrites = _rewrites(run, before, records)
    run.ledger = rewrites.ledger
    findings = list(rewrites.findings)
    notes += rewrites.notes
    if rewrites.windows and records is None:
        notes.append("the records of the rewritten windows are not counted: give --bootstrap to read the source")
    elif rewrites.windows and records is not None:
        from splitaudit.audit.passes.rewrites import check_rewrites

        findings += check_rewrites(judged.sink, records, rewrites.windows, before.resume_offsets, before.path)
    return findings, notes


def _rewrites(run: AuditRun, before: SavepointTables, records: DataFrame | None) -> Rewrites:
    """The windows written after `before` that hold records read before it (with the source; else those
    starting before its time), each judged closed or open at it by the savepoint's evidence (`window_evidence`),
    or by --watermark-delay when given."""
    from splitaudit.audit.checks import window_evidence as evidence

    request, kafka, ledger = run.request, run.kafka, run.ledger
    assert ledger is not None
    savepoint, written_at, resume = before.path, metadata_written_at(before.path), before.resume_offsets
    after = windows_after(ledger, written_at)
    if records is not None:
        from splitaudit.audit.passes.windows import windows_read_before

        held = windows_read_before(records, after, resume)
    else:
        held = frozenset(w for w in after if w[0] / 1000 < written_at)
    if request.watermark_delay is not None:  # the override: the savepoint's own evidence is not read
        last_read = None if kafka is None else _last_read(kafka.bootstrap, resume, written_at)
        override = closure(savepoint, written_at, request.watermark_delay, last_read)
        verdicts = evidence.judge_windows(held, evidence.NOT_READ, evidence.NO_POLICY, override.closed_by)
        said = override.basis
    else:
        state = evidence.state_windows(savepoint, request.savepoint_options)
        policy = evidence.policy_watermark(savepoint, request.savepoint_options)
        verdicts = evidence.judge_windows(held, state, policy, None)
        said = evidence.describe_evidence(savepoint, state, policy)
    if records is None:
        said += (
            "; without the source (--bootstrap), a window written after the savepoint is judged when it starts "
            "before the savepoint's time"
        )
    return find_rewrites(ledger, savepoint, written_at, verdicts, said)


def _last_read(
    bootstrap: str, resume: dict[tuple[str, int], int], written_at: float
) -> dict[tuple[str, int], int | None]:
    """Per partition the savepoint resumes: None when it had read every record appended before the savepoint's
    time, else the Kafka time (ms) of the last record it had read (0 when it had read none)."""
    from splitaudit.clients.kafka import offsets_for_time, partition_offsets, record_times

    later: dict[tuple[str, int], int | None] = {}
    ends: dict[tuple[str, int], int] = {}
    for topic in sorted({t for t, _ in resume}):
        later |= offsets_for_time(bootstrap, topic, int(written_at * 1000))
        ends |= {tp: o.end for tp, o in partition_offsets(bootstrap, topic).items()}
    behind = {tp: offset for tp, offset in resume.items() if offset < _first_after(tp, later, ends, offset)}
    times = record_times(bootstrap, [(t, p, offset - 1) for (t, p), offset in behind.items() if offset > 0])
    return {tp: (times.get((*tp, behind[tp] - 1), 0) if tp in behind else None) for tp in resume}


def _first_after(
    tp: tuple[str, int], later: dict[tuple[str, int], int | None], ends: dict[tuple[str, int], int], default: int
) -> int:
    """The first offset appended at or after the savepoint's time: the log end when none is."""
    first = later.get(tp)
    return ends.get(tp, default) if first is None else first


@dataclass(frozen=True)
class JudgedSink:
    """The sink in the shape the sink checks take (topic, partition, offset + lineage), the source offsets it is
    judged against (None: dense offsets assumed), and what reading it that way found or should say."""

    sink: DataFrame
    source: DataFrame | None
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    files: ParquetFiles | None = None  # the sink's own Parquet files, which pass 1 may read itself


@contextmanager
def _judged_sink(spark: SparkSession, request: AuditRequest, kafka: KafkaSource | None) -> Iterator[JudgedSink]:
    """The sink with its own coordinates, or, with --sink-key/--match-payload, mapped to the source records
    whose identity its rows carry (`identity.map_to_source`), kept while the block runs."""
    from splitaudit.audit.passes.kafka_topic import read_topics, source_offsets, topic_records

    assert request.sink is not None
    if request.identity is None:
        from splitaudit.audit.passes.parquet_pass import parquet_files
        from splitaudit.audit.passes.sink_files import PARSED_FORMATS

        source = None if kafka is None else source_offsets(spark, kafka.bootstrap, kafka.topics)
        sink = _read_sink(spark, request, request.sink)
        if request.sink_format not in PARSED_FORMATS:
            yield JudgedSink(sink, source, files=parquet_files(sink, request.sink_format, request.columns))
            return
        # each check scans the sink again: a text format is parsed once, into Spark's cache (memory, then disk)
        sink = sink.persist()
        try:
            yield JudgedSink(sink, source)
        finally:
            sink.unpersist()
        return
    from splitaudit.audit.passes.identity import map_to_source

    assert kafka is not None  # AuditRequest: an identity needs the source topics' cluster
    records = read_topics(spark, kafka.bootstrap, kafka.topics, headers=True)
    raw = _read_raw_sink(spark, request, request.sink)
    held = topic_records(kafka.bootstrap, kafka.topics)
    with map_to_source(raw, records, kafka.topics, request.identity, records=held) as mapping:
        yield JudgedSink(mapping.sink, mapping.source, mapping.findings, (mapping.note,))


def _audit_judged(
    judged: JudgedSink, request: AuditRequest, savepoint: SavepointTables | None, evidence: RestoreEvidence | None
) -> SinkAudit:
    """The sink checks, then, for a sink without lineage restored from --before, its duplicates classified by
    evidence (`inference`)."""
    from splitaudit.audit.passes.sink import SinkAudit, audit_sink

    topics = frozenset(_source_topics(request, savepoint))
    audit = audit_sink(
        judged.sink, exactly_once=request.exactly_once, source=judged.source, source_topics=topics, files=judged.files
    )
    if evidence is None or audit.lineage.classified:
        return audit
    inferred = infer_classes(audit.findings, audit.coverage, evidence, request.exactly_once)
    return SinkAudit(audit.coverage, inferred, audit.lineage)


def _restore_evidence(request: AuditRequest, before: SavepointTables | None) -> RestoreEvidence | None:
    """What --before (and --jar) say of the restore the sink went through; read before Spark starts."""
    if before is None:
        return None
    jar = None if request.jar is None else read_jar_facts(Path(request.jar))
    return RestoreEvidence(
        before.resume_offsets,
        before.path,
        None if jar is None else jar.label,
        None if jar is None else jar.rereads_restored_splits,
    )


@dataclass(frozen=True)
class KafkaSource:
    """The source topics and their cluster, when --bootstrap makes them reachable."""

    bootstrap: str
    topics: tuple[str, ...]

    @property
    def named(self) -> str:
        return ("topic " if len(self.topics) == 1 else "topics ") + ", ".join(self.topics)

    @property
    def gaps_note(self) -> str:
        return (
            f"gaps are judged against the offsets that exist in {self.named} at {self.bootstrap} (read "
            "committed): transaction markers, aborted records and compaction are not loss"
        )


def run_diff(request: DiffRequest, progress: Progress) -> Findings:
    """`diff SP0 SP1`: rewinds, dropped and new partitions between two savepoints of one job."""
    earlier = _load(request.before, request.savepoint_options, progress)
    later = _load(request.after, request.savepoint_options, progress)
    with progress.step("compare the two savepoints"):
        return _findings(list(check_rewind(earlier, later)), None, None, [])


def _spark(request: AuditRequest, progress: Progress) -> SparkSession:
    """A session for the sink audit: Spark's Kafka connector only when a topic is read through it (a sink topic,
    or the source topic's offsets with --bootstrap), and as many shuffle partitions as the sink's size needs."""
    from splitaudit.clients.spark import DRIVER_JAVA_OPTIONS, spark_session

    size = _local_size(request.sink) if request.sink_format != "kafka" else None
    config = {}
    if size is not None:  # a local sink: its files are listed on the driver, without a Spark job
        shuffle = max(MIN_SHUFFLE, min(MAX_SHUFFLE, -(-size // SHUFFLE_BYTES)))
        config = {"spark.sql.shuffle.partitions": str(shuffle), LISTING_THRESHOLD: str(LOCAL_LISTING)}
        if size <= QUICK_BYTES:
            config[DRIVER_JAVA_OPTIONS] = QUICK_JIT
    with progress.step(f"start Spark ({request.master})"):
        spark = spark_session(
            request.master,
            app_name="splitaudit-audit",
            kafka=request.bootstrap is not None,
            avro=request.sink_format == "avro",
            config=config,
        )
        spark.sparkContext.setLogLevel("ERROR")
    return spark


# One shuffle partition per this many bytes of sink files (Spark's own advisory partition size), at least the
# default parallelism of a laptop and at most Spark's default of 200: a 10,000-row sink is not cut in 200.
SHUFFLE_BYTES = 64 << 20
MIN_SHUFFLE, MAX_SHUFFLE = 4, 200
# Spark lists more paths than this (32) with a job of its own (the JSON and CSV readers pass every file of a sink as
# a path to infer the schema from): worth it on a remote store, a second of overhead on a local disk.
LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
LOCAL_LISTING = 1 << 20
# A sink this small is audited in seconds, which a new JVM spends mostly compiling Spark's code: its driver
# compiles with the quick compiler only (C1), which starts sooner and never reaches the peak speed that a long
# scan needs (measured on the demo's 15 MB JSON sink: 10.5 s to 8.0 s, Spark's start 4.1 s to 3.2 s).
QUICK_BYTES = SHUFFLE_BYTES
QUICK_JIT = "-XX:TieredStopAtLevel=1"


def _local_size(sink: str | None) -> int | None:
    """The bytes of a local sink's files; None for a URI (or no sink)."""
    if sink is None or len(urlparse(sink).scheme) > 1:
        return None
    path = Path(sink)
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(os.path.getsize(p) for p in files)


def _load(path: str, options: SavepointOptions, progress: Progress) -> SavepointTables:
    with progress.step(f"read the savepoint {path}"):
        return savepoint_tables(path, options.uids, options.allow_external_state, options.max_file_size)


def _read_raw_sink(spark: SparkSession, request: AuditRequest, sink: str) -> DataFrame:
    """The sink with its own columns, for an identity to be computed over: files as Spark reads them, a topic as
    Spark's Kafka source gives it (key, value, topic, partition, offset, timestamp, headers: the sink topic's)."""
    if request.sink_format == "kafka" and request.bootstrap:
        from splitaudit.audit.passes.kafka_topic import read_topics

        return read_topics(spark, request.bootstrap, (sink,), headers=True)
    from splitaudit.audit.passes.sink_files import read_files

    return read_files(spark, sink, request.sink_format)


def _read_sink(spark: SparkSession, request: AuditRequest, sink: str) -> DataFrame:
    """The sink as `read_sink` shapes it: files through Spark's readers, or a topic through its Kafka source."""
    if request.sink_format == "kafka" and request.bootstrap:
        from splitaudit.audit.passes.kafka_topic import read_kafka_sink

        return read_kafka_sink(spark, request.bootstrap, sink, request.columns)
    from splitaudit.audit.passes.sink_files import read_sink

    return read_sink(spark, sink, request.sink_format, request.columns)


def _source_topics(request: AuditRequest, savepoint: SavepointTables | None) -> tuple[str, ...]:
    """The source topics: --topic, else every topic the savepoint's sources read (sorted; empty if none)."""
    if request.topics:
        return request.topics
    return () if savepoint is None else tuple(sorted(_topics(savepoint)))


def _required_topics(request: AuditRequest, savepoint: SavepointTables | None, option: str) -> tuple[str, ...]:
    topics = _source_topics(request, savepoint)
    if not topics:
        raise UsageError(f"{option} needs --topic: the savepoint's sources name no topic")
    return topics


def _partition_list(
    request: AuditRequest, kafka: KafkaSource | None, savepoint: SavepointTables, sink_audit: SinkAudit | None
) -> PartitionList | None:
    """The topics' partitions: from Kafka's admin API, else --partitions, else the partitions the sink holds,
    else none (the assignment check then falls back to the enumerator's list or to the held partitions)."""
    if kafka is not None:
        from splitaudit.clients.kafka import topic_partitions

        listed = frozenset((t, p) for t in kafka.topics for p in topic_partitions(kafka.bootstrap, t))
        return PartitionList(listed, f"the Kafka admin API at {kafka.bootstrap} ({kafka.named})")
    if request.partitions:
        counts = [(topic or _one_topic(request, savepoint), count) for topic, count in request.partitions]
        listed = frozenset((topic, p) for topic, count in counts for p in range(count))
        if request.partitions[0][0] is None and len(counts) == 1:
            return PartitionList(listed, f"--partitions {counts[0][1]} (topic {counts[0][0]})")
        return PartitionList(listed, "--partitions " + ", ".join(f"{topic}={count}" for topic, count in counts))
    if sink_audit is not None and sink_audit.coverage:
        held = frozenset((c.topic, c.partition) for c in sink_audit.coverage)
        topics = _topics(savepoint)
        return PartitionList(frozenset(tp for tp in held if not topics or tp[0] in topics), "the sink")
    return None


def _one_topic(request: AuditRequest, savepoint: SavepointTables) -> str:
    """The topic a bare `--partitions N` counts: the one source topic, else a usage error naming them."""
    topics = _source_topics(request, savepoint)
    if len(topics) != 1:
        named = ", ".join(topics) or "none"
        raise UsageError(
            f"--partitions N needs one source topic, and the savepoint's sources read {named}: give TOPIC=N per topic"
        )
    return topics[0]


def _topics(savepoint: SavepointTables) -> set[str]:
    return {r["topic"] for table in (savepoint.splits, savepoint.enumerator) for r in table if r["topic"] is not None}


def _findings(
    findings: list[Finding],
    sink_audit: SinkAudit | None,
    assignment: AssignmentCheck | None,
    notes: list[str],
    ledger: tuple[SinkFile, ...] = (),
    aggregate: AggregateTotals | None = None,
) -> Findings:
    """One `Findings`, with the contract's summary counted from the findings."""

    def partitions(kinds: frozenset[str]) -> int:
        return len({(f.topic, f.partition) for f in findings if f.kind in kinds})

    coverage = () if sink_audit is None else sink_audit.coverage
    summary = Summary(
        duplicate_records=sum(c.duplicates for c in coverage),
        missing_records=sum(c.missing for c in coverage),
        double_assigned_partitions=partitions(DOUBLE_ASSIGNMENT_KINDS),
        missing_partitions=partitions(MISSING_PARTITION_KINDS),
        rewound_partitions=partitions(frozenset({REWIND})),
    )
    if assignment is not None:
        notes += assignment.notes
    matrices = () if assignment is None else assignment.matrices
    return Findings(summary, tuple(findings), coverage, tuple(notes), matrices, ledger, aggregate)
