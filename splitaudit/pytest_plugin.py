"""splitaudit's pytest plugin (entry point `pytest11`): assertions on savepoints and sinks for users' own suites.

    def test_restore_reads_every_offset_once(tmp_path):
        ...  # run the job, take a savepoint, restore, take another
        assert_no_double_assignment(savepoint_after, partitions=4)
        assert_sink_exactly_once(tmp_path / "sink", savepoint_after, sink_format="json")

The assertions run the same checks as `splitaudit audit`, on the active Spark session or a local one they
start; the `splitaudit_spark` fixture gives a session for the whole test run (`--splitaudit-master` picks the
master). A failed assertion lists each finding: kind, topic, partition, count, offset ranges and detail.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from os import PathLike
from typing import TYPE_CHECKING

import pytest

from splitaudit.audit.checks.findings import SAVEPOINT_ASSIGNMENT_KINDS, Finding, Findings
from splitaudit.audit.request import AuditRequest, SinkColumns
from splitaudit.progress import Progress

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# pytest loads this module in every run of any suite in an environment with splitaudit installed: pyspark (and
# the audit, which imports it) is imported only when a fixture or assertion is used, not at pytest's start.

__all__ = ["assert_no_double_assignment", "assert_sink_exactly_once"]

DEFAULT_MASTER = "local[2]"


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's one command-line option, `--splitaudit-master`: the Spark master of the `splitaudit_spark`
    fixture (default `local[2]`)."""
    parser.getgroup("splitaudit").addoption(
        "--splitaudit-master",
        default=DEFAULT_MASTER,
        help=f"Spark master of the splitaudit_spark fixture (default {DEFAULT_MASTER}).",
    )


@pytest.fixture(scope="session")
def splitaudit_spark(request: pytest.FixtureRequest) -> Iterator[SparkSession]:
    """A Spark session for the splitaudit assertions, started once for the test run (on `--splitaudit-master`)
    and stopped at its end. The assertions use the active session, so a suite that takes this fixture pays for
    one Spark start; one that does not gets a local session started by the first sink assertion."""
    from splitaudit.clients.spark import spark_session

    session = spark_session(request.config.getoption("--splitaudit-master"), app_name="splitaudit-pytest")
    try:
        yield session
    finally:
        session.stop()


def assert_no_double_assignment(
    savepoint: str | PathLike[str],
    *,
    partitions: int | Mapping[str, int] | None = None,
    topic: str | None = None,
    master: str = DEFAULT_MASTER,
) -> Findings:
    """Every partition the savepoint's Kafka sources hold is held by exactly one split: none by two subtasks or
    splits, none by a reader and the enumerator at once, and — with `partitions` (N: 0..N-1 of `topic`, or of the
    one topic the savepoint reads; or {topic: N} per topic) or for Flink's KafkaSource, whose enumerator lists
    them — none by nobody.

    `savepoint` is a savepoint or checkpoint directory (or its `_metadata`). The check reads the savepoint in
    pure Python and starts no Spark (`master` is accepted for symmetry with `assert_sink_exactly_once`). Raises
    AssertionError listing each finding of those kinds (`SAVEPOINT_ASSIGNMENT_KINDS`: kind, severity,
    topic/partition, count, detail), or UsageError when the arguments do not combine; returns the audit's
    `Findings` otherwise."""
    from splitaudit.audit.run import run_audit

    counts: tuple[tuple[str | None, int], ...] = ()
    if isinstance(partitions, int):
        counts = ((topic, partitions),)
    elif partitions is not None:
        counts = tuple(partitions.items())
    request = AuditRequest(
        savepoint=str(savepoint), topics=() if topic is None else (topic,), partitions=counts, master=master
    )
    findings = run_audit(request, Progress())
    _fail_on(findings, SAVEPOINT_ASSIGNMENT_KINDS, f"savepoint {savepoint}")
    return findings


def assert_sink_exactly_once(
    sink: str | PathLike[str],
    savepoint: str | PathLike[str] | None = None,
    *,
    sink_format: str = "parquet",
    columns: SinkColumns | None = None,
    master: str = DEFAULT_MASTER,
) -> Findings:
    """The sink holds every offset of each partition exactly once: no duplicate (whatever its cause: double
    assignment, replay or unknown), no gap; and, given the savepoint the job would restore from, no record at
    or past its next offsets (a restore would emit them again) and no assignment error in it.

    `sink` is a directory (or file) of the job's output in `sink_format` (`parquet`, `json`, `csv`, `orc`,
    `avro` or `text`), whose `columns` hold each record's Kafka topic, partition and offset (`SinkColumns`:
    `topic`, `partition`, `offset` by default). The audit runs on the active Spark session, or a local one on
    `master`. Raises AssertionError listing every finding (kind, severity, topic/partition, count, offset
    ranges, detail), or UsageError when the arguments do not combine; returns the audit's `Findings`
    otherwise."""
    from splitaudit.audit.run import run_audit

    request = AuditRequest(
        sink=str(sink),
        sink_format=sink_format,
        columns=columns or SinkColumns(),
        savepoint=None if savepoint is None else str(savepoint),
        exactly_once=True,
        master=master,
    )
    findings = run_audit(request, Progress())
    _fail_on(findings, frozenset(f.kind for f in findings.findings), f"sink {sink}")
    return findings


def _fail_on(findings: Findings, kinds: frozenset[str], what: str) -> None:
    failed = [f for f in findings.findings if f.kind in kinds]
    if failed:
        lines = "\n".join(f"  - {_describe(f)}" for f in failed)
        raise AssertionError(f"splitaudit: {len(failed)} finding(s) in {what}:\n{lines}")


def _describe(finding: Finding) -> str:
    where = f"{finding.topic}/{finding.partition}" if finding.topic is not None else "-"
    ranges = finding.ranges_text(5)
    return (
        f"{finding.kind} ({finding.severity}) {where}: {finding.count}"
        + (f" [{ranges}]" if ranges else "")
        + (f" — {finding.explanation}" if finding.explanation else "")
    )
