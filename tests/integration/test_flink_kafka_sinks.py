"""A KafkaSource job's other sinks: the DataStream job (`KafkaLineageJob --plainSinkDir --sinkTopic`) also writes
each record's `value_hash` alone into files, as a user's job writes what its records mean and not where they were
read, which the audit maps to source records by that identity (`--sink-key value_hash --source-key
"substring(sha2(value, 256), 1, 16)"`: the job's hash, the first 8 bytes of SHA-256 as hex); and each record's
lineage as the value of a record of its own topic (`KafkaSink`, at least once), which the audit reads with
`--sink-format kafka`. The truth is the job's lineage file sink, written by the same jobs from the same records.

- A clean restore: every record once in every sink; neither audit finds anything.
- A restore under another source uid with `allowNonRestoredState` (the source's splits dropped, read again from
  `earliest`): the lineage sink holds offsets 0..99 of each partition twice; the identity audit finds exactly those
  duplicates per partition, with no lineage to classify them (`duplicate_records`, error), and the topic sink's
  audit the same offsets as emitted again by the restored job (`replay`, warning: another job's copy).

Marker `flink_kafka` (`make flink-matrix`), not in `make test`.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest

from splitaudit.audit.checks.findings import DUPLICATE, ERROR, REPLAY, WARNING, Findings
from splitaudit.audit.request import AuditRequest, IdentityMatch
from splitaudit.audit.run import run_audit
from splitaudit.progress import Progress
from splitaudit_lab.scenario.flink_kafka import WatchedKafkaSource, run_watched_kafka_source
from splitaudit_lab.scenario.restore import ScenarioSettings
from splitaudit_lab.scenario.sink import read_sink
from splitaudit_lab.scenario.users_job_results import offset_runs
from splitaudit_lab.stack.stack import Stack
from tests.integration.kafka_source_rows import finding_rows

pytestmark = [pytest.mark.integration, pytest.mark.flink_kafka]

SETTINGS = ScenarioSettings(partitions=2, records=200, parallelism=2)
# LineageDeserializer's value_hash: the first 8 bytes of SHA-256 of the value, as 16 hex digits
SOURCE_HASH = "substring(sha2(value, 256), 1, 16)"


def _twice(run_dir: Path) -> tuple[str, list[tuple[int, int, tuple[tuple[int, int], ...]]]]:
    """The run's topic, and from its lineage sink (the truth) per partition the offsets in it more than once: their
    count and their ranges."""
    lineage = read_sink(run_dir / "sink")
    [topic] = pc.unique(lineage["topic"]).to_pylist()
    per_offset = lineage.group_by(["partition", "offset"]).aggregate([("offset", "count")]).to_pylist()
    rows = []
    for partition in sorted({r["partition"] for r in per_offset}):
        offsets = sorted(r["offset"] for r in per_offset if r["partition"] == partition and r["offset_count"] > 1)
        if offsets:
            rows.append((partition, len(offsets), offset_runs(offsets)))
    return topic, rows


def _identity_audit(stack: Stack, result: WatchedKafkaSource, topic: str) -> Findings:
    """The sink without lineage judged by record identity against the source topic."""
    assert result.plain_sink is not None
    request = AuditRequest(
        sink=str(result.plain_sink),
        sink_format="json",
        topics=(topic,),
        bootstrap=stack.kafka.bootstrap,
        identity=IdentityMatch("value_hash", SOURCE_HASH),
    )
    return run_audit(request, Progress())


def _topic_audit(stack: Stack, result: WatchedKafkaSource, topic: str) -> Findings:
    """The topic sink (lineage in each record's value) judged against the source topic."""
    assert result.sink_topic is not None
    request = AuditRequest(
        sink=result.sink_topic, sink_format="kafka", topics=(topic,), bootstrap=stack.kafka.bootstrap
    )
    return run_audit(request, Progress())


def test_a_clean_restore_is_clean_through_the_record_identity(stack: Stack, tmp_path: Path) -> None:
    result = run_watched_kafka_source(stack, tmp_path / "clean", Progress(), SETTINGS, user_sinks=True)
    topic, twice = _twice(tmp_path / "clean")
    assert twice == []
    for findings in (_identity_audit(stack, result, topic), _topic_audit(stack, result, topic)):
        assert findings.findings == ()
        assert (findings.summary.duplicate_records, findings.summary.missing_records) == (0, 0)


def test_a_dropped_source_state_is_found_through_the_record_identity(stack: Stack, tmp_path: Path) -> None:
    result = run_watched_kafka_source(
        stack, tmp_path / "uid", Progress(), SETTINGS, source_uid="kafka-source-v2", user_sinks=True
    )
    topic, twice = _twice(tmp_path / "uid")
    assert twice == [(p, 100, ((0, 99),)) for p in (0, 1)]  # SP0 at 100 of each, read again from earliest
    findings = _identity_audit(stack, result, topic)
    assert finding_rows(findings.findings) == [(DUPLICATE, ERROR, p, count, ranges) for p, count, ranges in twice]
    assert (findings.summary.duplicate_records, findings.summary.missing_records) == (200, 0)
    # the topic sink's lineage says which job emitted each copy: the restored job (another generation) again
    findings = _topic_audit(stack, result, topic)
    assert finding_rows(findings.findings) == [(REPLAY, WARNING, p, count, ranges) for p, count, ranges in twice]
    assert (findings.summary.duplicate_records, findings.summary.missing_records) == (200, 0)
