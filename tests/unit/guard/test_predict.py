"""The guard's pure judgement and its reading of a job jar, on jars built here and facts given as values."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from splitaudit.audit.checks.assignment import check_assignment
from splitaudit.audit.checks.findings import ERROR, INFO, LAG, UNASSIGNED, Finding
from splitaudit.audit.checks.savepoint_tables import SavepointTables, tables_of
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.guard.partitions import HeldPartition, PendingPartition
from splitaudit.guard.predict import (
    DISCOVERED_ON_RESTORE,
    RESCALE,
    RESCALE_LOSES_PENDING,
    RESTORE_REREADS,
    Restore,
    impulses,
    judge,
    kafka_specs,
    source_facts,
    source_twins,
)
from splitaudit.guard.results import GuardReport, SourceFacts
from splitaudit.patch.jar import (
    DISCOVERY_MARKER,
    ENUMERATOR_CLASS,
    FIXED_CONSTRUCTOR_DESCRIPTOR,
    FLINK_RUNNER_CLASS,
    PATCH_MARKER,
    JarFacts,
    read_jar_facts,
)
from splitaudit.savepoint_view import inspect_savepoint
from splitaudit.splits.beam import ConsumerConfig, KafkaIORead
from splitaudit.splits.model import PENDING

RUNNER_POM = "META-INF/maven/org.apache.beam/beam-runners-flink-1.19/pom.properties"
TOPIC = "orders"


def _jar(tmp_path: Path, enumerator: bytes | None, name: str = "job.jar") -> Path:
    """A shaded-jar look-alike: Beam's runner pom, FlinkRunner and (unless None) an enumerator with these bytes."""
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr(RUNNER_POM, "groupId=org.apache.beam\nversion=2.62.0\n")
        jar.writestr(FLINK_RUNNER_CLASS, b"\xca\xfe\xba\xbe")
        if enumerator is not None:
            jar.writestr(ENUMERATOR_CLASS, b"\xca\xfe\xba\xbe" + enumerator)
    return path


@pytest.mark.parametrize(
    ("enumerator", "expected"),
    [
        (b"stock", (True, False, False, False, True)),
        (FIXED_CONSTRUCTOR_DESCRIPTOR, (True, True, False, False, False)),
        (FIXED_CONSTRUCTOR_DESCRIPTOR + PATCH_MARKER, (True, False, True, False, False)),
        (FIXED_CONSTRUCTOR_DESCRIPTOR + PATCH_MARKER + DISCOVERY_MARKER, (True, False, True, True, False)),
        (None, (False, False, False, False, False)),
    ],
    ids=["stock", "upstream-fix", "patched", "patched-with-discovery", "no-flink-source"],
)
def test_jar_facts_come_from_the_enumerator_bytes(
    tmp_path: Path, enumerator: bytes | None, expected: tuple[bool, ...]
) -> None:
    facts = read_jar_facts(_jar(tmp_path, enumerator))
    assert (facts.beam_version, facts.flink_runner) == ("2.62.0", "beam-runners-flink-1.19")
    assert (
        facts.flink_source,
        facts.upstream_fix,
        facts.splitaudit_patch,
        facts.discovery,
        facts.rereads_restored_splits,
    ) == expected


def test_a_jar_without_beam_is_a_plain_flink_job(tmp_path: Path) -> None:
    path = tmp_path / "flink.jar"
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("org/apache/flink/connector/kafka/source/KafkaSource.class", b"\xca\xfe\xba\xbe")
    facts = read_jar_facts(path)
    assert (facts.beam_version, facts.flink_runner, facts.rereads_restored_splits) == (None, None, False)
    assert facts.label == "a job jar without Beam"


def _facts(*, fixed: bool = False, patched: bool = False, discovery: bool = False, finalizes: bool = True) -> JarFacts:
    """A Beam 2.62.0 job jar's facts (its FlinkSource reader finalizes checkpoints, as 2.56 on do)."""
    return JarFacts("job.jar", "2.62.0", "beam-runners-flink-1.19", True, fixed, patched, discovery, finalizes)


STOCK, PATCHED = _facts(), _facts(patched=True)
# The reference pipeline's read: a group, earliest, commitOffsetsInFinalize (Beam 2.62.0 finalizes: it commits).
REFERENCE = KafkaIORead(
    "org.apache.beam.sdk.io.kafka.AutoValue_KafkaIO_Read",
    ConsumerConfig((("auto.offset.reset", "earliest"), ("enable.auto.commit", False), ("group.id", "g"))),
    None,
    True,
    None,
)
FLINK_SOURCE = SourceFacts(
    "kafka-read",
    2,
    ("beam_flink_source",),
    tuple(HeldPartition(TOPIC, p, 5000) for p in range(4)),
    spec=REFERENCE,
)
LEGACY = SourceFacts(
    "kafka-read", 2, ("beam_unbounded_wrapper",), tuple(HeldPartition(TOPIC, p, 700) for p in range(3))
)
KAFKA = {(TOPIC, p): PartitionOffsets(0, 10_000 + p, 5000) for p in range(4)}


def _rows(
    findings: tuple[Finding, ...],
) -> list[tuple[str, str, str | None, int | None, int, tuple[tuple[int, int], ...]]]:
    return [(f.kind, f.severity, f.topic, f.partition, f.count, f.offset_ranges) for f in findings]


def test_an_unpatched_flink_source_rereads_every_partition_from_the_twins_start() -> None:
    findings = judge(Restore(STOCK, [FLINK_SOURCE]), (), (), KAFKA)
    assert _rows(findings) == [(RESTORE_REREADS, ERROR, TOPIC, p, 5000 + p, ((5000, 9999 + p),)) for p in range(4)]
    assert findings[0].detail == (
        "source kafka-read: Beam 2.62.0 with beam-runners-flink-1.19, unpatched re-initialises the restored "
        "FlinkSource splits (beam#31313): besides the restored reader at 5000, a second reader starts at 5000 (the "
        "group's committed offset) (group.id g has committed offset 5000): offsets 5000..9999 in the topic now "
        "(5000) and every record produced after the restore is read twice; run `splitaudit patch-jar JAR --out "
        "PATCHED.jar` and restore with PATCHED.jar"
    )
    assert [(t.partition, t.twin_start, t.decided_by) for t in source_twins(STOCK, [FLINK_SOURCE], KAFKA)[0]] == [
        (p, 5000, "committed_offset") for p in range(4)
    ]


@pytest.mark.parametrize("jar", [PATCHED, _facts(fixed=True)], ids=["patched", "upstream-fix"])
def test_a_fixed_flink_source_restores_safely(jar: JarFacts) -> None:
    assert judge(Restore(jar, [FLINK_SOURCE]), (), (), KAFKA) == ()


def test_without_kafka_the_reread_names_the_partitions_with_no_count() -> None:
    assert _rows(judge(Restore(STOCK, [FLINK_SOURCE]), (), (), {})) == [
        (RESTORE_REREADS, ERROR, TOPIC, p, 0, ()) for p in range(4)
    ]
    (twin, *_) = source_twins(STOCK, [FLINK_SOURCE], {})[0]
    assert (twin.twin_start, twin.start_is, twin.fact) == (
        None, "committed_offset", "group.id g, whose offsets the job commits; --bootstrap reads them"
    )  # fmt: skip


def test_a_legacy_wrapper_is_not_affected_by_the_flink_source_bug() -> None:
    assert judge(Restore(STOCK, [LEGACY]), (), (), KAFKA) == ()


UNREAD = Finding(
    UNASSIGNED, ERROR, TOPIC, 4, 0,
    detail="source kafka-read: in the topic but held by no reader and not pending: nothing will read it",
)  # fmt: skip


def test_a_partition_no_split_covers_is_an_error_without_discovery() -> None:
    (finding,) = judge(Restore(PATCHED, [FLINK_SOURCE]), [UNREAD], (), KAFKA)
    assert (finding.kind, finding.severity, finding.partition) == (UNASSIGNED, ERROR, 4)
    assert finding.detail == (
        "source kafka-read: in the topic but held by no reader and not pending: nothing will read it; not in the "
        "savepoint, and Beam 2.62.0 with beam-runners-flink-1.19, patched by splitaudit has no partition "
        "discovery on restore"
    )


def test_a_jar_with_discovery_reads_a_partition_no_split_covers() -> None:
    (finding,) = judge(Restore(_facts(patched=True, discovery=True), [FLINK_SOURCE]), [UNREAD], (), KAFKA)
    assert (finding.kind, finding.severity, finding.partition) == (DISCOVERED_ON_RESTORE, INFO, 4)
    assert finding.detail == (
        "source kafka-read: in the topic but held by no reader and not pending: Beam 2.62.0 with "
        "beam-runners-flink-1.19, patched by splitaudit discovers partitions on restore: its enumerator assigns it"
    )


def test_the_offset_checks_expired_and_lag_pass_through_and_nothing_else() -> None:
    expired = Finding("expired_unread", ERROR, TOPIC, 0, 5, ((5000, 5004),))
    lag = Finding(LAG, INFO, TOPIC, 0, 4995, ((5005, 9999),))
    committed = Finding("committed_offset_mismatch", "warning", TOPIC, 0, 3)
    assert judge(Restore(PATCHED, [FLINK_SOURCE]), (), [expired, committed, lag], KAFKA) == (expired, lag)


def test_a_legacy_wrapper_restored_at_another_parallelism_keeps_every_split() -> None:
    (lower,) = judge(Restore(STOCK, [LEGACY], 1), (), (), KAFKA)
    assert (lower.kind, lower.severity, lower.count) == (RESCALE, INFO, 3)
    assert lower.detail == (
        "source kafka-read: parallelism 2 in the savepoint, 1 on restore: Flink redistributes Beam's "
        "UnboundedSourceWrapper state (list state, one element per split) whole, no split is dropped; each "
        "restored subtask reads the splits Flink hands it"
    )
    (higher,) = judge(Restore(STOCK, [LEGACY], 3), (), (), KAFKA)
    assert (higher.kind, higher.severity, higher.count) == (RESCALE, INFO, 3)
    assert higher.detail.endswith(
        "the splits were fixed when the job first started: subtasks beyond them hold none and idle"
    )


def test_a_flink_source_rescale_is_safe_with_the_fix_and_unsafe_without() -> None:
    assert _rows(judge(Restore(PATCHED, [FLINK_SOURCE], 1), (), (), KAFKA)) == [(RESCALE, INFO, None, None, 4, ())]
    kinds = {f.kind for f in judge(Restore(STOCK, [FLINK_SOURCE], 3), (), (), KAFKA)}
    assert kinds == {RESTORE_REREADS}


def _pending_for_reader_3() -> SourceFacts:
    """A parallelism-4 job's savepoint: readers 0-2 hold partitions 0-2 at 5,000, partition 3's split is still
    pending in the enumerator for reader 3 at 4,000 (given back, as after a failover), as its tables hold it."""
    operator = {"operator_id": "op1", "operator_uid": "kafka-read", "split_type": "beam_flink_source"}
    tables = SavepointTables(
        path="sp/_metadata",
        checkpoint_id=7,
        operators=({**operator, "parallelism": 4, "is_source": True},),
        splits=tuple({**operator, "subtask": p, "topic": TOPIC, "partition": p, "next_offset": 5000} for p in range(3)),
        enumerator=(
            {**operator, "subtask": 3, "status": PENDING, "topic": TOPIC, "partition": 3, "next_offset": 4000},
        ),
    )
    (source,) = source_facts(tables)
    return source


def test_source_facts_list_the_pending_splits_with_their_reader() -> None:
    source = _pending_for_reader_3()
    assert (source.operator, source.parallelism, source.families) == ("kafka-read", 4, ("beam_flink_source",))
    assert source.partitions == (*(HeldPartition(TOPIC, p, 5000) for p in range(3)), HeldPartition(TOPIC, 3, 4000))
    assert source.pending == (PendingPartition(TOPIC, 3, 3),)


def test_only_the_upstream_fix_loses_a_split_pending_for_a_reader_gone_at_a_lower_parallelism() -> None:
    upstream, source = _facts(fixed=True), _pending_for_reader_3()
    rows = _rows(judge(Restore(upstream, [source], 2), (), (), KAFKA))
    assert rows == [(RESCALE, INFO, None, None, 4, ()), (RESCALE_LOSES_PENDING, ERROR, TOPIC, 3, 0, ())]
    (lost,) = [f for f in judge(Restore(upstream, [source], 3), (), (), KAFKA) if f.kind == RESCALE_LOSES_PENDING]
    assert lost.detail.startswith(
        "source kafka-read: a split of this partition is pending in the enumerator for reader 3; restored at "
        "parallelism 3, Beam 2.62.0 with beam-runners-flink-1.19, with the upstream fix never assigns it"
    )
    # Reader 3 exists at parallelism 4 and more; the patch re-keys pending splits to index mod the parallelism.
    assert _rows(judge(Restore(upstream, [source], 4), (), (), KAFKA)) == []
    assert _rows(judge(Restore(PATCHED, [source], 2), (), (), KAFKA)) == [(RESCALE, INFO, None, None, 4, ())]


def test_the_ci_line_names_the_verdict_and_the_error_kinds() -> None:
    findings = judge(Restore(STOCK, [FLINK_SOURCE]), [UNREAD], (), KAFKA)
    unsafe = GuardReport("sp/_metadata", STOCK, "127.0.0.1:9092", None, (FLINK_SOURCE,), findings, ())
    assert (unsafe.safe, unsafe.exit_code) == (False, 1)
    assert unsafe.line == (
        "splitaudit-guard: UNSAFE errors=5 kinds=partition_unassigned,restore_rereads_partition "
        "savepoint=sp/_metadata jar=job.jar"
    )
    safe = GuardReport("sp/_metadata", PATCHED, None, None, (FLINK_SOURCE,), (), ())
    assert (safe.safe, safe.exit_code, safe.line) == (
        True, 0, "splitaudit-guard: safe savepoint=sp/_metadata jar=job.jar"
    )  # fmt: skip


def test_a_missing_or_broken_jar_is_bad_input_before_the_savepoint_is_read(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from splitaudit.cli import main

    broken = tmp_path / "broken.jar"
    broken.write_bytes(b"not a zip")
    cases = ((tmp_path / "missing.jar", "no such file"), (broken, "not a jar (zip) file: File is not a zip file"))
    for jar, message in cases:
        result = CliRunner().invoke(main, ["guard", "--savepoint", str(tmp_path), "--jar", str(jar)])
        assert result.exit_code == 2
        # Progress lines first (the step that failed), then the error in one line.
        assert result.stderr.strip().splitlines()[-1] == f"error: {jar}: {message}"
        assert "Traceback" not in result.stderr


SDF_SAVEPOINT = next((Path(__file__).parents[3] / "fixtures" / "beam_sdf" / "heap_before").glob("savepoint-*"))
SDF_STAGE, SDF_IMPULSE = "86c03fec004227a66caab6e4b0579673", "bc764cd8ddf7a0cff126f51c16239658"
# The Python pipeline's jar is Beam's Flink job server: Beam 2.62.0, no FlinkSource in its path.
JOB_SERVER = JarFacts("job-server.jar", "2.62.0", "beam-runners-flink-1.19", False, False, False, False, False)


@pytest.mark.parametrize(
    ("parallelism", "expected"),
    [
        (2, []),
        (3, [("rescale", INFO, 4)]),  # the Impulse stays unchained: the residuals move with their key groups
        (1, [("restore_refused_unmapped_impulse", ERROR, 4)]),  # Flink refused this restore on the real run
    ],
)
def test_a_portable_pipelines_sdf_restore_is_judged_from_its_savepoint(
    parallelism: int, expected: list[tuple[str, str, int]]
) -> None:
    view = inspect_savepoint(str(SDF_SAVEPOINT))
    assert impulses(view) == (SDF_IMPULSE,)  # parallelism 1, `impulse-emitted` state, no uid
    tables = tables_of(view)
    sources = source_facts(tables, kafka_specs(view))
    assert [(s.operator, s.parallelism, s.families) for s in sources] == [(SDF_STAGE, 2, ("beam_kafka_sdf",))]
    # fixtures/beam_sdf/heap_before/expected.json: every partition resumes at 500.
    assert [(h.partition, h.next_offset) for h in sources[0].partitions] == [(p, 500) for p in range(4)]
    check = check_assignment(tables)
    findings = judge(Restore(JOB_SERVER, sources, parallelism, impulse_ids=impulses(view)), check.findings, (), {})
    assert [(f.kind, f.severity, f.count) for f in findings] == expected
    if parallelism == 1:
        assert f"Impulse without a uid ({SDF_IMPULSE}" in findings[0].detail
        assert findings[0].detail.endswith("Restore at parallelism 2 or more")
