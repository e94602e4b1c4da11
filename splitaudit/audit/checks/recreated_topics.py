"""A partition whose log now ends below the offset a restore resumed it from: the topic was deleted and re-created
(or truncated) behind the savepoint, so the restored reader's offset was out of range and the consumer's
`auto.offset.reset` placed it (flink-connector-kafka 3.3.0: KafkaSourceBuilder sets it from the job's
`setStartingOffsets`). Pure: the savepoints' resume offsets and the topic's offsets now, no Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from splitaudit.audit.checks.findings import ERROR, WARNING, Finding

if TYPE_CHECKING:
    from splitaudit.clients.kafka import PartitionOffsets

OFFSET_PAST_LOG_END = "offset_past_log_end"  # a restored offset past the partition's log end: another log

Key = tuple[str, int]  # (topic, partition)


def check_recreated(
    kafka: Mapping[Key, PartitionOffsets], restored_from: Mapping[Key, int], now: Mapping[Key, int]
) -> list[Finding]:
    """Per partition whose end offset in `kafka` is below its offset in `restored_from` (the resume offsets of the
    savepoint the job restored from), judged by its next offset in `now` (the later savepoint's resume offsets):

    - within the new log (or absent from `now`): the restored job read the new log from its start up to there
      (warning; count and range those offsets: other records than the same offsets before the restore);
    - still past the new log's end: its reader emitted no record of the new log (a KafkaSource split keeps its
      offset until a record moves it), so the new log's records, log start to end, were not read (error: lost
      when auto.offset.reset was latest, which skips them)."""
    findings = []
    for key, offsets in sorted(kafka.items()):
        resume = restored_from.get(key)
        if resume is None or resume <= offsets.end:
            continue
        seen = (
            f"the restore resumed at next offset {resume}, but the log now holds offsets {offsets.log_start}.."
            f"{offsets.end - 1}: the topic was deleted and re-created (or truncated) behind the savepoint, and "
            "auto.offset.reset placed the reader"
        )
        last = now.get(key, offsets.end)
        if last > offsets.end:
            unread = offsets.end - offsets.log_start
            ranges = ((offsets.log_start, offsets.end - 1),) if unread else ()
            detail = (
                f"{seen}; the later savepoint still holds it at {last}, past the new log: none of the new log's "
                f"{unread} records was read (auto.offset.reset latest skips them: lost)"
            )
            findings.append(Finding(OFFSET_PAST_LOG_END, ERROR, *key, unread, ranges, detail=detail))
            continue
        count = max(0, last - offsets.log_start)
        ranges = ((offsets.log_start, last - 1),) if count else ()
        read = (
            f"it read offsets {offsets.log_start}..{last - 1} of the new log (other records than the same offsets "
            "before the restore: this partition's rewind, replay and past-savepoint findings are those)"
            if count
            else "it has read none of the new log yet"
        )
        findings.append(Finding(OFFSET_PAST_LOG_END, WARNING, *key, count, ranges, detail=f"{seen}; {read}"))
    return findings
