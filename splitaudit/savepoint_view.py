"""`SavepointView`: what `splitaudit inspect` shows, built from `_metadata`, its state files and the decoders.

For every operator: id, uid, name, parallelism, and — for sources — each subtask's reader splits (FLIP-27
`SourceReaderState`, or Beam's legacy `_default_` wrapper state) and the enumerator checkpoint held by the
operator coordinator; for the stage running KafkaIO's splittable DoFn on Beam's portable runner, its residuals,
read from keyed state with Beam's coders plugged into the keyed reader (`beam_coder_decoder`). `to_json` is the
`inspect --json` document; the containers it reads are described in splitaudit/savepoint/FORMAT.md.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from splitaudit.errors import InputError, printable
from splitaudit.primitives.datainput import DataInput
from splitaudit.progress import Progress
from splitaudit.savepoint.changelog_handles import ChangelogStateBackendHandleImpl
from splitaudit.savepoint.coordinator import read_coordinator_state
from splitaudit.savepoint.fileio import DEFAULT_MAX_FILE_SIZE, SavepointFiles
from splitaudit.savepoint.handles import (
    ByteStreamStateHandle,
    EmptySegmentFileStateHandle,
    FileStateHandle,
    IncrementalRemoteKeyedStateHandle,
    KeyedStateHandle,
    KeyGroupsStateHandle,
    OperatorStateHandle,
    RelativeFileStateHandle,
    SegmentFileStateHandle,
    StreamStateHandle,
)
from splitaudit.savepoint.keyed import KeyedStateEntry, KeyGroupsReader, RunReaders
from splitaudit.savepoint.metadata import OperatorState, operator_id_from_uid, read_metadata
from splitaudit.savepoint.opstate import OperatorStateStream
from splitaudit.savepoint.streams import open_state_stream
from splitaudit.savepoint.typeserializers import BEAM_CODER_SNAPSHOT, Decoder, SerializerSnapshot
from splitaudit.splits import beam_coders, beam_sdf, registry
from splitaudit.splits.model import EnumeratorState, SplitState

if TYPE_CHECKING:
    from splitaudit.savepoint.changelog_backend import ChangelogBackendReader
    from splitaudit.savepoint.rocksdb.layout import NativeSnapshotReader


@dataclass(frozen=True)
class ReaderSplit:
    """One split held by one source subtask when the snapshot was taken.

    Attributes:
        subtask: The source subtask that held it.
        serializer_version: The version its split serializer wrote (`SourceReaderState`); None for Beam's
            `_default_` wrapper elements, which carry none.
        state: The split decoded by its family's decoder (`splits/registry.py`): `type` names the family,
            `partition_rows()` the topic partitions it covers with their next offsets, `to_json()` its `inspect`
            shape.
    """

    subtask: int
    serializer_version: int | None  # None for `_default_` elements, which carry no version
    state: SplitState

    def to_json(self) -> dict[str, Any]:
        return {
            "subtask": self.subtask,
            "serializer_version": self.serializer_version,
            "type": self.state.type,
            "split": self.state.to_json(),
        }


@dataclass(frozen=True)
class EnumeratorCheckpoint:
    """The source coordinator's enumerator checkpoint: what the split enumerator holds (pending splits, and for
    Flink's KafkaSource the partitions it has assigned), `state.enumerator_entries()` each with its status."""

    serde_version: int
    serializer_version: int
    state: EnumeratorState

    def to_json(self) -> dict[str, Any]:
        return {
            "serde_version": self.serde_version,
            "serializer_version": self.serializer_version,
            "type": self.state.type,
            "state": self.state.to_json(),
        }


@dataclass(frozen=True)
class SourceState:
    """A source operator's split state: every reader split its subtasks hold, and its enumerator checkpoint (None
    when the operator has no coordinator state, as Beam's legacy wrapper and the splittable-DoFn read)."""

    reader_splits: tuple[ReaderSplit, ...]
    enumerator: EnumeratorCheckpoint | None

    def to_json(self) -> dict[str, Any]:
        return {
            "reader_splits": [split.to_json() for split in self.reader_splits],
            "enumerator": None if self.enumerator is None else self.enumerator.to_json(),
        }


@dataclass(frozen=True)
class OperatorView:
    """One operator of the job graph, as `inspect` shows it.

    Attributes:
        operator_id: Its id, 32 hex digits (Flink's hash of the uid when the job set one).
        uid: Its uid: in the metadata from Flink 2.0, else the `uids` argument that hashes to its id, else None.
        name: Its name, in the metadata from Flink 2.0; else None.
        parallelism: Its parallelism in the snapshot.
        max_parallelism: Its maximum parallelism (its keyed state's number of key groups).
        source: Its split state when it is a source (reader splits, enumerator checkpoint); None otherwise.
        state_names: The names of its managed operator states (for `guard`; not in the JSON).
    """

    operator_id: str
    uid: str | None
    name: str | None
    parallelism: int
    max_parallelism: int
    source: SourceState | None
    state_names: tuple[str, ...] = ()  # its managed operator states' names, for the guard (not in the JSON)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.operator_id,
            "uid": self.uid,
            "name": self.name,
            "parallelism": self.parallelism,
            "max_parallelism": self.max_parallelism,
            "source": None if self.source is None else self.source.to_json(),
        }


@dataclass(frozen=True)
class SavepointView:
    """The result of `inspect`: one savepoint or checkpoint, operator by operator. `to_json()` is the
    `inspect --json` document.

    Attributes:
        path: The `_metadata` file read.
        format_version: The metadata format version: 2 (Flink 1.3-1.10), 3 (1.11-1.15), 4 (1.16-1.20), 5 (2.0),
            6 (2.1-2.3).
        checkpoint_id: The checkpoint id the snapshot was taken at.
        kind: `savepoint` or `checkpoint`: from the metadata's properties trailer, or for versions 2 and 3
            (which have none) from the folder name Flink gave (`savepoint-…`, `chk-N`); None for a renamed folder.
        savepoint_format: `CANONICAL` or `NATIVE` for a savepoint whose properties trailer says; None
            otherwise.
        operators: Every operator of the job graph (those named by `uids`, when given).
        keyed: With `keyed=True`: what each keyed state gave (`KeyedStateSummary`); None otherwise.
    """

    path: str
    format_version: int
    checkpoint_id: int
    kind: str | None  # V3 metadata has no properties trailer: then from the folder name, or None
    savepoint_format: str | None
    operators: tuple[OperatorView, ...]
    keyed: tuple[KeyedStateSummary, ...] | None = None  # `inspect --keyed`: what each keyed state gave

    def to_json(self) -> dict[str, Any]:
        document = {
            "path": self.path,
            "format_version": self.format_version,
            "checkpoint_id": self.checkpoint_id,
            "kind": self.kind,
            "savepoint_format": self.savepoint_format,
            "operators": [operator.to_json() for operator in self.operators],
        }
        if self.keyed is not None:
            document["keyed"] = [summary.to_json() for summary in self.keyed]
        return document


MAX_REASONS = 3  # distinct reasons kept per keyed state in a summary


@dataclass(frozen=True)
class KeyedStateSummary:
    """What one keyed state of one operator gave, over every subtask: its entries read whole, kept partly as
    bytes (`raw`), and the rows standing for entries that could not be read (`unread`), with the first distinct
    reasons. A subtask whose keyed state could not be read at all is a summary of state "" naming the error."""

    operator_id: str
    uid: str | None
    state: str
    read: int
    raw: int
    unread: int
    reasons: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "operator_id": self.operator_id,
            "uid": self.uid,
            "state": self.state,
            "read": self.read,
            "raw": self.raw,
            "unread": self.unread,
            "reasons": list(self.reasons),
        }


def inspect_savepoint(
    location: str,
    uids: Iterable[str] = (),
    allow_external_state: bool = False,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    keyed: bool = False,
    progress: Progress | None = None,
) -> SavepointView:
    """Read a savepoint/checkpoint directory (or its `_metadata`). `uids` name operators of 1.x files, which
    store only ids; when given, only the operators with those uids are shown. No file larger than
    `max_file_size` bytes is read. With `keyed`, every keyed state is read too and summarised
    (`keyed_summaries`), each operator's a `progress` step.

    `location` is a local path or a URI the savepoint file system reads (`file:`, `s3://`…). State files
    outside the savepoint directory are refused unless `allow_external_state`. Raises InputError (the CLI's
    exit 2) naming the file and byte offset of anything it cannot read."""
    files = SavepointFiles(location, allow_external_state, max_file_size)
    metadata = read_metadata(files.read_metadata(), files.metadata_path)
    wanted = {operator_id_from_uid(uid): uid for uid in uids}
    operators = []
    for operator in metadata.operators:
        if wanted and operator.operator_id not in wanted:
            continue
        uid = operator.uid or wanted.get(operator.operator_id)
        operators.append(
            OperatorView(
                operator.operator_id,
                uid,
                operator.name,
                operator.parallelism,
                operator.max_parallelism,
                _source_state(operator, files) or _sdf_source_state(operator, files),
                _operator_state_names(operator),
            )
        )
    properties = metadata.properties
    return SavepointView(
        path=files.metadata_path,
        format_version=metadata.version,
        checkpoint_id=metadata.checkpoint_id,
        kind=_kind_from_directory(files.directory) if properties is None else properties.kind,
        savepoint_format=None if properties is None else properties.savepoint_format,
        operators=tuple(operators),
        keyed=keyed_summaries(files, metadata.operators, wanted, progress) if keyed else None,
    )


def keyed_summaries(
    files: SavepointFiles,
    operators: Iterable[OperatorState],
    wanted: dict[str, str],
    progress: Progress | None = None,
) -> tuple[KeyedStateSummary, ...]:
    """Every keyed state of these operators (those in `wanted` when it names any) read to its end and counted
    per state: one subtask whose keyed state cannot be read is counted as such, and the others are still read.
    Each operator with keyed state is one `progress` step (the read takes about a minute per GiB)."""
    progress = progress or Progress()
    summaries: list[KeyedStateSummary] = []
    for operator in operators:
        if wanted and operator.operator_id not in wanted:
            continue
        uid = operator.uid or wanted.get(operator.operator_id)
        handles = sum(subtask.managed_keyed_state is not None for subtask in operator.subtask_states)
        if not handles:
            continue
        subtasks = f"{handles} subtask{'s' if handles > 1 else ''}"
        with progress.step(f"read the keyed state of {printable(uid or operator.operator_id)} ({subtasks})"):
            summaries += _keyed_summary(operator, uid, files)
    return tuple(summaries)


def _keyed_summary(operator: OperatorState, uid: str | None, files: SavepointFiles) -> list[KeyedStateSummary]:
    counts: dict[str, Counter[str]] = {}
    reasons: dict[str, list[str]] = {}
    for subtask in operator.subtask_states:
        handle = subtask.managed_keyed_state
        if handle is None:
            continue
        try:
            for entry in keyed_reader(handle, files, operator.max_parallelism).entries():
                status, _, reason = entry.status.partition(": ")
                _count(counts, reasons, entry.state, status, reason)
        except InputError as error:
            _count(counts, reasons, "", "unread", f"subtask {subtask.subtask}: {error}")
    return [
        KeyedStateSummary(operator.operator_id, uid, state, c["read"], c["raw"], c["unread"], tuple(reasons[state]))
        for state, c in sorted(counts.items())
    ]


def _count(
    counts: dict[str, Counter[str]], reasons: dict[str, list[str]], state: str, status: str, reason: str
) -> None:
    counts.setdefault(state, Counter())[status] += 1
    kept = reasons.setdefault(state, [])
    if reason and reason not in kept and len(kept) < MAX_REASONS:
        kept.append(reason)


def _operator_state_names(operator: OperatorState) -> tuple[str, ...]:
    """The names of the managed operator states any subtask of `operator` holds, sorted."""
    names = {
        state.name
        for subtask in operator.subtask_states
        if subtask.managed_operator_state is not None
        for state in subtask.managed_operator_state.states
    }
    return tuple(sorted(names))


def _kind_from_directory(directory: str) -> str | None:
    """V3 metadata (Flink <= 1.15) has no properties trailer; the folder name Flink gave is the only evidence:
    `savepoint-<job id prefix>-<random>` or `chk-<checkpoint id>`. A renamed folder gives None."""
    name = posixpath.basename(directory.rstrip("/"))
    if re.fullmatch(r"savepoint-[0-9a-f]{6}-[0-9a-f]{12}", name):
        return "savepoint"
    if re.fullmatch(r"chk-\d+", name):
        return "checkpoint"
    return None


def _source_state(operator: OperatorState, files: SavepointFiles) -> SourceState | None:
    splits: list[ReaderSplit] = []
    is_source = False
    for subtask in operator.subtask_states:
        handle = subtask.managed_operator_state
        if handle is None:
            continue
        names = {state.name for state in handle.states}
        if not names & {registry.SOURCE_READER_STATE, registry.UNBOUNDED_WRAPPER_STATE}:
            continue
        stream = _open_operator_stream(handle, files)
        if stream is None:
            continue
        for state in handle.states:
            if state.name == registry.SOURCE_READER_STATE:
                is_source = True
                for offset in state.offsets:
                    element = stream.byte_array_element(offset)
                    version = element.read_int("split serializer version")
                    payload = element.sub(element.read_length("split length"), "split")
                    element.expect_end("the SourceReaderState element")
                    splits.append(ReaderSplit(subtask.subtask, version, registry.decode_reader_split(version, payload)))
            elif state.name == registry.UNBOUNDED_WRAPPER_STATE and _beam_wrapper_evidence(stream, state.name):
                is_source = True
                for offset in state.offsets:
                    decoded = registry.decode_unbounded_wrapper_element(stream.element_region(offset))
                    splits.append(ReaderSplit(subtask.subtask, None, decoded))
    enumerator = None
    if operator.coordinator_state is not None:
        is_source = True
        coordinator = read_coordinator_state(operator.coordinator_state, files.metadata_path)
        payload = DataInput(coordinator.payload, files.metadata_path, coordinator.payload_offset)
        reader_types = {split.state.type for split in splits}
        enumerator = EnumeratorCheckpoint(
            coordinator.serde_version,
            coordinator.serializer_version,
            registry.decode_enumerator(coordinator.serializer_version, payload, reader_types),
        )
    return SourceState(tuple(splits), enumerator) if is_source else None


def _sdf_source_state(operator: OperatorState, files: SavepointFiles) -> SourceState | None:
    """KafkaIO's splittable-DoFn read, when the operator's keyed state holds Beam's `sdf_checkpoint` residuals:
    one reader split per Kafka partition (splitaudit/splits/beam_sdf.py), from key-group handles and RocksDB
    native snapshots alike; the changelog backend's handles are not looked into here."""
    checkpoints: list[beam_sdf.SdfCheckpoint] = []
    timers: dict[tuple[str, int], set[str]] = {}
    for subtask in operator.subtask_states:
        handle = subtask.managed_keyed_state
        if not isinstance(handle, KeyGroupsStateHandle | IncrementalRemoteKeyedStateHandle):
            continue
        reader = keyed_reader(handle, files, operator.max_parallelism)
        if not any(beam_sdf.is_sdf_checkpoint_state(state.name) for state in reader.header.states):
            continue
        for entry in reader.entries():
            if beam_sdf.is_sdf_checkpoint_state(entry.state):
                checkpoints.append(
                    beam_sdf.read_sdf_checkpoint(entry.state, subtask.subtask, entry.key_group, entry.value)
                )
            elif (timer := beam_sdf.residual_timer(entry.key, entry.namespace)) is not None:
                partition, timer_id = timer
                timers.setdefault(partition, set()).add(timer_id)
    if not checkpoints:
        return None
    residuals = beam_sdf.kafka_sdf_residuals(checkpoints, timers)
    splits = tuple(
        ReaderSplit(residual.resumed.subtask if residual.resumed else residual.superseded[0].subtask, None, residual)
        for residual in residuals
    )
    return SourceState(splits, None)


def _beam_wrapper_evidence(stream: OperatorStateStream, name: str) -> bool:
    """`_default_` is Flink's name for any unnamed list state; Beam's wrapper is told apart by its
    serializer (`org.apache.beam…CoderTypeSerializer`) when the meta-info names it."""
    for state in stream.header.states:
        if state.name == name:
            return any("org.apache.beam." in s.snapshot_class for s in state.serializers)
    return not stream.header.meta_complete


def _open_operator_stream(handle: OperatorStateHandle, files: SavepointFiles) -> OperatorStateStream | None:
    """The bytes behind a tag-4/17 handle's delegate, as a stream whose offsets are the handle's offsets."""
    delegate = handle.delegate
    at = handle.delegate_offset
    offsets = tuple(offset for state in handle.states for offset in state.offsets)
    if delegate is None or isinstance(delegate, EmptySegmentFileStateHandle) or handle.is_empty:
        if offsets:
            raise InputError(files.metadata_path, at, "operator state has element offsets but no data")
        return None
    state = open_state_stream(delegate, files, at, "operator state")
    stream = state.read(0, state.size, "operator state")
    return OperatorStateStream(stream, offsets)


@dataclass(frozen=True)
class KeyedStateRow:
    """One keyed-state entry of one operator subtask, as `inspect` summarises and the `keyed` table serves it."""

    operator_id: str
    uid: str | None
    subtask: int
    entry: KeyedStateEntry


def read_keyed_state(
    location: str,
    uids: Iterable[str] = (),
    allow_external_state: bool = False,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
) -> Iterator[KeyedStateRow]:
    """Every keyed-state entry of a savepoint/checkpoint, operator by operator, streamed as decoded (memory does not
    grow with the state: `KeyGroupsReader.entries`).

    Key-group handles (canonical savepoints, heap checkpoints) and RocksDB native snapshots (incremental
    checkpoints, full RocksDB checkpoints of Flink 1.16+, NATIVE savepoints: savepoint/rocksdb/) are read, and the
    changelog backend's: its materialized handles with its log applied (savepoint/changelog_backend.py; its log
    files lie outside the checkpoint: `allow_external_state`). The same rows, in the
    same order, as reading every part of `plan_keyed_state` in turn with `read_keyed_part`.

    `location`, `uids`, `allow_external_state` and `max_file_size` as for `inspect_savepoint`. Raises
    InputError naming the file and byte offset of anything it cannot read, when it reaches it: the rows
    before it have been yielded."""
    files = SavepointFiles(location, allow_external_state, max_file_size)
    for part in plan_keyed_state(files, uids):
        yield from read_keyed_part(files, part)


@dataclass(frozen=True)
class KeyedStatePart:
    """A piece of a savepoint's keyed state that one reader (a Spark task) reads alone: one subtask's keyed state
    handle, or the key groups [first, end) of a key-group handle (`key_groups`, None for the whole handle). Made
    from `_metadata` alone (`plan_keyed_state`), so it carries the handle it reads."""

    operator_id: str
    uid: str | None
    subtask: int
    max_parallelism: int
    handle: KeyedStateHandle
    key_groups: tuple[int, int] | None = None


def plan_keyed_state(
    files: SavepointFiles, uids: Iterable[str] = (), part_bytes: int | None = None
) -> list[KeyedStatePart]:
    """The keyed state of the savepoint in parts, in the order `read_keyed_state` reads it, from `_metadata` alone:
    one part per subtask's keyed state handle; with `part_bytes`, a key-group handle whose stream is larger is cut
    into runs of whole key groups of about that many bytes each (by its key-group offsets and its stream's size as
    `_metadata` records them: no state file is opened). RocksDB native snapshots and the changelog backend's
    handles stay one part each."""
    metadata = read_metadata(files.read_metadata(), files.metadata_path)
    wanted = {operator_id_from_uid(uid): uid for uid in uids}
    parts: list[KeyedStatePart] = []
    for operator in metadata.operators:
        if wanted and operator.operator_id not in wanted:
            continue
        uid = operator.uid or wanted.get(operator.operator_id)
        for subtask in operator.subtask_states:
            handle = subtask.managed_keyed_state
            if handle is None:
                continue
            ranges = key_group_runs(handle, part_bytes) if isinstance(handle, KeyGroupsStateHandle) else [None]
            parts += (
                KeyedStatePart(operator.operator_id, uid, subtask.subtask, operator.max_parallelism, handle, run)
                for run in ranges
            )
    return parts


def key_group_runs(handle: KeyGroupsStateHandle, part_bytes: int | None) -> list[tuple[int, int] | None]:
    """The handle's key groups cut into runs [first, end) of at least `part_bytes` bytes of its stream each (the
    last one may be smaller; a key group is never cut; empty key groups join the run after them, or the last),
    in key-group order; [None] (the whole handle) when the
    stream is no larger, or its size is not recorded. A key group's bytes run from its offset to the next larger
    one (or the stream's end), as `KeyGroupsReader` reads them."""
    size = _recorded_size(handle.delegate)
    if part_bytes is None or size is None or size <= part_bytes:
        return [None]
    ends = sorted({offset for offset in handle.offsets if offset} | {size})
    runs: list[tuple[int, int]] = []
    first = handle.start_key_group
    gathered = 0
    for index, offset in enumerate(handle.offsets):
        if offset:
            following = bisect.bisect_right(ends, offset)
            gathered += ends[following] - offset if following < len(ends) else 0
        if gathered >= part_bytes:
            end = handle.start_key_group + index + 1
            runs.append((first, end))
            first, gathered = end, 0
    last = handle.start_key_group + len(handle.offsets)
    if first < last and (gathered or not runs):
        runs.append((first, last))
    elif first < last:  # only empty key groups after the last cut: they join it
        runs[-1] = (runs[-1][0], last)
    return list(runs)


def _recorded_size(delegate: StreamStateHandle) -> int | None:
    """A stream's size as `_metadata` records it, or None."""
    if isinstance(delegate, ByteStreamStateHandle):
        return len(delegate.data)
    if isinstance(delegate, FileStateHandle | RelativeFileStateHandle | SegmentFileStateHandle):
        return delegate.state_size
    return None


def read_keyed_part(files: SavepointFiles, part: KeyedStatePart) -> Iterator[KeyedStateRow]:
    """The entries of one part of `plan_keyed_state`, streamed as decoded, as `read_keyed_state` reads them."""
    for row in read_keyed_part_rows(files, part):
        yield KeyedStateRow(part.operator_id, part.uid, part.subtask, KeyedStateEntry(*row))


def read_keyed_part_rows(files: SavepointFiles, part: KeyedStatePart, runs: RunReaders | None = None) -> Iterator[Any]:
    """`read_keyed_part`'s entries as tuples of their fields (`EntryRow`; the part names the operator and subtask),
    without an object per entry. With `runs` (the data source's `keyed` table: `audit/checks/keyed_columns.py`),
    runs of a canonical state's entries come as its run reader makes them (`KeyGroupsReader.row_runs`)."""
    reader = keyed_reader(part.handle, files, part.max_parallelism)
    if isinstance(reader, KeyGroupsReader):
        return reader.row_runs(None if part.key_groups is None else range(*part.key_groups), runs)
    assert part.key_groups is None  # key-group runs are planned for key-group handles only
    return (entry.row() for entry in reader.entries())


def keyed_reader(
    handle: KeyedStateHandle, files: SavepointFiles, max_parallelism: int
) -> KeyGroupsReader | NativeSnapshotReader | ChangelogBackendReader:
    """The reader of one subtask's managed keyed state, or an InputError saying why it cannot be read."""
    if isinstance(handle, IncrementalRemoteKeyedStateHandle):  # RocksDB's own files (savepoint/rocksdb/)
        from splitaudit.savepoint.rocksdb.layout import NativeSnapshotReader  # loaded only for a native snapshot

        return NativeSnapshotReader(handle, files, max_parallelism, beam_coder_decoder)
    if isinstance(handle, ChangelogStateBackendHandleImpl):  # the changelog backend (savepoint/changelog_backend.py)
        from splitaudit.savepoint.changelog_backend import ChangelogBackendReader  # loaded only for its snapshots

        return ChangelogBackendReader(
            handle, files, beam_coder_decoder, lambda materialized: keyed_reader(materialized, files, max_parallelism)
        )
    if not isinstance(handle, KeyGroupsStateHandle):
        raise InputError(
            files.metadata_path, None, f"a {type(handle).__name__} is not a subtask's keyed state on its own"
        )
    stream = open_state_stream(handle.delegate, files, handle.delegate_offset, "keyed state")
    return KeyGroupsReader(handle, stream, max_parallelism, beam_coder_decoder)


def beam_coder_decoder(snapshot: SerializerSnapshot) -> Decoder | None:
    """The values of a Beam `CoderTypeSerializer` (its coder read from the snapshot as data), for the keyed
    reader; None for any other serializer Flink does not define."""
    if snapshot.snapshot_class != BEAM_CODER_SNAPSHOT:
        return None
    coder = beam_coders.read_coder_type_serializer(snapshot.payload, snapshot.payload_path, snapshot.payload_offset)
    return beam_coders.coder_decoder(coder)
