"""`splitaudit watch`: the pure judging of a poll's metrics and a checkpoint (`judging.py`), how Flink's REST API is
asked (each call retried while Flink fails transiently, the job's phase and why it ended: `rest.py`), what the job's
checkpoints prove of its polls and what a restart restores (`checkpoints.py`), the job's attempts and the tally of
what they read twice (`attempts.py`), and the loop that polls and acts on the first error (`loop.py`); for Flink's
own KafkaSource, the connector's per-partition positions and the source found by the savepoint's state
(`kafka_source.py`)."""

from splitaudit.guard.watch.checkpoints import restored_offsets
from splitaudit.guard.watch.judging import (
    PARTITION_READ_TWICE,
    READ_MORE_THAN_ADVANCED,
    READ_MORE_THAN_AVAILABLE,
    READ_TWICE,
    RECORDS_OUT,
    SOURCE_METRICS,
    SubtaskSample,
    fresh_sample,
    judge_checkpoint,
    judge_sample,
    subtask_sample,
)
from splitaudit.guard.watch.loop import WatchSettings, run_watch

__all__ = [
    "PARTITION_READ_TWICE",
    "READ_MORE_THAN_ADVANCED",
    "READ_MORE_THAN_AVAILABLE",
    "READ_TWICE",
    "RECORDS_OUT",
    "SOURCE_METRICS",
    "SubtaskSample",
    "WatchSettings",
    "fresh_sample",
    "judge_checkpoint",
    "judge_sample",
    "restored_offsets",
    "run_watch",
    "subtask_sample",
]
