"""`splitaudit guard`: say before a restore what restoring a savepoint with a job jar will do to the data.

Every prediction comes from a fact read, never a guess: the jar's Beam release, runner and enumerator build
(`patch.jar.read_jar_facts`), the savepoint's splits (the audit's savepoint tables), and with `--bootstrap` the
topic's partitions and log-start offsets (Kafka's admin API). The checks are the audit's own (assignment,
`expired_unread`); the guard adds what the jar makes of them. `judge` is the pure part, `run_guard` reads the
inputs and calls it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from splitaudit.audit.assignment import PartitionList, check_assignment
from splitaudit.audit.findings import ERROR, EXPIRED_UNREAD, INFO, LAG, UNASSIGNED, Finding
from splitaudit.audit.offsets import check_offsets
from splitaudit.audit.rewind import positions, resume_offsets
from splitaudit.audit.savepoint_tables import SavepointTables, savepoint_tables
from splitaudit.errors import UsageError
from splitaudit.guard.results import GuardReport, HeldPartition, PendingPartition, SourceFacts
from splitaudit.patch.jar import JarFacts, read_jar_facts
from splitaudit.progress import Progress
from splitaudit.savepoint.fileio import DEFAULT_MAX_FILE_SIZE
from splitaudit.splits.model import PENDING

if TYPE_CHECKING:
    from splitaudit.clients.kafka import PartitionOffsets

# Guard finding kinds (the audit's kinds for what its own checks find).
RESTORE_REREADS = "restore_rereads_partition"  # an unfixed FlinkSource reads every restored split twice
RESCALE = "rescale"  # a parallelism change the jar handles
RESCALE_LOSES_PENDING = "rescale_loses_pending_split"  # pending for a reader a lower parallelism does not have
DISCOVERED_ON_RESTORE = "partition_discovered_on_restore"  # not in the savepoint; the jar's enumerator adds it

FLINK_SOURCE_FAMILY = "beam_flink_source"
UNBOUNDED_WRAPPER_FAMILY = "beam_unbounded_wrapper"
PATCH_REMEDY = "run `splitaudit patch-jar JAR --out PATCHED.jar` and restore with PATCHED.jar"


def run_guard(
    savepoint: str,
    jar: Path,
    bootstrap: str | None,
    parallelism: int | None,
    progress: Progress,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
) -> GuardReport:
    """Read the jar, the savepoint and (with `bootstrap`) the topics, and judge the restore."""
    if parallelism is not None and parallelism < 1:
        raise UsageError(f"--parallelism must be at least 1, not {parallelism}")
    with progress.step(f"recognise the job jar {jar}"):
        facts = read_jar_facts(jar)
    with progress.step(f"read the savepoint {savepoint}"):
        tables = savepoint_tables(savepoint, max_file_size=max_file_size)
        sources = source_facts(tables)
    topics = sorted({held.topic for source in sources for held in source.partitions})
    listed = None
    offsets: dict[tuple[str, int], PartitionOffsets] = {}
    if bootstrap is not None:
        from splitaudit.clients.kafka import partition_offsets  # the Kafka client: only with a cluster to ask

        with progress.step(f"read the partitions and offsets of {', '.join(topics)} at {bootstrap}"):
            for topic in topics:
                offsets |= partition_offsets(bootstrap, topic)
            listed = PartitionList(frozenset(offsets), f"the Kafka admin API at {bootstrap}")
    with progress.step("judge the restore"):
        assignment = check_assignment(tables, listed)
        offset_findings = check_offsets(offsets, resume_offsets(tables), {}, None)
        findings = judge(facts, sources, assignment.findings, offset_findings, offsets, parallelism)
    notes = [f"partitions of {m.operator} from {m.partitions_from}" for m in assignment.matrices]
    if bootstrap is None:
        notes.append("no --bootstrap: partitions added to the topic and expired offsets are not checked")
    return GuardReport(tables.path, facts, bootstrap, parallelism, sources, findings, tuple(notes))


def source_facts(tables: SavepointTables) -> tuple[SourceFacts, ...]:
    """Each source operator of the savepoint: parallelism, split families, the partitions it holds and where
    each resumes (the audit's positions: the lowest next offset of any holder)."""
    families: dict[str, set[str]] = defaultdict(set)
    for row in (*tables.splits, *tables.enumerator):
        families[row["operator_id"]].add(row["split_type"])
    held: dict[str, list[HeldPartition]] = defaultdict(list)
    for (operator_id, topic, partition), offset in sorted(positions(tables).items()):
        held[operator_id].append(HeldPartition(topic, partition, offset))
    pending: dict[str, list[PendingPartition]] = defaultdict(list)
    for row in tables.enumerator:
        if row["status"] == PENDING and row["topic"] is not None and row["partition"] is not None:
            pending[row["operator_id"]].append(PendingPartition(row["topic"], row["partition"], row["subtask"]))
    return tuple(
        SourceFacts(
            operator=row["operator_uid"] or row["operator_id"],
            parallelism=row["parallelism"],
            families=tuple(sorted(families[row["operator_id"]])),
            partitions=tuple(held[row["operator_id"]]),
            pending=tuple(sorted(pending[row["operator_id"]], key=lambda p: (p.topic, p.partition, p.subtask or 0))),
        )
        for row in sorted((r for r in tables.operators if r["is_source"]), key=lambda r: str(r["operator_id"]))
    )


def judge(
    jar: JarFacts,
    sources: Sequence[SourceFacts],
    assignment: Iterable[Finding],
    offsets: Iterable[Finding],
    kafka: Mapping[tuple[str, int], PartitionOffsets],
    parallelism: int | None,
) -> tuple[Finding, ...]:
    """The guard's findings for restoring `sources` with `jar` at `parallelism` (None: unchanged).

    - `restore_rereads_partition` (error), per partition a FlinkSource savepoint holds, when the jar's
      FlinkSource lacks the fix: count is the offsets it will read twice as the topic stands (end offset minus
      the savepoint's next offset, with `kafka`; else 0).
    - the assignment check's `partition_unassigned` (error: nothing reads it after the restore), unless the
      jar's enumerator discovers partitions on restore: then `partition_discovered_on_restore` (info).
      Its other findings (a partition held twice in the savepoint itself) pass through.
    - `expired_unread` (error) and `lag` (info, the backlog the restore starts with) from the offset check.
    - with a parallelism change: `rescale` (info) for legacy `UnboundedSourceWrapper` state, which Flink
      redistributes whole at any parallelism (no split is dropped; beyond the savepoint's splits a subtask
      idles), and on the FLIP-27 path of a jar with the fix, whose enumerator hands the restored splits out
      again; an unfixed jar is already an error. At a lower parallelism, a jar with only the upstream fix
      never assigns a split pending in the enumerator for a reader index the restored job does not have:
      `rescale_loses_pending_split` (error), per partition of such a split.
    """
    findings: list[Finding] = []
    for source in sources:
        if FLINK_SOURCE_FAMILY in source.families and jar.rereads_restored_splits:
            findings += [_reread(jar, source, held, kafka.get(held.key)) for held in source.partitions]
        if parallelism is not None and parallelism != source.parallelism:
            findings += _rescale(jar, source, parallelism)
    for finding in assignment:
        if finding.kind == UNASSIGNED:
            findings.append(_unassigned(jar, finding))
        else:
            findings.append(finding)
    findings += [f for f in offsets if f.kind in (EXPIRED_UNREAD, LAG)]
    return tuple(findings)


def _reread(jar: JarFacts, source: SourceFacts, held: HeldPartition, offsets: PartitionOffsets | None) -> Finding:
    resume = held.next_offset
    ranges: tuple[tuple[int, int], ...] = ()
    count = 0
    if offsets is not None and resume is not None and offsets.end > resume:
        count, ranges = offsets.end - resume, ((resume, offsets.end - 1),)
    detail = (
        f"source {source.operator}: {jar.label} re-initialises the restored FlinkSource splits, so a second "
        f"reader reads this partition again from {'its restored offset' if resume is None else resume} "
        f"(beam#31313); {PATCH_REMEDY}"
    )
    return Finding(RESTORE_REREADS, ERROR, held.topic, held.partition, count, ranges, detail=detail)


def _rescale(jar: JarFacts, source: SourceFacts, parallelism: int) -> list[Finding]:
    change = f"source {source.operator}: parallelism {source.parallelism} in the savepoint, {parallelism} on restore"
    if UNBOUNDED_WRAPPER_FAMILY in source.families:
        # Beam 2.62.0, apache/beam runners/flink/src/main/java/org/apache/beam/runners/flink/translation/
        # wrappers/streaming/io/UnboundedSourceWrapper.java: the constructor fixes the splits once,
        # `source.split(parallelism, ...)`; `initializeState` keeps one element per split in
        # `stateStore.getListState(...)`, operator list state (not union state) that Flink splits across the new
        # subtasks, every element to exactly one of them (apache/flink flink-runtime/src/main/java/org/apache/
        # flink/runtime/checkpoint/RoundRobinOperatorStateRepartitioner.java); `open()` on a restore creates a
        # reader for every element its subtask was given and never splits again. So a restore at any
        # parallelism reads every split the savepoint holds: fewer subtasks take several each, extra ones idle.
        more = (
            "each restored subtask reads the splits Flink hands it"
            if parallelism < source.parallelism
            else "the splits were fixed when the job first started: subtasks beyond them hold none and idle"
        )
        detail = (
            f"{change}: Flink redistributes Beam's UnboundedSourceWrapper state (list state, one element per split) "
            f"whole, no split is dropped; {more}"
        )
        return [Finding(RESCALE, INFO, None, None, len(source.partitions), detail=detail)]
    if FLINK_SOURCE_FAMILY in source.families and not jar.rereads_restored_splits:
        detail = f"{change}: the enumerator of {jar.label} hands the restored splits to the new readers"
        rescale = Finding(RESCALE, INFO, None, None, len(source.partitions), detail=detail)
        return [rescale, *_lost_pending(jar, source, parallelism)]
    return []


def _lost_pending(jar: JarFacts, source: SourceFacts, parallelism: int) -> list[Finding]:
    """Splits pending for readers gone at `parallelism`, which an upstream-fixed enumerator never assigns.

    Beam 2.70.0, apache/beam runners/flink/src/main/java/org/apache/beam/runners/flink/translation/wrappers/
    streaming/io/source/FlinkSource.java `restoreEnumerator`: every pending split goes back keyed by the reader
    index it was checkpointed for (`addSplitsBack(splitsForSubtask, subtaskId)`), and the restored enumerator
    (FlinkSourceSplitEnumerator.java, `splitsInitialized` true) hands them out only in `addReader(subtaskId)`,
    `pendingSplits.remove(subtaskId)`: a reader index the restored job does not have never registers. The
    splitaudit patch re-keys them to index mod the new parallelism on restore.
    """
    if not jar.upstream_fix or jar.splitaudit_patch:
        return []
    return [
        Finding(
            RESCALE_LOSES_PENDING,
            ERROR,
            p.topic,
            p.partition,
            0,
            detail=f"source {source.operator}: a split of this partition is pending in the enumerator for reader "
            f"{p.subtask}; restored at parallelism {parallelism}, {jar.label} never assigns it (no reader "
            f"{p.subtask} registers), so the partition is not read; restore at parallelism {source.parallelism}, "
            "savepoint once the readers hold every split, and lower the parallelism from that savepoint",
        )
        for p in source.pending
        if p.subtask is not None and p.subtask >= parallelism
    ]


def _unassigned(jar: JarFacts, finding: Finding) -> Finding:
    if jar.discovery:
        detail = finding.detail.replace(
            "nothing will read it", f"{jar.label} discovers partitions on restore: its enumerator assigns it"
        )
        return replace(finding, kind=DISCOVERED_ON_RESTORE, severity=INFO, detail=detail)
    detail = finding.detail + f"; not in the savepoint, and {jar.label} has no partition discovery on restore"
    return replace(finding, detail=detail)
