"""A partition whose log now ends below the offset a restore resumed it from: the topic was deleted and re-created
(or truncated) behind the savepoint, so the restored reader's offset was out of range and the consumer's
`auto.offset.reset` placed it (flink-connector-kafka 3.3.0: KafkaSourceBuilder sets it from the job's
`setStartingOffsets`). Pure: the savepoints' resume offsets and the topic's offsets now, no Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from splitaudit.audit.findings import WARNING, Finding

if TYPE_CHECKING:
    from splitaudit.clients.kafka import PartitionOffsets

OFFSET_PAST_LOG_END = "offset_past_log_end"  # a restored offset past the partition's log end: another log

Key = tuple[str, int]  # (topic, partition)


def check_recreated(
    kafka: Mapping[Key, PartitionOffsets], restored_from: Mapping[Key, int], now: Mapping[Key, int]
) -> list[Finding]:
    """Per partition whose end offset in `kafka` is below its offset in `restored_from` (the resume offsets of the
    savepoint the job restored from): the offsets the restored job read of the new log, from its log start to its
    next offset in `now` (the later savepoint's resume offsets; without one, the whole log now)."""
    findings = []
    for key, offsets in sorted(kafka.items()):
        resume = restored_from.get(key)
        if resume is None or resume <= offsets.end:
            continue
        last = now.get(key, offsets.end)
        count = max(0, last - offsets.log_start)
        ranges = ((offsets.log_start, last - 1),) if count else ()
        read = (
            f"the restored job's next offset is {last}: it read offsets {offsets.log_start}..{last - 1} of the new "
            "log (other records than the same offsets before the restore: this partition's rewind, replay and "
            "past-savepoint findings are those)"
            if count
            else "the restored job read none of the new log (auto.offset.reset latest, or nothing there yet)"
        )
        detail = (
            f"the restore resumed at next offset {resume}, but the log now holds offsets {offsets.log_start}.."
            f"{offsets.end - 1}: the topic was deleted and re-created (or truncated) behind the savepoint, and "
            f"auto.offset.reset placed the reader; {read}"
        )
        findings.append(Finding(OFFSET_PAST_LOG_END, WARNING, *key, count, ranges, detail=detail))
    return findings
