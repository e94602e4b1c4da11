"""The restore scenario with `splitaudit watch` following the restored job: how soon it stops a double read.

The first half is the restore scenario's (N records, the job, savepoint and cancel, N more records: the restored
backlog); then the savepoint is restored with the same jar and `run_watch` follows the new job from the moment
Flink's REST API names the restored savepoint, acting as asked. The result says when the watch found what, what
it did, and, from the sink, how many of the restored job's records were read twice by then.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from splitaudit.guard.results import STOP, WatchReport
from splitaudit.guard.watch import WatchSettings, run_watch
from splitaudit.progress import Progress
from splitaudit.scenario.restore import ScenarioSettings, _Run
from splitaudit.scenario.sink import read_sink
from splitaudit.stack.stack import Stack


@dataclass(frozen=True)
class WatchedRestore:
    """One watched restore: the watch's report, timings and what the restored job wrote to the sink by the end."""

    variant: str
    backlog: int  # records produced while the job was down
    restore_seconds: float  # from submitting the restore until Flink's REST API named the restored savepoint
    watch: WatchReport
    restored_rows: int  # sink rows of the restored job when the watch ended
    restored_offsets: int  # distinct (partition, offset) among them

    @property
    def read_twice(self) -> int:
        return self.restored_rows - self.restored_offsets

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "backlog": self.backlog,
            "restore_seconds": self.restore_seconds,
            "restore_to_end_seconds": round(self.restore_seconds + self.watch.seconds, 3),
            "watch": self.watch.to_json(),
            "restored_rows": self.restored_rows,
            "restored_offsets": self.restored_offsets,
            "read_twice": self.read_twice,
        }


def run_watched_restore(
    stack: Stack,
    run_dir: Path,
    jar: Path,
    variant: str,
    progress: Progress,
    settings: ScenarioSettings,
    on_error: str = STOP,
    watch_seconds: float | None = None,
) -> WatchedRestore:
    """Savepoint a run of `jar`, restore it with `jar` and watch the restored job (for at most `watch_seconds`)."""
    run = _Run(stack, run_dir, f"watch-{variant}", settings, progress)
    run.produce(settings.records)
    job = run.run_job(jar)
    run.wait_for_first_batch(job)
    savepoint = run.savepoint_and_cancel(job)
    run.produce(settings.records, what=" more")
    submitted = time.monotonic()
    restored, _ = run.restore(jar, savepoint, "restore from the savepoint")
    restore_seconds = round(time.monotonic() - submitted, 3)
    watch = WatchSettings(
        stack.flink.rest_url,
        restored,
        stack.kafka.bootstrap,
        on_error,
        duration=watch_seconds,
        savepoint_dir=run.savepoints.as_uri(),
    )
    with run.steps.step(f"watch job {restored}") as out:
        report = run_watch(watch, progress, lambda _event: None)
        out.append(report.line)
    if report.job_state not in ("FINISHED", "CANCELED", "FAILED"):
        run.flink.cancel(restored)
    sink = read_sink(run.sink)
    mine = sink.filter(pc.equal(sink["job_id"], restored))
    offsets = mine.group_by(["partition", "offset"]).aggregate([]).num_rows
    return WatchedRestore(variant, settings.records, restore_seconds, report, mine.num_rows, offsets)
