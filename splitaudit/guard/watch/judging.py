"""The pure part of `splitaudit watch`: what one poll's source metrics say (`subtask_sample`, `fresh_sample`) and
the findings they and a checkpoint taken after them prove (`judge_sample`, `judge_checkpoint`). No REST call, no
clock: `loop.py` feeds them what it polls."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from splitaudit.audit.checks.findings import ERROR, Finding
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.guard.tally import Key

PARTITION_READ_TWICE = "partition_read_twice"
READ_MORE_THAN_AVAILABLE = "read_more_than_available"
READ_MORE_THAN_ADVANCED = "read_more_than_advanced"
READ_TWICE = "read_twice"  # the final tally of a partition: its records read twice since the restore

SOURCE_METRICS = "Source__"  # Flink's prefix of a chained source operator's metrics
PARTITION_METRIC = ".KafkaIOReader_rawSize/"  # Beam KafkaIO's per-partition reader metric: <topic>-<partition>
RECORDS_OUT = ".numRecordsOut"  # Flink's count of the records an operator emitted, per attempt
DISTRIBUTION_COUNT = re.compile(r"\bcount=(\d+)")  # Flink shows a Beam distribution as DistributionResult{…}


@dataclass(frozen=True)
class SubtaskSample:
    """What one source subtask's metrics say at one poll: per topic partition, the records its Kafka readers
    read (Beam's per-partition distribution counts one per record), and the records the source emitted."""

    subtask: int
    partitions: Mapping[Key, int]
    records_out: int | None = None  # the source operator's numRecordsOut (None: not reported)


def subtask_sample(subtask: int, metrics: Mapping[str, str], topics: frozenset[str]) -> SubtaskSample:
    """Read a source subtask's metrics (`FlinkRestClient.subtask_metrics` with the source prefix). Only
    partitions of `topics` (all when empty) count, since a topic name may itself end in `-<digits>`."""
    partitions: dict[Key, int] = {}
    records_out = None
    for name, value in metrics.items():
        _, marker, suffix = name.partition(PARTITION_METRIC)
        topic, dash, number = suffix.rpartition("-")
        count = DISTRIBUTION_COUNT.search(value)
        if marker and dash and number.isdigit() and count and (topic in topics or not topics):
            partitions[(topic, int(number))] = int(count.group(1))
        elif name.endswith(RECORDS_OUT) and value.isdigit():
            records_out = int(value)
    return SubtaskSample(subtask, partitions, records_out)


def fresh_sample(sample: SubtaskSample, closed: SubtaskSample | None) -> SubtaskSample:
    """A restarted subtask's sample without the counts its new attempt has not reported yet (`closed`: the
    subtask's last sample of the attempt before). Flink's REST metric store keeps serving a metric's last value
    of the dead attempt until the new one reports that metric, and Beam registers a partition's metric only at
    the partition's first record: a new attempt with nothing to read shows the old counts forever. A count is
    the old attempt's when the whole sample is the closed one, or when it equals the closed count and is part of
    what the subtask's counts add up to beyond what its source emitted in this attempt (numRecordsOut,
    registered at the attempt's start). Only that excess can be old counts: the new attempt may read a
    partition exactly as often as the old one did (its whole backlog), and numRecordsOut, read in the same
    poll, may lag the per-partition counts by a record or so."""
    if closed is None:
        return sample
    if sample == replace(closed, subtask=sample.subtask):
        return SubtaskSample(sample.subtask, {}, sample.records_out)
    if sample.records_out is None or sum(sample.partitions.values()) <= sample.records_out:
        return sample
    excess = sum(sample.partitions.values()) - sample.records_out
    kept: dict[Key, int] = {}
    for key, count in sample.partitions.items():
        if closed.partitions.get(key) == count and count <= excess:
            excess -= count
        else:
            kept[key] = count
    return SubtaskSample(sample.subtask, kept, sample.records_out)


def judge_sample(
    samples: tuple[SubtaskSample, ...], resume: Mapping[Key, int], kafka: Mapping[Key, PartitionOffsets]
) -> list[Finding]:
    """The double-read findings of one poll: partitions two subtasks read and (with `kafka`) partitions whose
    readers read more records than the partition holds past its restored offset (from its log start when the
    savepoint lacks it): two readers of one split index on one subtask show only that way."""
    findings: list[Finding] = []
    readers: dict[Key, dict[int, int]] = {}
    for sample in samples:
        for key, count in sample.partitions.items():
            readers.setdefault(key, {})[sample.subtask] = count
    for (topic, partition), counts in sorted(readers.items()):
        if len(counts) > 1:
            detail = (
                f"subtasks {' and '.join(map(str, sorted(counts)))} both run a Kafka reader of this partition "
                "(Beam's KafkaIOReader metric of it on each)"
            )
            findings.append(Finding(PARTITION_READ_TWICE, ERROR, topic, partition, len(counts), detail=detail))
        offsets = kafka.get((topic, partition))
        if offsets is None:
            continue
        start = resume.get((topic, partition), offsets.log_start)
        available, read = max(0, offsets.end - start), sum(counts.values())
        if read > available:
            detail = (
                f"its readers read {read} records since the restore, but it holds {available} past offset "
                f"{start} (end offset {offsets.end}): at least {read - available} were read twice"
            )
            excess = read - available
            findings.append(Finding(READ_MORE_THAN_AVAILABLE, ERROR, topic, partition, excess, detail=detail))
    return findings


def judge_checkpoint(
    read: Mapping[Key, int], resume: Mapping[Key, int], advanced_to: Mapping[Key, int], checkpoint: int
) -> list[Finding]:
    """The partitions whose readers had read (`read`, at a poll) more records than `checkpoint`, taken after that
    poll, holds them advanced past their restored offset (`advanced_to`: the checkpoint's next offsets). One
    reader that started at the restored offset has read at most the offsets it advanced over; more is a second
    reader."""
    findings: list[Finding] = []
    for (topic, partition), count in sorted(read.items()):
        start, end = resume.get((topic, partition)), advanced_to.get((topic, partition))
        if start is None or end is None or count <= end - start:
            continue
        detail = (
            f"its readers had read {count} records since the restore, but checkpoint {checkpoint}, taken after, "
            f"holds it at offset {end}, {end - start} past the restored offset {start}: one reader cannot read "
            f"more than it advanced, so at least {count - (end - start)} were read by a second reader"
        )
        excess = count - (end - start)
        findings.append(Finding(READ_MORE_THAN_ADVANCED, ERROR, topic, partition, excess, detail=detail))
    return findings
