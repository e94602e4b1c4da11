"""Flink's `DynamicKafkaSource` restored from a savepoint: `DynamicKafkaLineageJob` of
beam_pipelines/java/flink-jobs (connector 3.3.0-1.19 by default, or another release's build of the KafkaSource
matrix, `ConnectorRelease.dynamic_job`; one cluster through `SingleClusterTopicMetadataService` at the
stack's broker), on the same run as the KafkaSource job's (`scenario/flink_kafka.py`: savepoint SP0 once the first
records are in the sink, records produced while the job is down, guard, restore, savepoint SP1, audit); and through
a TaskManager kill with every checkpoint it completes kept (FLINK-40469's recovery window tried).
"""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from splitaudit.progress import Progress
from splitaudit_lab.scenario.flink_kafka import KafkaSourceRestore, run_kafka_source_restore
from splitaudit_lab.scenario.restore import ScenarioSettings, run_restore_scenario
from splitaudit_lab.scenario.results import TASKMANAGER_KILL, ScenarioReport
from splitaudit_lab.stack.kafka_matrix import KAFKA_SOURCE_MATRIX
from splitaudit_lab.stack.stack import Stack

CLUSTER_ID = "splitaudit-kafka"  # DynamicKafkaLineageJob.CLUSTER_ID: the id its metadata service gives the broker
SOURCE_UID = "dynamic-kafka-source"


def dynamic_kafka_job() -> Path:
    """The DynamicKafkaSource job's shaded jar for the stack's own Flink, as the Maven reactor leaves it (`make
    setup` builds it)."""
    return KAFKA_SOURCE_MATRIX[0].dynamic_job  # the stack's own pair comes first


def run_dynamic_kafka_restore(
    stack: Stack, run_dir: Path, progress: Progress, settings: ScenarioSettings, jar: Path | None = None
) -> KafkaSourceRestore:
    """The DynamicKafkaSource job (`jar`, default `dynamic_kafka_job()`) through a savepoint and a restore on a
    running `stack` (periodic partition discovery disabled, as the KafkaSource job's restore runs); everything it
    writes goes under `run_dir`."""
    return run_kafka_source_restore(stack, run_dir, progress, settings, jar=jar or dynamic_kafka_job())


class CheckpointCapture:
    """Copies the `_metadata` of every checkpoint the cluster completes while it runs (a background poll every
    POLL_SECONDS), before the next one subsumes it: the checkpoints a recovery window's would be among them.

    Small source state is inline in `_metadata` (below Flink's `state.storage.fs.memory-threshold`), so the copy is
    a whole checkpoint for the reader. A copy whose size grew by the next poll is copied again."""

    POLL_SECONDS = 0.05

    def __init__(self, checkpoints: Path, target: Path) -> None:
        self.checkpoints = checkpoints
        self.target = target
        self._sizes: dict[Path, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="checkpoint-capture", daemon=True)

    def __enter__(self) -> CheckpointCapture:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._poll()

    @property
    def copies(self) -> tuple[Path, ...]:
        """The copied checkpoints (`<job>/chk-N` folders holding `_metadata`), by job and checkpoint number."""
        return tuple(sorted(self._sizes, key=lambda p: (p.parent.name, int(p.name.removeprefix("chk-")))))

    def _run(self) -> None:
        while not self._stop.wait(self.POLL_SECONDS):
            self._poll()

    def _poll(self) -> None:
        for metadata in self.checkpoints.glob("*/chk-*/_metadata"):
            copy = self.target / metadata.parent.parent.name / metadata.parent.name
            try:
                size = metadata.stat().st_size
                if size == 0 or self._sizes.get(copy) == size:
                    continue
                copy.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(metadata, copy / "_metadata")
            except FileNotFoundError:  # subsumed and deleted between the listing and the copy
                continue
            self._sizes[copy] = size


@dataclass(frozen=True)
class RecoveryRun:
    """The DynamicKafkaSource job through a TaskManager kill, with every checkpoint it completed copied."""

    run: ScenarioReport
    checkpoints: tuple[Path, ...]


def run_dynamic_kafka_taskmanager_kill(
    stack: Stack, run_dir: Path, progress: Progress, settings: ScenarioSettings, jar: Path | None = None
) -> RecoveryRun:
    """FLINK-40469's setting tried on the jar's connector (default 3.3.0): the job checkpointing every second is
    failed by a TaskManager kill while it reads (`run_restore_scenario`'s `taskmanager-kill`: Flink restores the job,
    its enumerator included, from its latest checkpoint and checkpoints on through the recovery), and every
    checkpoint it completes, those of the recovery included, is kept for the guard's rule."""
    with CheckpointCapture(stack.flink.checkpoints_dir, run_dir / "captured-checkpoints") as capture:
        report = run_restore_scenario(
            stack,
            run_dir / "run",
            jar or dynamic_kafka_job(),
            "dynamic-kafka",
            progress,
            replace(settings, fault=TASKMANAGER_KILL),
        )
    return RecoveryRun(report, capture.copies)
