"""The `audit` and `diff` commands' work: read the inputs into Spark, run the checks, assemble one `Findings`."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from splitaudit.audit.assignment import AssignmentCheck, PartitionList, check_assignment
from splitaudit.audit.findings import (
    ASSIGNED_AND_PENDING,
    ASSIGNED_TWICE,
    DOUBLE_ASSIGNMENT,
    DROPPED_PARTITION,
    REWIND,
    UNASSIGNED,
    Finding,
    Findings,
    Summary,
)
from splitaudit.audit.replay import check_past_savepoint
from splitaudit.audit.request import AuditRequest, SavepointOptions
from splitaudit.audit.rewind import check_rewind
from splitaudit.audit.savepoint_frames import SavepointFrames, savepoint_frames
from splitaudit.audit.sink import SinkAudit, audit_sink, read_sink
from splitaudit.errors import UsageError
from splitaudit.report.progress import Progress
from splitaudit.stack.spark import spark_session

DENSE_NOTE = (
    "gaps are judged between each partition's lowest and highest sink offset, assuming dense offsets "
    "(no access to the source topic): transaction markers or compaction would show up as missing"
)


def run_audit(request: AuditRequest, progress: Progress) -> Findings:
    """Audit what was given: the savepoint's assignment (and its rewinds against --before), the sink's
    duplicates and gaps, and the sink records past the savepoint's next offsets."""
    _validate(request)
    spark = _spark(request.master, progress)
    savepoint = before = None
    if request.savepoint:
        savepoint = _load(spark, request.savepoint, request.savepoint_options, progress)
    if request.before:
        before = _load(spark, request.before, request.savepoint_options, progress)
    sink_audit = None
    findings: list[Finding] = []
    notes: list[str] = []
    if request.sink:
        with progress.step(f"audit the {request.sink_format} sink {request.sink}"):
            sink = read_sink(spark, request.sink, request.sink_format, request.columns)
            sink_audit = audit_sink(sink, exactly_once=request.exactly_once)
        findings += sink_audit.findings
        notes.append(DENSE_NOTE)
        if not sink_audit.classified:
            notes.append("the sink has no reader_id/attempt columns: duplicates are not classified")
        if savepoint is not None:
            with progress.step("find sink records past the savepoint's next offsets"):
                findings += check_past_savepoint(sink, savepoint, exactly_once=request.exactly_once)
    assignment = None
    if savepoint is not None:
        with progress.step("check the savepoint's partition assignment"):
            assignment = check_assignment(savepoint, _partition_list(request, savepoint, sink_audit))
        findings = list(assignment.findings) + findings
    if before is not None and savepoint is not None:
        with progress.step("compare with the earlier savepoint"):
            findings = list(check_rewind(before, savepoint)) + findings
    return _findings(findings, sink_audit, assignment, notes)


def run_diff(before: str, after: str, options: SavepointOptions, master: str, progress: Progress) -> Findings:
    """`diff SP0 SP1`: rewinds, dropped and new partitions between two savepoints of one job."""
    for path in (before, after):
        _check_exists(path, "savepoint")
    spark = _spark(master, progress)
    earlier = _load(spark, before, options, progress)
    later = _load(spark, after, options, progress)
    with progress.step("compare the two savepoints"):
        return _findings(list(check_rewind(earlier, later)), None, None, [])


def _validate(request: AuditRequest) -> None:
    """Usage errors before paying for a Spark start."""
    if not request.savepoint and not request.sink:
        raise UsageError("give --savepoint, --sink or both: there is nothing to audit")
    if request.before and not request.savepoint:
        raise UsageError("--before needs --savepoint: it is the earlier savepoint to compare it with")
    if request.partitions is not None and request.partitions < 1:
        raise UsageError(f"--partitions must be at least 1, not {request.partitions}")
    for path, option in ((request.savepoint, "savepoint"), (request.before, "before"), (request.sink, "sink")):
        if path:
            _check_exists(path, option)


def _check_exists(path: str, option: str) -> None:
    """A local path must exist; URIs (file:, s3://, hdfs://, gs://) are left to the readers."""
    if len(urlparse(path).scheme) <= 1 and not Path(path).exists():
        raise UsageError(f"{path}: no such file or directory (--{option})")


def _spark(master: str, progress: Progress) -> SparkSession:
    with progress.step(f"start Spark ({master})"):
        spark = spark_session(master, app_name="splitaudit-audit")
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def _load(spark: SparkSession, path: str, options: SavepointOptions, progress: Progress) -> SavepointFrames:
    with progress.step(f"read the savepoint {path}"):
        return savepoint_frames(spark, path, options.uids, options.allow_external_state)


def _partition_list(
    request: AuditRequest, savepoint: SavepointFrames, sink_audit: SinkAudit | None
) -> PartitionList | None:
    """The topic's partitions: from --partitions, else the partitions the sink holds, else none (the
    assignment check then falls back to the enumerator's list or to the held partitions only)."""
    if request.partitions is not None:
        topics = {request.topic} if request.topic else _topics(savepoint)
        if len(topics) != 1:
            named = ", ".join(sorted(topics)) or "none"
            raise UsageError(f"--partitions needs --topic: the savepoint's sources read {len(topics)} topics ({named})")
        (topic,) = topics
        listed = frozenset((topic, p) for p in range(request.partitions))
        return PartitionList(listed, f"--partitions {request.partitions} (topic {topic})")
    if sink_audit is not None and sink_audit.coverage:
        held = frozenset((c.topic, c.partition) for c in sink_audit.coverage)
        topics = _topics(savepoint)
        return PartitionList(frozenset(tp for tp in held if not topics or tp[0] in topics), "the sink")
    return None


def _topics(savepoint: SavepointFrames) -> set[str]:
    rows = savepoint.splits.select("topic").union(savepoint.enumerator.select("topic"))
    return {r["topic"] for r in rows.where("topic IS NOT NULL").distinct().collect()}


def _findings(
    findings: list[Finding], sink_audit: SinkAudit | None, assignment: AssignmentCheck | None, notes: list[str]
) -> Findings:
    """One `Findings`, with the contract's summary counted from the findings."""

    def partitions(*kinds: str) -> int:
        return len({(f.topic, f.partition) for f in findings if f.kind in kinds})

    coverage = () if sink_audit is None else sink_audit.coverage
    summary = Summary(
        duplicate_records=sum(c.duplicates for c in coverage),
        missing_records=sum(c.missing for c in coverage),
        double_assigned_partitions=partitions(DOUBLE_ASSIGNMENT, ASSIGNED_TWICE, ASSIGNED_AND_PENDING),
        missing_partitions=partitions(UNASSIGNED, DROPPED_PARTITION),
        rewound_partitions=partitions(REWIND),
    )
    if assignment is not None:
        notes += [f"partitions of {m.operator} from {m.partitions_from}" for m in assignment.matrices]
    matrices = () if assignment is None else assignment.matrices
    return Findings(summary, tuple(findings), coverage, tuple(notes), matrices)
