"""Which windows were still open at a savepoint, from the savepoint itself: the evidence the file ledger judges
rewritten windows by (`ledger.find_rewrites`).

A window a restored job wrote a file for after the savepoint was fired *again* when it was not open at the
savepoint (it had fired before it) and holds records read before it. What was open is told, in this order, by:

1. **state**: the savepoint's keyed state. Beam's window operators (Beam 2.62.0 `WindowDoFnOperator` on Flink)
   keep each open window's buffered elements and watermark hold under the window's state namespace
   (`StateNamespaces.WindowNamespace.stringKey()`, `StringSerializer`: `buf`, `watermark-holds`, ...) and its
   end-of-window timer in Flink's timer state `_timer_state/event_beam-timer`, whose namespace is Beam's
   `TimerData` (`TimerDataCoderV2`) naming the window, and in the runner's own `pending-timers` map (the same
   `TimerData` as value). A window found there was open; one not found, in a savepoint whose window operators'
   state was read whole, was not (it had fired, or had no element yet). Decoded with `beam_coders.window_of_namespace`.
2. **timestamp policy**: where the state cannot say (not read, refused, or no Beam window operator in it), the
   watermark the job's KafkaIO timestamp policy gave at the savepoint, as KafkaIO's checkpoint marks recorded it
   per partition (`KafkaCheckpointMark.PartitionMark.watermarkMillis`: `lastWatermark`, whatever the policy,
   processing time, LogAppendTime, CreateTime with its max delay or a custom one). A window operator's watermark
   is the lowest of its inputs', so it is at most the lowest partition's: a window whose last instant (`end - 1`)
   is past that had not fired. One at or before it had, unless the runner had not yet passed that watermark on.
3. **--watermark-delay override**: given explicitly, the old rule decides every window (`ledger.closure`).

Where none decides, the window is undecided, and the audit names its files (an info finding) rather than calling
them not rewritten.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from splitaudit.audit.checks.beam_names import instant_text
from splitaudit.errors import InputError
from splitaudit.savepoint.fileio import SavepointFiles, SavepointOptions
from splitaudit.savepoint.keyed import UNREAD, Undecoded
from splitaudit.savepoint.metadata import operator_id_from_uid, read_metadata
from splitaudit.savepoint_view import inspect_savepoint, keyed_reader
from splitaudit.splits.beam import kafka_checkpoint_marks
from splitaudit.splits.beam_coders import GLOBAL_NAMESPACE, event_timer_namespace, timer_namespace, window_of_namespace

if TYPE_CHECKING:
    pass

Window = tuple[int, int]  # [start, end) in epoch ms

STATE = "state"
TIMESTAMP_POLICY = "timestamp policy"
OVERRIDE = "--watermark-delay override"
UNDECIDED = "undecided"

TIMESTAMP_MIN_MILLIS = -9223372036854775  # BoundedWindow.TIMESTAMP_MIN_VALUE (Beam 2.62.0), in ms
BEAM_EVENT_TIMERS = "_timer_state/event_beam-timer"  # Beam's Flink operators' event-time timers (Flink 1.19)
BUFFER = "buf"  # SystemReduceFn.BUFFER_NAME: a GroupByKey's buffered elements (or accumulator) per window
WINDOW_OPERATOR_STATES = frozenset({BEAM_EVENT_TIMERS, BUFFER})  # what a Beam GroupByKey's keyed state registers
PENDING_TIMERS = "pending-timers"  # Beam's map of the operator's pending timers by id (DoFnOperator, 2.62.0)


@dataclass(frozen=True)
class StateWindows:
    """The windows a savepoint's keyed state shows open, or why the state cannot say (`refused`)."""

    open: frozenset[Window]
    operators: tuple[str, ...]  # the window operators read (ids)
    timers: int  # pending end-of-window timers among them
    refused: str | None = None

    @property
    def decides(self) -> bool:
        return self.refused is None


def state_windows(location: str, options: SavepointOptions) -> StateWindows:
    """The open windows of every Beam window operator of the savepoint at `location` (an operator is one when its
    keyed state registers Beam's event-time timers and a GroupByKey's buffer, `WINDOW_OPERATOR_STATES`): windows
    named by a state namespace or by a pending event-time timer. Refused (the state cannot say) when a keyed state
    cannot be read, an entry is left unread or a namespace is a window this reader does not decode, or no operator
    is a Beam window operator."""
    try:
        return _read_state_windows(location, options)
    except InputError as ex:
        return StateWindows(frozenset(), (), 0, f"its keyed state could not be read ({ex})")


def _read_state_windows(location: str, options: SavepointOptions) -> StateWindows:
    files = SavepointFiles(location, options.allow_external_state, options.max_file_size)
    metadata = read_metadata(files.read_metadata(), files.metadata_path)
    wanted = {operator_id_from_uid(uid) for uid in options.uids}
    opened: set[Window] = set()
    operators: list[str] = []
    timers = 0
    for operator in metadata.operators:
        if wanted and operator.operator_id not in wanted:
            continue
        for subtask in operator.subtask_states:
            if subtask.managed_keyed_state is None:
                continue
            reader = keyed_reader(subtask.managed_keyed_state, files, operator.max_parallelism)
            if not reader.header.meta_complete:
                return _refused(f"operator {operator.operator_id}'s keyed state names not every state")
            if not {state.name for state in reader.header.states} >= WINDOW_OPERATOR_STATES:
                continue
            if operator.operator_id not in operators:
                operators.append(operator.operator_id)
            for entry in reader.entries():
                if (
                    entry.status.startswith(UNREAD)
                    or isinstance(entry.key, Undecoded)
                    or isinstance(entry.namespace, Undecoded)
                ):  # a value kept as bytes (a user's coder) is no matter: only the namespace is read
                    return _refused(f"{entry.state} of operator {operator.operator_id}: {entry.status}")
                for key, timer in (timer_namespace(entry.namespace), _pending_timer_key(entry.state, entry.value)):
                    window = None if key is None else window_of_namespace(key)
                    if window is None and key not in (None, GLOBAL_NAMESPACE):
                        return _refused(f"{entry.state} of operator {operator.operator_id} has a namespace that is "
                                        f"no interval window: {key[:80]!r}")  # fmt: skip
                    if window is not None:
                        opened.add(window)
                        timers += 1 if timer and entry.state == BEAM_EVENT_TIMERS else 0
    if not operators:
        return _refused(
            f"no operator of it is a Beam window operator (keyed state {BUFFER!r} and {BEAM_EVENT_TIMERS!r})"
        )
    return StateWindows(frozenset(opened), tuple(operators), timers)


def _pending_timer_key(state: str, value: Any) -> tuple[str | None, bool]:
    """The namespace key of a timer Beam's `FlinkTimerInternals` lists in its `pending-timers` map (the value is the
    `TimerData`), for an event-time one; None for any other entry."""
    return (event_timer_namespace(value) if state == PENDING_TIMERS else None), False


def _refused(why: str) -> StateWindows:
    return StateWindows(frozenset(), (), 0, why)


NOT_READ = _refused("not read: --watermark-delay overrides it")


@dataclass(frozen=True)
class PolicyWatermark:
    """The lowest watermark the job's KafkaIO timestamp policy had given any partition at the savepoint (ms), from
    its checkpoint marks, or why there is none (`refused`)."""

    watermark: int | None
    partitions: int  # the checkpoint marks it is the lowest of
    refused: str | None = None


NO_POLICY = PolicyWatermark(None, 0, "not read: --watermark-delay overrides it")


def policy_watermark(location: str, options: SavepointOptions) -> PolicyWatermark:
    """The lowest `watermarkMillis` of the KafkaIO checkpoint marks of every reader split of the savepoint at
    `location` (`BoundedWindow.TIMESTAMP_MIN_VALUE` where a partition's policy had given none: nothing fired)."""
    try:
        view = inspect_savepoint(location, options.uids, options.allow_external_state, options.max_file_size)
    except InputError as ex:
        return PolicyWatermark(None, 0, f"its source state could not be read ({ex})")
    marks = [
        mark
        for operator in view.operators
        if operator.source is not None
        for split in operator.source.reader_splits
        for mark in kafka_checkpoint_marks(split.state)
    ]
    if not marks:
        return PolicyWatermark(None, 0, "it holds no KafkaIO checkpoint mark (a KafkaIO read's watermark)")
    return PolicyWatermark(min(mark.watermark_millis for mark in marks), len(marks))


@dataclass(frozen=True)
class WindowVerdict:
    """Whether a window had fired (closed) at the savepoint, the rule that decided it, and why."""

    window: Window
    closed: bool | None  # None: undecided
    rule: str


def judge_windows(
    windows: Iterable[Window],
    state: StateWindows,
    policy: PolicyWatermark,
    override_closed_by: float | None,
) -> tuple[WindowVerdict, ...]:
    """Each window's verdict: by the `--watermark-delay` override when given (closed when it ended by
    `override_closed_by`, seconds), else by the state, else by the policy's watermark, else undecided."""
    verdicts = []
    for window in sorted(set(windows)):
        if override_closed_by is not None:
            verdicts.append(WindowVerdict(window, window[1] / 1000 <= override_closed_by, OVERRIDE))
        elif state.decides:
            verdicts.append(WindowVerdict(window, window not in state.open, STATE))
        elif policy.watermark is not None:
            verdicts.append(WindowVerdict(window, window[1] - 1 <= policy.watermark, TIMESTAMP_POLICY))
        else:
            verdicts.append(WindowVerdict(window, None, UNDECIDED))
    return tuple(verdicts)


def describe_evidence(savepoint: str, state: StateWindows, policy: PolicyWatermark) -> str:
    """What the state and policy rules had to go on at the savepoint, for the notes and the findings' evidence."""
    if state.decides:
        return (
            f"the savepoint {savepoint} holds {len(state.open)} open windows in the keyed state of its "
            f"{len(state.operators)} Beam window operators ({state.timers} pending end-of-window timers); a window "
            "not among them had fired"
        )
    said = f"the savepoint's window state cannot say ({state.refused})"
    if policy.watermark is None:
        return f"{said}; nor its timestamp policy ({policy.refused})"
    return (
        f"{said}; the lowest watermark the job's KafkaIO timestamp policy had given at the savepoint {savepoint} is "
        f"{_millis_text(policy.watermark)} (the lowest of {policy.partitions} checkpoint marks): windows whose last "
        "instant is past it had not fired"
    )


def _millis_text(millis: int) -> str:
    """A watermark for people; Beam's lowest (`BoundedWindow.TIMESTAMP_MIN_VALUE`, no record read yet) by name."""
    return "its minimum (no record read yet)" if millis <= TIMESTAMP_MIN_MILLIS else instant_text(millis)
