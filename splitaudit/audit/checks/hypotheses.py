"""Where the second reader of a restored partition started, inferred from an aggregate's per-key excess.

An unfixed FlinkSource restores each split and also starts a twin reader of it (`splitaudit.guard.twin`): the
twin starts at the group's committed offset, the log start, the log end at the restore, or (a restored split
read twice from where it was) the savepoint's own offset, and reads on to the end of the span. Each hypothesis
is one of those starts applied to every partition the span covers (the log end at the restore is known to the audit
only from evidence after it: `aggregate_sink` gives the log end when the restored job first wrote to the sink,
which is the log end at the restore when nothing was appended in between); it predicts, for every key, the aggregate of
the records from its start to the span's end. The reconciliation (`audit.aggregate`) counts, per hypothesis,
the keys whose observed excess differs from the prediction; `choose` keeps the one hypothesis that explains
every key exactly, and names the others with how many keys each got wrong. The start kinds are held here and
used by the guard (`guard.twin`), so an audit and a guard speak of the same starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

Partition = tuple[str, int]  # topic, partition
# Where a twin reader starts (the guard's `TwinStart.start_is`, `guard.twin`, and the audit's hypotheses).
COMMITTED = "committed_offset"
LOG_START = "log_start"
LOG_END_AT_RESTORE = "log_end_at_restore"  # never known before the restore: the end when the twin starts
SAVEPOINT_OFFSET = "savepoint_offset"  # the twin re-reads the restored split from the savepoint's own offset


@dataclass(frozen=True)
class Hypothesis:
    """One twin start per partition: its kind (a `guard.twin` start, or SAVEPOINT_OFFSET) and the offsets."""

    start_is: str
    starts: tuple[tuple[Partition, int], ...]  # sorted by partition

    def ranges(self, span_end: Mapping[Partition, int]) -> dict[Partition, tuple[int, int]]:
        """Per partition, the offsets this hypothesis says were read twice: its start to the span's last offset
        (none where the start is at or past the span's end)."""
        return {tp: (start, span_end[tp] - 1) for tp, start in self.starts if start < span_end.get(tp, start)}

    def to_json(self) -> dict[str, object]:
        return {"start_is": self.start_is, "starts": [[t, p, o] for (t, p), o in self.starts]}


@dataclass(frozen=True)
class Choice:
    """The hypothesis that explains every key's excess (None: none does), and the others with the number of
    keys each got wrong."""

    chosen: Hypothesis | None
    rejected: tuple[tuple[Hypothesis, int], ...]

    @property
    def rejected_text(self) -> str:
        return "; ".join(f"{h.start_is}: {wrong} keys wrong" for h, wrong in self.rejected) or "none"


def hypotheses_of(
    span_start: Mapping[Partition, int],
    log_start: Mapping[Partition, int],
    committed: Mapping[Partition, int | None],
    log_end_at_restore: Mapping[Partition, int | None] | None = None,
) -> tuple[Hypothesis, ...]:
    """The twin starts that can be tested for the span's partitions: the savepoint's offset always; the log start,
    the group's committed offset and the log end at the restore (the guard's LOG_END_AT_RESTORE, as the caller
    found it after the restore) where they are known for every partition."""
    parts = sorted(span_start)
    found = [Hypothesis(SAVEPOINT_OFFSET, tuple((tp, span_start[tp]) for tp in parts))]
    for kind, offsets in (
        (LOG_START, log_start),
        (COMMITTED, committed),
        (LOG_END_AT_RESTORE, log_end_at_restore or {}),
    ):
        known = {tp: offsets.get(tp) for tp in parts}
        if parts and all(o is not None for o in known.values()):
            starts = tuple((tp, o) for tp, o in known.items() if o is not None)
            if all(h.starts != starts for h in found):  # one start set tested once, under its first name
                found.append(Hypothesis(kind, starts))
    return tuple(found)


def choose(hypotheses: tuple[Hypothesis, ...], wrong_keys: tuple[int, ...], excess_keys: int) -> Choice:
    """The one hypothesis whose prediction matched every key (wrong_keys[i]: keys hypothesis i got wrong), given
    that `excess_keys` keys showed an excess; none when there is no excess to explain or when no hypothesis, or
    more than one with different starts, matches (an ambiguity is not an inference)."""
    pairs = tuple(zip(hypotheses, wrong_keys, strict=True))
    exact = [h for h, wrong in pairs if wrong == 0]
    if excess_keys == 0 or len(exact) != 1:
        return Choice(None, pairs)
    return Choice(exact[0], tuple((h, w) for h, w in pairs if h is not exact[0]))
