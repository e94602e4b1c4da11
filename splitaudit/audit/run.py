"""The `audit` and `diff` commands' work: read the inputs, run the checks, assemble one `Findings`.

Spark starts only for what needs it: a sink, or a Kafka topic read through Spark's Kafka source. The savepoint
checks run on the driver over the savepoint's small tables, so a savepoint-only audit and `diff` start no JVM.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from splitaudit.audit.assignment import AssignmentCheck, PartitionList, check_assignment
from splitaudit.audit.bounded_sources import explain_finished_bounded
from splitaudit.audit.findings import (
    DOUBLE_ASSIGNMENT_KINDS,
    MISSING_PARTITION_KINDS,
    REWIND,
    AggregateTotals,
    Finding,
    Findings,
    SinkFile,
    Summary,
)
from splitaudit.audit.inference import RestoreEvidence, infer_classes
from splitaudit.audit.ledger import (
    Ledger,
    Rewrites,
    check_ledger,
    closure,
    count_rows,
    find_rewrites,
    ledger_of,
    windows_after,
)
from splitaudit.audit.offsets import check_offsets, sink_next_offsets
from splitaudit.audit.recreated_topics import check_recreated
from splitaudit.audit.request import AuditRequest, DiffRequest
from splitaudit.audit.rewind import check_rewind, resume_offsets
from splitaudit.audit.savepoint_tables import SavepointTables, savepoint_tables
from splitaudit.errors import UsageError
from splitaudit.patch.jar import read_jar_facts
from splitaudit.progress import Progress
from splitaudit.savepoint.fileio import SavepointOptions, list_tree, metadata_written_at

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from splitaudit.audit.parquet_pass import ParquetFiles
    from splitaudit.audit.sink import SinkAudit

DENSE_NOTE = (
    "gaps are judged between each partition's lowest and highest sink offset, assuming dense offsets "
    "(no access to the source topic): transaction markers or compaction would show up as missing"
)


def run_audit(request: AuditRequest, progress: Progress) -> Findings:
    """Audit what was given: the savepoint's assignment (and its rewinds against --before), the sink's
    duplicates and gaps, the sink records past the savepoint's next offsets and, with --bootstrap, the topic's
    own offsets (real gaps, expired records, committed group offsets, lag). The request was checked when it was
    made: what is left to refuse here depends on what the savepoint holds.

    `progress` is told each step as it runs (`Progress()` reports nothing; the CLI's `ConsoleProgress` prints
    them). Spark starts (or the active session is taken) only for a sink or a topic read through Spark's Kafka
    source: a savepoint-only audit runs on the driver. Raises UsageError (the CLI's exit 2) for what the
    savepoint makes impossible, and InputError naming the file and byte offset of a savepoint it cannot read.
    Returns every finding, with the coverage, assignment and notes they were judged on; `exit_code` says
    whether any is an error."""
    savepoint = before = None
    if request.savepoint:
        savepoint = _load(request.savepoint, request.savepoint_options, progress)
    if request.before:
        before = _load(request.before, request.savepoint_options, progress)
    evidence = _restore_evidence(request, before)
    kafka = None
    if request.bootstrap:
        kafka = KafkaSource(request.bootstrap, _required_topics(request, savepoint, "--bootstrap"))
    sink_audit = None
    findings: list[Finding] = []
    notes: list[str] = []
    ledger = None
    if request.sink and request.sink_format != "kafka" and not _is_local_file(request.sink) and not request.aggregate:
        with progress.step(f"read the file names of {request.sink}"):
            ledger = ledger_of(list_tree(request.sink), request.naming)
            findings += check_ledger(ledger)
    aggregate = None
    if request.aggregate is not None and not request.aggregate.auditable:
        from splitaudit.audit.aggregate import unauditable  # an idempotent aggregate: nothing to read, no Spark

        findings.append(unauditable(request.aggregate))
    elif request.aggregate is not None and before is not None and savepoint is not None and kafka is not None:
        from splitaudit.audit.aggregate_sink import reconcile_sink

        with progress.step(f"reconcile the aggregates of {request.sink} with {kafka.named}"):
            reconciled = reconcile_sink(_spark(request, progress), request, before, savepoint, kafka.topics)
        findings += reconciled.findings
        notes += reconciled.notes
        aggregate = reconciled.totals
    elif request.sink:
        spark = _spark(request, progress)
        with (
            progress.step(f"audit the {request.sink_format} sink {request.sink}"),
            _judged_sink(spark, request, kafka) as judged,
        ):
            sink_audit = _audit_judged(judged, request, savepoint, evidence)
            findings += judged.findings + sink_audit.findings
            notes += [*judged.notes, DENSE_NOTE if kafka is None else kafka.gaps_note, sink_audit.lineage.note]
            if ledger is not None and ledger.windowed:
                with progress.step("count the rows of each file and find the windows written again"):
                    ledger, found, said = _judge_rewrites(spark, request, ledger, judged, kafka, before)
                findings += found
                notes += said
            if savepoint is not None:
                from splitaudit.audit.replay import check_past_savepoint

                with progress.step("find sink records past the savepoint's next offsets"):
                    findings += check_past_savepoint(judged.sink, savepoint, exactly_once=request.exactly_once)
    assignment = None
    if savepoint is not None:
        with progress.step("check the savepoint's partition assignment"):
            assignment = check_assignment(savepoint, _partition_list(request, kafka, savepoint, sink_audit))
        findings = list(assignment.findings) + findings
    if before is not None and savepoint is not None:
        with progress.step("compare with the earlier savepoint"):
            findings = list(check_rewind(before, savepoint)) + findings
        if request.subscription:
            from splitaudit.audit.removed_topics import check_removed_topics

            findings = list(check_removed_topics(before, savepoint, request.subscription)) + findings
        findings = explain_finished_bounded(before, savepoint, findings)
    if kafka is not None:
        from splitaudit.clients.kafka import topics_offsets

        with progress.step(f"compare with the offsets of {kafka.named} at {kafka.bootstrap}"):
            offsets = topics_offsets(kafka.bootstrap, kafka.topics, request.group)
            resume = {} if savepoint is None else resume_offsets(savepoint)
            processed = {} if sink_audit is None else sink_next_offsets(sink_audit.coverage)
            findings += check_offsets(offsets, resume, processed, request.group)
            if before is not None:
                findings += check_recreated(offsets, resume_offsets(before), resume)
    return _findings(findings, sink_audit, assignment, notes, () if ledger is None else ledger.files, aggregate)


def _is_local_file(path: str) -> bool:
    """A local path naming one file (a sink of one file has no ledger to read)."""
    return len(urlparse(path).scheme) <= 1 and Path(path).is_file()


def _judge_rewrites(
    spark: SparkSession,
    request: AuditRequest,
    ledger: Ledger,
    judged: JudgedSink,
    kafka: KafkaSource | None,
    before: SavepointTables | None,
) -> tuple[Ledger, list[Finding], list[str]]:
    """The ledger's rows per file and, with --before, the windows the restored job wrote again and, with the
    source topics (--bootstrap), the records those rewrites held once though read twice, or lost."""
    from splitaudit.audit.sink_files import read_files

    assert request.sink is not None
    ledger = count_rows(read_files(spark, request.sink, request.sink_format), ledger, request.sink)
    notes = [f"the sink's file ledger reads {ledger.naming}: {len(ledger.files)} files"]
    if before is None:
        return ledger, [], [*notes, "give --before (the savepoint the job was restored from) to find rewritten windows"]
    written_at = metadata_written_at(before.path)
    resume = resume_offsets(before)
    records = None
    if kafka is not None:
        from splitaudit.audit.kafka_topic import read_topics

        records = read_topics(spark, kafka.bootstrap, kafka.topics)
    rewrites = _rewrites(request, ledger, before.path, written_at, kafka, records, resume)
    findings = list(rewrites.findings)
    notes += rewrites.notes
    if rewrites.windows and records is None:
        notes.append("the records of the rewritten windows are not counted: give --bootstrap to read the source")
    elif rewrites.windows and records is not None:
        from splitaudit.audit.rewrites import check_rewrites

        findings += check_rewrites(judged.sink, records, rewrites.windows, resume, before.path)
    return rewrites.ledger, findings, notes


def _rewrites(
    request: AuditRequest,
    ledger: Ledger,
    savepoint: str,
    written_at: float,
    kafka: KafkaSource | None,
    records: DataFrame | None,
    resume: dict[tuple[str, int], int],
) -> Rewrites:
    """The windows written after the savepoint that hold records read before it (with the source; else those
    starting before its time), each judged closed or open at it by the savepoint's evidence (`window_evidence`),
    or by --watermark-delay when given."""
    from splitaudit.audit import window_evidence as evidence

    after = windows_after(ledger, written_at)
    if records is not None:
        held = evidence.windows_read_before(records, after, resume)
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
    from splitaudit.audit.kafka_topic import read_topics, source_offsets, topic_records

    assert request.sink is not None
    if request.identity is None:
        from splitaudit.audit.parquet_pass import parquet_files
        from splitaudit.audit.sink_files import PARSED_FORMATS

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
    from splitaudit.audit.identity import map_to_source

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
    from splitaudit.audit.sink import SinkAudit, audit_sink

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
        resume_offsets(before),
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
        from splitaudit.audit.kafka_topic import read_topics

        return read_topics(spark, request.bootstrap, (sink,), headers=True)
    from splitaudit.audit.sink_files import read_files

    return read_files(spark, sink, request.sink_format)


def _read_sink(spark: SparkSession, request: AuditRequest, sink: str) -> DataFrame:
    """The sink as `read_sink` shapes it: files through Spark's readers, or a topic through its Kafka source."""
    if request.sink_format == "kafka" and request.bootstrap:
        from splitaudit.audit.kafka_topic import read_kafka_sink

        return read_kafka_sink(spark, request.bootstrap, sink, request.columns)
    from splitaudit.audit.sink_files import read_sink

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
        notes += [f"partitions of {m.operator} from {m.partitions_from}" for m in assignment.matrices]
    matrices = () if assignment is None else assignment.matrices
    return Findings(summary, tuple(findings), coverage, tuple(notes), matrices, ledger, aggregate)
