"""The `audit` command's work: read the inputs into Spark, run the checks, assemble one `Findings`."""

from __future__ import annotations

from pathlib import Path

from splitaudit.audit.findings import DOUBLE_ASSIGNMENT, Findings, Summary
from splitaudit.audit.request import AuditRequest
from splitaudit.audit.sink import audit_sink, read_sink
from splitaudit.errors import UsageError
from splitaudit.report.progress import Progress
from splitaudit.stack.spark import spark_session


def run_audit(request: AuditRequest, progress: Progress) -> Findings:
    """Audit the sink: duplicates (classified by lineage when the sink has it) and missing offsets."""
    if "://" not in request.sink and not Path(request.sink).exists():
        raise UsageError(f"{request.sink}: no such file or directory (--sink)")  # before paying for a Spark start
    with progress.step(f"start Spark ({request.master})"):
        spark = spark_session(request.master, app_name="splitaudit-audit")
        spark.sparkContext.setLogLevel("ERROR")
    with progress.step(f"audit the {request.sink_format} sink {request.sink}"):
        sink = read_sink(spark, request.sink, request.sink_format, request.columns)
        result = audit_sink(sink, exactly_once=request.exactly_once)
    notes = [
        "gaps are judged between each partition's lowest and highest sink offset, assuming dense offsets "
        "(no access to the source topic): transaction markers or compaction would show up as missing"
    ]
    if not result.classified:
        notes.append("the sink has no reader_id/attempt columns: duplicates are not classified")
    summary = Summary(
        duplicate_records=sum(c.duplicates for c in result.coverage),
        missing_records=sum(c.missing for c in result.coverage),
        double_assigned_partitions=len(
            {(f.topic, f.partition) for f in result.findings if f.kind == DOUBLE_ASSIGNMENT}
        ),
    )
    return Findings(summary, result.findings, result.coverage, tuple(notes))
