"""`splitaudit guard`: say before a restore what restoring a savepoint with a job jar will do to the data.

Every prediction comes from a fact read, never a guess: the jar's Beam release, runner, enumerator build and
whether its reader finalizes checkpoints (`patch.jar.read_jar_facts`), the savepoint's splits (the audit's
savepoint tables) and each KafkaIO read's consumer settings (its serialized `spec`), and with `--bootstrap` the
topic's partitions, log-start and end offsets, the read's group's committed offsets and the offsets at its
startReadTime (Kafka's admin API). The checks are the audit's own (assignment, `expired_unread`); the guard adds
what the jar makes of them, and where each twin reader of an unfixed FlinkSource starts (`guard/twin.py`). A
source of Flink's own KafkaSource (its splits' family) is judged from its enumerator's checkpoint, not the jar.
`judge` and `source_twins` are the pure part, `run_guard` reads the inputs and calls them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from splitaudit.audit.checks.assignment import PartitionList, check_assignment
from splitaudit.audit.checks.beam_names import NamingTemplate
from splitaudit.audit.checks.findings import ERROR, EXPIRED_UNREAD, INFO, LAG, UNASSIGNED, WARNING, Finding
from splitaudit.audit.checks.ledger import ledger_of
from splitaudit.audit.checks.offsets import check_offsets
from splitaudit.audit.checks.savepoint_tables import SavepointTables, tables_of
from splitaudit.errors import UsageError
from splitaudit.guard.dynamic_kafka import with_recovery_window_losses
from splitaudit.guard.kafka_rescale import KafkaSourceJar, read_kafka_source_jar, rescale_detail
from splitaudit.guard.kafka_restore import KafkaSourceJob, kafka_restore_findings, kafka_source_snapshots
from splitaudit.guard.partitions import HeldPartition, PendingPartition
from splitaudit.guard.results import GuardReport, SourceFacts
from splitaudit.guard.split_files import check_split_files
from splitaudit.guard.twin import (
    TwinStart,
    auto_offset_reset,
    commits_offsets,
    enable_auto_commit,
    group_id,
    predict_twin,
)
from splitaudit.guard.windows import closed_window_findings, reread_before_savepoint
from splitaudit.patch.jar import JarFacts, read_jar_facts
from splitaudit.progress import Progress
from splitaudit.savepoint.fileio import DEFAULT_MAX_FILE_SIZE, list_tree
from splitaudit.savepoint_view import SavepointView, inspect_savepoint
from splitaudit.splits import beam_sdf
from splitaudit.splits import kafka as kafka_source
from splitaudit.splits.beam import KafkaIORead, kafka_read_spec
from splitaudit.splits.model import PENDING

if TYPE_CHECKING:
    from splitaudit.clients.kafka import PartitionOffsets

# Guard finding kinds (the audit's kinds for what its own checks find).
RESTORE_REREADS = "restore_rereads_partition"  # an unfixed FlinkSource reads every restored split twice
RESCALE = "rescale"  # a parallelism change the jar handles
RESCALE_LOSES_PENDING = "rescale_loses_pending_split"  # pending for a reader a lower parallelism does not have
RESTORE_REFUSED_IMPULSE = "restore_refused_unmapped_impulse"  # a portable pipeline's Impulse changes its id
DISCOVERED_ON_RESTORE = "partition_discovered_on_restore"  # not in the savepoint; the jar's enumerator adds it
# Warnings on consumer settings that lose data on a restart without state (beam#21742), and on commits that
# never happen.
AUTO_COMMIT_WITHOUT_FINALIZE = "auto_commit_without_finalize"  # enable.auto.commit, commitOffsetsInFinalize off
LATEST_WITHOUT_COMMITTED = "latest_without_committed_offsets"  # auto.offset.reset=latest, no committed offsets
COMMIT_NEVER_FINALIZED = "commit_offsets_never_finalized"  # commitOffsetsInFinalize on a FlinkSource of 2.52-2.55

FLINK_SOURCE_FAMILY = "beam_flink_source"
UNBOUNDED_WRAPPER_FAMILY = "beam_unbounded_wrapper"
SDF_FAMILY = beam_sdf.KafkaSdfResidual.type
KAFKA_SOURCE_FAMILY = kafka_source.KafkaPartitionSplit.type  # Flink's own KafkaSource (flink-connector-kafka)
PATCH_REMEDY = "run `splitaudit patch-jar JAR --out PATCHED.jar` and restore with PATCHED.jar"


@dataclass(frozen=True)
class SinkFolder:
    """A file sink's directory, and how its file names read (Beam's defaults unless a template is given)."""

    path: str
    naming: NamingTemplate = field(default_factory=NamingTemplate.beam_defaults)


def run_guard(
    savepoint: str,
    jar: Path,
    bootstrap: str | None,
    parallelism: int | None,
    progress: Progress,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    sink: SinkFolder | None = None,
    kafka_job: KafkaSourceJob | None = None,
) -> GuardReport:
    """Read the jar, the savepoint and (with `bootstrap`) the topics, and judge the restore; with `sink` (a file
    sink's directory) name the window files a re-read of closed windows would rewrite; `kafka_job` what the
    restored job's KafkaSource is built with (`guard/kafka_restore.py`). A file source's splits have their files
    checked on the local file system (`split_files.py`)."""
    if parallelism is not None and parallelism < 1:
        raise UsageError(f"--parallelism must be at least 1, not {parallelism}")
    ledger = None
    if sink is not None:
        with progress.step(f"read the file names of the sink {sink.path}"):
            ledger = ledger_of(list_tree(sink.path), sink.naming)
    with progress.step(f"recognise the job jar {jar}"):
        facts = read_jar_facts(jar)
        kafka_jar = read_kafka_source_jar(jar)
    with progress.step(f"read the savepoint {savepoint}"):
        view = inspect_savepoint(savepoint, max_file_size=max_file_size)
        tables = tables_of(view)
        sources = source_facts(tables, kafka_specs(view))
    topics = sorted({held.topic for source in sources for held in source.partitions})
    listed = None
    offsets: dict[tuple[str, int], PartitionOffsets] = {}
    start_offsets: dict[tuple[str, int], int | None] = {}
    notes: list[str] = []
    if bootstrap is not None:
        from splitaudit.clients.kafka import offsets_for_time, partition_offsets  # only with a cluster to ask

        with progress.step(f"read the partitions and offsets of {', '.join(topics)} at {bootstrap}"):
            for topic in topics:
                groups = _groups_reading(sources, topic)
                if len(groups) > 1:
                    notes.append(f"{topic} is read by groups {', '.join(sorted(groups))}: no committed offsets read")
                offsets |= partition_offsets(bootstrap, topic, next(iter(groups)) if len(groups) == 1 else None)
            for source in sources:
                if source.spec is not None and source.spec.start_read_time is not None:
                    for topic in sorted({held.topic for held in source.partitions}):
                        start_offsets |= offsets_for_time(bootstrap, topic, source.spec.start_read_time)
            listed = PartitionList(frozenset(offsets), f"the Kafka admin API at {bootstrap}")
    with progress.step("judge the restore"):
        assignment = check_assignment(tables, listed)
        offset_findings = check_offsets(offsets, tables.resume_offsets, {}, None)
        per_source = source_twins(facts, sources, offsets, start_offsets)
        enumerated = enumerated_partitions(tables)
        restore = Restore(facts, sources, parallelism, impulses(view), enumerated, kafka_jar)
        findings = judge(restore, assignment.findings, offset_findings, offsets, start_offsets, per_source)
        findings += check_split_files(view)  # a file source's split files, stat'ed (read-only)
        findings = with_recovery_window_losses(findings, tables)  # FLINK-40469: DynamicKafkaSource's lost partitions
        twins = tuple(chain.from_iterable(per_source))
        findings += tuple(kafka_restore_findings(kafka_source_snapshots(view), kafka_job or KafkaSourceJob(), offsets))
    rereads = [(twin, reread_before_savepoint(twin)) for twin in twins]
    wanted = [(t.topic, t.partition, offset) for t, span in rereads if span is not None for offset in span]
    if bootstrap is not None and wanted:
        from splitaudit.clients.kafka import record_times

        with progress.step("read the Kafka times of the records read again"):
            times = record_times(bootstrap, wanted)
        findings += tuple(closed_window_findings(twins, times, ledger))
    elif ledger is not None:
        notes.append("--sink: the windows a re-read rewrites are named with --bootstrap (the records' Kafka times)")
    notes = assignment.notes + notes
    if bootstrap is None:
        notes.append(
            "no --bootstrap: partitions added to the topic, expired offsets, committed offsets and the offsets "
            "read twice are not checked"
        )
    return GuardReport(tables.path, facts, bootstrap, parallelism, sources, findings, tuple(notes), twins)


def _groups_reading(sources: Sequence[SourceFacts], topic: str) -> set[str]:
    """The group.ids of the KafkaIO reads that hold partitions of `topic`."""
    groups = {
        group_id(source.spec)
        for source in sources
        if source.spec is not None and any(held.topic == topic for held in source.partitions)
    }
    return {group for group in groups if group is not None}


def impulses(view: SavepointView) -> tuple[str, ...]:
    """The ids of the Impulses a portable pipeline's reads start from: operators of parallelism 1 with no uid that
    hold Beam's `impulse-emitted` operator state."""
    return tuple(
        op.operator_id
        for op in view.operators
        if op.parallelism == 1 and op.uid is None and beam_sdf.IMPULSE_STATE in op.state_names
    )


def enumerated_partitions(tables: SavepointTables) -> frozenset[tuple[str, int]]:
    """The topic partitions the savepoint's enumerator checkpoints name, assigned or pending."""
    return frozenset(
        (row["topic"], row["partition"])
        for row in tables.enumerator
        if row["topic"] is not None and row["partition"] is not None
    )


def kafka_specs(view: SavepointView) -> dict[str, KafkaIORead]:
    """The KafkaIO read spec of each source operator (by id) that has one, from its splits' serialized sources."""
    specs: dict[str, KafkaIORead] = {}
    for operator in view.operators:
        if operator.source is None:
            continue
        enumerator = operator.source.enumerator
        states = [split.state for split in operator.source.reader_splits]
        spec = kafka_read_spec([*states, *([] if enumerator is None else [enumerator.state])])
        if spec is not None:
            specs[operator.operator_id] = spec
    return specs


def source_facts(tables: SavepointTables, specs: Mapping[str, KafkaIORead] | None = None) -> tuple[SourceFacts, ...]:
    """Each source operator of the savepoint: parallelism, split families, the partitions it holds and where
    each resumes (the audit's positions: the lowest next offset of any holder), and its KafkaIO read spec from
    `specs` (by operator id)."""
    specs = specs or {}
    families: dict[str, set[str]] = defaultdict(set)
    for row in (*tables.splits, *tables.enumerator):
        families[row["operator_id"]].add(row["split_type"])
    held: dict[str, list[HeldPartition]] = defaultdict(list)
    for (operator_id, topic, partition), offset in sorted(tables.positions.items()):
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
            spec=specs.get(row["operator_id"]),
        )
        for row in sorted((r for r in tables.operators if r["is_source"]), key=lambda r: str(r["operator_id"]))
    )


@dataclass(frozen=True)
class Restore:
    """A restore the guard judges: the job jar's facts, the savepoint's sources as the guard sees them
    (`source_facts`), what else the savepoint shows of it (the uid-less Impulses of a portable pipeline,
    `impulses`; the partitions its enumerator checkpoints name, `enumerated_partitions`), and the parallelism it
    restores at (None: unchanged)."""

    jar: JarFacts
    sources: Sequence[SourceFacts]
    parallelism: int | None = None
    impulse_ids: Sequence[str] = ()
    enumerated: Collection[tuple[str, int]] = ()
    kafka_jar: KafkaSourceJar | None = None  # what the jar's KafkaSource says of split reassignment on recovery


def judge(
    restore: Restore,
    assignment: Iterable[Finding],
    offsets: Iterable[Finding],
    kafka: Mapping[tuple[str, int], PartitionOffsets],
    start_offsets: Mapping[tuple[str, int], int | None] | None = None,
    twins: Sequence[Sequence[TwinStart]] | None = None,
) -> tuple[Finding, ...]:
    """The guard's findings for `restore`, judged with the savepoint's `assignment` and `offsets` checks and the
    topics' `kafka` offsets (`start_offsets`: each partition's offset at the read's start time, when it has one);
    `twins` what `source_twins` predicted for the same arguments, when the caller has it already (None: predicted
    here).

    - `restore_rereads_partition` (error), per partition a FlinkSource savepoint holds, when the jar's
      FlinkSource lacks the fix: its twin reader's start (`source_twins`) in the detail, and as count and offset
      ranges the offsets already in the topic from that start on (with `kafka`; else none), all read twice;
      every record produced after the restore is read twice too (the detail says so).
    - warnings on the read's consumer settings: `auto_commit_without_finalize`, `latest_without_committed_offsets`
      and `commit_offsets_never_finalized` (`_config_warnings`).
    - the assignment check's `partition_unassigned` (error: nothing reads it after the restore), unless the
      jar's enumerator discovers partitions on restore: then `partition_discovered_on_restore` (info). A topic
      Flink's own KafkaSource reads is judged from its enumerator's checkpoint instead (`_kafka_source_unassigned`).
      Its other findings (a partition held twice in the savepoint itself) pass through.
    - `expired_unread` (error) and `lag` (info, the backlog the restore starts with) from the offset check.
    - with a parallelism change: `rescale` (info) for legacy `UnboundedSourceWrapper` state, which Flink
      redistributes whole at any parallelism (no split is dropped; beyond the savepoint's splits a subtask
      idles), and on the FLIP-27 path of a jar with the fix, whose enumerator hands the restored splits out
      again; an unfixed jar is already an error. At a lower parallelism, a jar with only the upstream fix
      never assigns a split pending in the enumerator for a reader index the restored job does not have:
      `rescale_loses_pending_split` (error), per partition of such a split. A splittable-DoFn read's residuals
      (keyed state) move with their key groups (`rescale`, info), unless the parallelism change chains or
      unchains the uid-less Impulse the read starts from: its id changes and Flink refuses the restore
      (`restore_refused_unmapped_impulse`, error). Flink's own KafkaSource: `rescale` (info), its detail naming
      the jar fact that decides who hands the restored splits out (`kafka_jar`, `guard/kafka_rescale.py`).
    """
    jar, sources, parallelism = restore.jar, restore.sources, restore.parallelism
    if twins is None:
        twins = source_twins(jar, sources, kafka, start_offsets)
    findings: list[Finding] = []
    for source, rereads in zip(sources, twins, strict=True):
        findings += [_reread(jar, source, twin) for twin in rereads]
        findings += _config_warnings(jar, source, kafka)
        if parallelism is not None and parallelism != source.parallelism:
            findings += _rescale(jar, source, parallelism, restore.impulse_ids, restore.kafka_jar)
    for finding in assignment:
        if finding.kind == UNASSIGNED:
            kafka_reader = next((s for s in sources if _kafka_source_reads(s, finding.topic)), None)
            if kafka_reader is None:
                findings.append(_unassigned(jar, finding))
            else:
                findings.append(_kafka_source_unassigned(kafka_reader, finding, restore.enumerated, kafka))
        else:
            findings.append(finding)
    findings += [f for f in offsets if f.kind in (EXPIRED_UNREAD, LAG)]
    return tuple(findings)


def source_twins(
    jar: JarFacts,
    sources: Sequence[SourceFacts],
    kafka: Mapping[tuple[str, int], PartitionOffsets],
    start_offsets: Mapping[tuple[str, int], int | None] | None = None,
) -> tuple[tuple[TwinStart, ...], ...]:
    """Per source of `sources`, in their order, the twin reader of each partition it holds when a restore with
    `jar` reads its splits twice: an unfixed FlinkSource's; none for other sources, or when the jar has the fix
    or the patch."""
    start_offsets = start_offsets or {}
    return tuple(
        tuple(
            predict_twin(source.spec, jar, held, kafka.get(held.key), start_offsets.get(held.key))
            for held in source.partitions
        )
        if FLINK_SOURCE_FAMILY in source.families and jar.rereads_restored_splits
        else ()
        for source in sources
    )


def _reread(jar: JarFacts, source: SourceFacts, twin: TwinStart) -> Finding:
    resume = "its restored offset" if twin.restored_from is None else twin.restored_from
    detail = (
        f"source {source.operator}: {jar.label} re-initialises the restored FlinkSource splits (beam#31313): "
        f"besides the restored reader at {resume}, {twin.sentence()}; {PATCH_REMEDY}"
    )
    count = twin.read_twice_count
    return Finding(RESTORE_REREADS, ERROR, twin.topic, twin.partition, count, twin.read_twice, detail=detail)


def _config_warnings(
    jar: JarFacts, source: SourceFacts, kafka: Mapping[tuple[str, int], PartitionOffsets]
) -> list[Finding]:
    """Consumer settings of a KafkaIO read that lose records or commit nothing (beam#21742, #29902, #30539).

    - `auto_commit_without_finalize`: `enable.auto.commit` with commitOffsetsInFinalize off: the consumer
      commits what it polled, before the records are processed and checkpointed, so a start from the group's
      offsets (a restore without state, a new job) skips records read but not yet processed.
    - `latest_without_committed_offsets`: `auto.offset.reset=latest` and no committed offsets to start from (no
      group; a group the job does not commit to; with `kafka`, the partitions whose group has none): a start
      without state, or a partition added later, begins at the log end, skipping what was produced meanwhile.
    - `commit_offsets_never_finalized`: commitOffsetsInFinalize on a FlinkSource of a release that never
      finalizes checkpoints (2.52-2.55): nothing is committed, so the group's offsets are stale or absent.
    """
    spec = source.spec
    if spec is None:
        return []
    where = f"source {source.operator}"
    warnings: list[Finding] = []
    commit_in_finalize = bool(spec.commit_offsets_in_finalize_enabled)
    if enable_auto_commit(spec) and not commit_in_finalize:
        warnings.append(
            Finding(
                AUTO_COMMIT_WITHOUT_FINALIZE,
                WARNING,
                None,
                None,
                len(source.partitions),
                detail=f"{where}: enable.auto.commit is on and commitOffsetsInFinalize off, so the consumer commits "
                "offsets as it polls, before the records are processed and checkpointed: a start from the group's "
                "offsets (a restore without state, a new job) skips records read but not processed (beam#21742); "
                "use commitOffsetsInFinalize() instead",
            )
        )
    if auto_offset_reset(spec) == "latest":
        group = group_id(spec)
        if group is None or not kafka:
            uncommitted = list(source.partitions) if group is None or not commits_offsets(spec, jar) else []
        else:
            uncommitted = [h for h in source.partitions if h.key in kafka and kafka[h.key].committed is None]
        if uncommitted:
            why = "no group.id" if group is None else f"group.id {group} has no committed offset for them"
            warnings.append(
                Finding(
                    LATEST_WITHOUT_COMMITTED,
                    WARNING,
                    None if len({h.topic for h in uncommitted}) > 1 else uncommitted[0].topic,
                    uncommitted[0].partition if len(uncommitted) == 1 else None,
                    len(uncommitted),
                    detail=f"{where}: auto.offset.reset=latest and {why}: a start without state (a restore "
                    "without the savepoint, a new job) or a partition added later begins at the log end, skipping "
                    "every record produced while the job was down (beam#21742); set a group.id with "
                    "commitOffsetsInFinalize(), or auto.offset.reset=earliest",
                )
            )
    never_finalized = jar.flink_source and not jar.finalizes_checkpoints
    if commit_in_finalize and FLINK_SOURCE_FAMILY in source.families and never_finalized:
        warnings.append(
            Finding(
                COMMIT_NEVER_FINALIZED,
                WARNING,
                None,
                None,
                len(source.partitions),
                detail=f"{where}: commitOffsetsInFinalize is set, but the FlinkSource reader of {jar.label} "
                "never finalizes checkpoints (Beam 2.52-2.55, beam#29902, #30539): no offset is committed, so "
                "the group's committed offsets are stale or absent; Beam 2.56.0 and later commit them",
            )
        )
    return warnings


def _rescale(
    jar: JarFacts,
    source: SourceFacts,
    parallelism: int,
    impulse_ids: Sequence[str],
    kafka_jar: KafkaSourceJar | None = None,
) -> list[Finding]:
    change = f"source {source.operator}: parallelism {source.parallelism} in the savepoint, {parallelism} on restore"
    if KAFKA_SOURCE_FAMILY in source.families:
        detail = f"{change}: {rescale_detail(kafka_jar)}"
        return [Finding(RESCALE, INFO, None, None, len(source.partitions), detail=detail)]
    if SDF_FAMILY in source.families:
        return [_sdf_rescale(source, parallelism, impulse_ids, change)]
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


def _sdf_rescale(source: SourceFacts, parallelism: int, impulse_ids: Sequence[str], change: str) -> Finding:
    """A splittable-DoFn read restored at another parallelism.

    Its residuals are keyed state: Flink gives every key group, and with it each residual and its timer, to the
    subtask that owns it at the new parallelism, so none is dropped. But the read starts from an Impulse that
    Beam's portable translator gives no uid (Beam 2.62.0, apache/beam runners/flink/src/main/java/org/apache/
    beam/runners/flink/FlinkStreamingPortablePipelineTranslator.java, `translateImpulse`), so Flink derives its
    id from the job graph, and that hash counts the outputs the operator chains with (apache/flink
    flink-streaming-java/src/main/java/org/apache/flink/streaming/api/graph/StreamGraphHasherV2.java). The
    Impulse runs at parallelism 1 and chains with the stage after it only when that stage runs at 1 too: a
    change across 1 changes the Impulse's id, and Flink refuses the restore (seen on the real run at 2 -> 1:
    tests/integration/test_python_pipeline.py). A change that does not cross 1 keeps it: the real run at 2 -> 3
    (the same file) resumed every partition once, from the savepoint's offset, as predicted.
    """
    count = len(source.partitions)
    if impulse_ids and (parallelism == 1) != (source.parallelism == 1):
        chains = "chains with" if parallelism == 1 else "no longer chains with"
        keep = "1" if source.parallelism == 1 else "2 or more"
        detail = (
            f"{change}: the read starts from an Impulse without a uid ({', '.join(impulse_ids)}: Beam's portable "
            f"translator sets none, so Flink derives its id from the job graph); at parallelism {parallelism} it "
            f"{chains} the stage after it, its id changes, and Flink refuses the restore (Cannot map "
            "checkpoint/savepoint state for operator … to the new program); with --allowNonRestoredState its "
            f"`{beam_sdf.IMPULSE_STATE}` state is dropped and it emits again (beam#30903). Restore at parallelism "
            f"{keep}"
        )
        return Finding(RESTORE_REFUSED_IMPULSE, ERROR, None, None, count, detail=detail)
    detail = (
        f"{change}: the splittable DoFn's residuals are keyed state; Flink hands each key group, with its "
        "residuals and their timers, to the subtask that owns it at the new parallelism, so every partition "
        "resumes where the savepoint holds it"
    )
    return Finding(RESCALE, INFO, None, None, count, detail=detail)


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


def _kafka_source_reads(source: SourceFacts, topic: str | None) -> bool:
    """Whether `source` is a KafkaSource whose splits hold partitions of `topic`."""
    return KAFKA_SOURCE_FAMILY in source.families and any(held.topic == topic for held in source.partitions)


def _kafka_source_unassigned(
    source: SourceFacts,
    finding: Finding,
    enumerated: Collection[tuple[str, int]],
    kafka: Mapping[tuple[str, int], PartitionOffsets],
) -> Finding:
    """A partition of a KafkaSource's topic that no reader split holds, judged from the enumerator's checkpoint.

    flink-connector-kafka 3.3.0, KafkaSourceEnumerator.start(): with `partition.discovery.interval.ms` <= 0
    (periodic discovery disabled) it still lists the subscribed partitions once (`callAsync` without a period), as
    it does at every start, a restore included; `checkPartitionChanges` -> `getPartitionChange` compares them with
    the partitions of its checkpointed `KafkaSourceEnumState` (assigned and pending), and assigns each one the state
    does not name from the new-partition offsets initializer, which KafkaSourceBuilder fixes to earliest. So:

    - not named by the enumerator's checkpoint (added to the topic after the savepoint): read from its log start
      on restore, `partition_discovered_on_restore` (info), with `kafka` its offsets as count and range. Measured on
      the stack's Flink 1.19.3 with connector 3.3.0 (tests/integration/test_flink_kafka_source.py). This assumes
      the checkpoint's initial discovery had finished (state version 2 on); before it, the partition would start
      from the job's own starting offsets.
    - named as assigned but held by no reader: the enumerator never hands it out again, the error stands.
    """
    key = (str(finding.topic), int(finding.partition or 0))  # the assignment check names both in this kind
    if key in enumerated:
        detail = (
            f"{finding.detail}; the KafkaSource enumerator's checkpoint names it as assigned, so its listing at start "
            "does not hand it out again"
        )
        return replace(finding, detail=detail)
    offsets = kafka.get(key)
    count = 0 if offsets is None else offsets.end - offsets.log_start
    ranges = ((offsets.log_start, offsets.end - 1),) if offsets is not None and count else ()
    now = "" if offsets is None else f" (offsets {offsets.log_start}..{offsets.end - 1} now, {count} records)"
    detail = (
        f"source {source.operator}: decided by the savepoint, whose KafkaSourceEnumState does not name it: the "
        "KafkaSource enumerator lists the topic's partitions once when it starts, even with "
        "partition.discovery.interval.ms disabled, and assigns a partition its checkpoint does not name from "
        f"earliest: read from its log start{now}"
    )
    return replace(finding, kind=DISCOVERED_ON_RESTORE, severity=INFO, count=count, offset_ranges=ranges, detail=detail)
