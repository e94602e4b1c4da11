"""The consumer-config savepoints (fixtures/beam_flink_source/consumer_*, `generate_restore.py --part consumers`):
the KafkaIO.Read spec decoded from real bytes, and where `splitaudit guard` says a twin reader starts, without
Kafka.

test_fixtures.py checks each whole source state against its expected.json; here the settings that decide the
twin are stated as literals, the options each job ran with (KafkaAuditPipeline.java), so a generator that
wrote the wrong expected.json fails too. Only the topics (a new name each run) come from expected.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splitaudit.audit.checks.findings import ERROR, WARNING
from splitaudit.audit.checks.savepoint_tables import tables_of
from splitaudit.guard.partitions import HeldPartition
from splitaudit.guard.predict import (
    AUTO_COMMIT_WITHOUT_FINALIZE,
    COMMIT_NEVER_FINALIZED,
    LATEST_WITHOUT_COMMITTED,
    RESTORE_REREADS,
    Restore,
    judge,
    kafka_specs,
    source_facts,
    source_twins,
)
from splitaudit.guard.results import SourceFacts
from splitaudit.guard.twin import (
    AUTO_OFFSET_RESET,
    COMMITTED,
    COMMITTED_OFFSET,
    LOG_END_AT_RESTORE,
    LOG_START,
    OFFSET_FOR_TIME,
    START_READ_TIME,
    auto_offset_reset,
    enable_auto_commit,
    group_id,
    predict_twin,
)
from splitaudit.patch.jar import JarFacts
from splitaudit.savepoint_view import inspect_savepoint
from splitaudit.splits.beam import KafkaIORead
from tests.unit.conftest import FIXTURES

BEAM = FIXTURES / "beam_flink_source"
NO_GROUP_LATEST = BEAM / "consumer_no_group_latest"
AUTO_COMMIT = BEAM / "consumer_auto_commit"
START_READ = BEAM / "consumer_start_read_time"
DEFAULTS = BEAM / "restore_stock_before"  # the reference pipeline's defaults: group, earliest, commitOffsetsInFinalize

# Each job's topic (a new name each run): its group.id where it has one.
TOPICS = {
    folder: json.loads((folder / "expected.json").read_text())["topic"]
    for folder in (NO_GROUP_LATEST, AUTO_COMMIT, START_READ, DEFAULTS)
}
START_READ_TIME_MILLIS = 1_767_225_600_000  # --startReadTime: 2026-01-01T00:00:00Z
# 200 records over 4 partitions, all read before the savepoint (restore_stock_before: 20,000).
NEXT_OFFSET = {NO_GROUP_LATEST: 50, AUTO_COMMIT: 50, START_READ: 50, DEFAULTS: 5000}

# The stock Beam 2.62.0 jar that made them (its FlinkSource finalizes checkpoints), and a 2.54.0 one that never
# finalizes: commitOffsetsInFinalize commits nothing there, the consumer's auto commit still does.
V2_62 = JarFacts("job.jar", "2.62.0", "beam-runners-flink-1.19", True, False, False, False, True)
V2_54 = JarFacts("job.jar", "2.54.0", "beam-runners-flink-1.16", True, False, False, False, False)
PATCHED = JarFacts("job.jar", "2.62.0", "beam-runners-flink-1.19", True, False, True, True, True)


def _source(folder: Path) -> SourceFacts:
    """The savepoint's one source operator as the guard reads it: its tables and its splits' KafkaIO spec."""
    view = inspect_savepoint(str(folder))
    [source] = source_facts(tables_of(view), kafka_specs(view))
    return source


def _spec(folder: Path) -> KafkaIORead:
    spec = _source(folder).spec
    assert spec is not None
    return spec


def test_every_split_carries_the_same_spec() -> None:
    # KafkaUnboundedSource.split copies one spec into every split: the guard reads the first, so the others
    # must say the same.
    for folder in (NO_GROUP_LATEST, AUTO_COMMIT, START_READ):
        view = inspect_savepoint(str(folder))
        [operator] = [op for op in view.to_json()["operators"] if op["source"] is not None]
        specs = [split["split"]["spec"] for split in operator["source"]["reader_splits"]]
        assert len(specs) == 2
        assert specs[0] == specs[1] == _spec(folder).to_json()


def test_no_group_and_kafka_ios_default_reset() -> None:
    spec = _spec(NO_GROUP_LATEST)
    values = dict(spec.consumer_config.values)
    assert "group.id" not in values
    assert group_id(spec) is None
    assert values["auto.offset.reset"] == "latest"  # KafkaIO's default: --autoOffsetReset= set nothing
    assert values["enable.auto.commit"] is False
    assert spec.commit_offsets_in_finalize_enabled is False
    assert spec.start_read_time is None
    assert spec.consumer_config.not_shown == ()
    assert spec.offset_consumer_config is None


def test_auto_commit_with_a_group() -> None:
    spec = _spec(AUTO_COMMIT)
    values = dict(spec.consumer_config.values)
    assert values["group.id"] == TOPICS[AUTO_COMMIT]
    assert values["auto.offset.reset"] == "earliest"
    assert values["enable.auto.commit"] is True  # a java.lang.Boolean the pipeline put, not the text "true"
    assert enable_auto_commit(spec) is True
    assert spec.commit_offsets_in_finalize_enabled is False
    assert spec.start_read_time is None


def test_start_read_time() -> None:
    spec = _spec(START_READ)
    values = dict(spec.consumer_config.values)
    assert values["group.id"] == TOPICS[START_READ]
    assert values["auto.offset.reset"] == "earliest"
    assert values["enable.auto.commit"] is False
    assert spec.commit_offsets_in_finalize_enabled is True
    assert spec.start_read_time == START_READ_TIME_MILLIS


def test_the_reference_defaults_for_contrast() -> None:
    spec = _spec(DEFAULTS)
    assert (group_id(spec), auto_offset_reset(spec), enable_auto_commit(spec)) == (
        TOPICS[DEFAULTS],
        "earliest",
        False,
    )
    assert (spec.commit_offsets_in_finalize_enabled, spec.start_read_time) == (True, None)


# Where the twin of each held partition starts after an unfixed restore, without --bootstrap: (jar, start_is,
# decided_by, fact); the start offset itself is never known without Kafka.
TWINS = [
    pytest.param(
        NO_GROUP_LATEST, V2_62, LOG_END_AT_RESTORE, AUTO_OFFSET_RESET, "auto.offset.reset=latest, no group.id",
        id="no_group_latest",
    ),
    pytest.param(
        AUTO_COMMIT, V2_62, COMMITTED, COMMITTED_OFFSET,
        f"group.id {TOPICS[AUTO_COMMIT]}, whose offsets the job commits; --bootstrap reads them",
        id="auto_commit",
    ),
    # The consumer commits on its own: a release whose FlinkSource never finalizes changes nothing.
    pytest.param(
        AUTO_COMMIT, V2_54, COMMITTED, COMMITTED_OFFSET,
        f"group.id {TOPICS[AUTO_COMMIT]}, whose offsets the job commits; --bootstrap reads them",
        id="auto_commit-2.54",
    ),
    # startReadTime decides before the group's committed offsets.
    pytest.param(
        START_READ, V2_62, OFFSET_FOR_TIME, START_READ_TIME, "startReadTime 2026-01-01T00:00:00.000Z",
        id="start_read_time",
    ),
    pytest.param(
        START_READ, V2_54, OFFSET_FOR_TIME, START_READ_TIME, "startReadTime 2026-01-01T00:00:00.000Z",
        id="start_read_time-2.54",
    ),
    pytest.param(
        DEFAULTS, V2_62, COMMITTED, COMMITTED_OFFSET,
        f"group.id {TOPICS[DEFAULTS]}, whose offsets the job commits; --bootstrap reads them",
        id="defaults",
    ),
    # commitOffsetsInFinalize on a release that never finalizes: nothing committed, auto.offset.reset decides.
    pytest.param(
        DEFAULTS, V2_54, LOG_START, AUTO_OFFSET_RESET,
        f"auto.offset.reset=earliest, unless group.id {TOPICS[DEFAULTS]} holds offsets committed earlier "
        "(--bootstrap reads them)",
        id="defaults-2.54",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("folder", "jar", "start_is", "decided_by", "fact"), TWINS)
def test_twin_start_of_each_partition_without_kafka(
    folder: Path, jar: JarFacts, start_is: str, decided_by: str, fact: str
) -> None:
    source = _source(folder)
    topic = TOPICS[folder]
    assert source.partitions == tuple(HeldPartition(topic, p, NEXT_OFFSET[folder]) for p in range(4))
    twins = [predict_twin(source.spec, jar, held, None) for held in source.partitions]
    assert [
        (t.topic, t.partition, t.restored_from, t.twin_start, t.start_is, t.decided_by, t.fact, t.read_twice)
        for t in twins
    ] == [(topic, p, NEXT_OFFSET[folder], None, start_is, decided_by, fact, ()) for p in range(4)]
    assert all(twin.after_restore for twin in twins)
    # The guard's own path from the savepoint's sources gives the same twins.
    assert source_twins(jar, [source], {}) == (tuple(twins),)


def test_no_twin_with_the_patched_jar() -> None:
    for folder in (NO_GROUP_LATEST, AUTO_COMMIT, START_READ):
        assert source_twins(PATCHED, [_source(folder)], {}) == ((),)


@pytest.mark.parametrize(
    ("folder", "jar", "warnings"),
    [
        pytest.param(NO_GROUP_LATEST, V2_62, [LATEST_WITHOUT_COMMITTED], id="no_group_latest"),
        pytest.param(AUTO_COMMIT, V2_62, [AUTO_COMMIT_WITHOUT_FINALIZE], id="auto_commit"),
        pytest.param(START_READ, V2_62, [], id="start_read_time"),
        pytest.param(START_READ, V2_54, [COMMIT_NEVER_FINALIZED], id="start_read_time-2.54"),
    ],
)
def test_guard_findings_without_kafka(folder: Path, jar: JarFacts, warnings: list[str]) -> None:
    # Every held partition is read twice by the unfixed restore; the consumer settings add their warnings.
    findings = judge(Restore(jar, [_source(folder)]), (), (), {})
    rereads = [(f.kind, f.severity, f.topic, f.partition) for f in findings if f.kind == RESTORE_REREADS]
    assert rereads == [(RESTORE_REREADS, ERROR, TOPICS[folder], p) for p in range(4)]
    others = [(f.kind, f.severity, f.count) for f in findings if f.kind != RESTORE_REREADS]
    assert others == [(kind, WARNING, 4) for kind in warnings]
