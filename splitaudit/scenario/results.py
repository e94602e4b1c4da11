"""Result of the restore scenario (`splitaudit scenario`), rendered by an Output."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from splitaudit.report.progress import TimedStep
from splitaudit.scenario.sink import PartitionCounts


@dataclass(frozen=True)
class ScenarioReport:
    """One restore scenario run of one job jar (stock or patched): where everything is and what the sink holds."""

    variant: str  # "stock" | "patched" | a user's label for --jar
    restart: str  # "savepoint": cancel and restore; "taskmanager-kill": kill -9 the TaskManager, Flink fails over
    jar: str
    run_dir: str
    topic: str
    job_id_before: str
    job_id_after: str  # the same job as job_id_before after a failover
    savepoint_before: str  # for a failover: the checkpoint Flink restarted from
    savepoint_after: str
    sink_path: str
    sink_format: str
    expected_records: int
    records_per_second: float  # records read after the restore / seconds from restore to all in the sink
    partitions: tuple[PartitionCounts, ...]
    steps: tuple[TimedStep, ...]

    @property
    def sink_rows(self) -> int:
        return sum(p.sink_rows for p in self.partitions)

    @property
    def duplicate_rows(self) -> int:
        return sum(p.duplicate_rows for p in self.partitions)

    @property
    def missing_offsets(self) -> int:
        return sum(p.missing_offsets for p in self.partitions)

    @property
    def double_read_offsets(self) -> int:
        return sum(p.double_read_offsets for p in self.partitions)

    @property
    def replayed_offsets(self) -> int:
        return sum(p.replayed_offsets for p in self.partitions)

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document.update(
            sink_rows=self.sink_rows,
            duplicate_rows=self.duplicate_rows,
            missing_offsets=self.missing_offsets,
            double_read_offsets=self.double_read_offsets,
            replayed_offsets=self.replayed_offsets,
        )
        return document


@dataclass(frozen=True)
class DemoReport:
    """`splitaudit demo`: the restore scenario with the stock and with the patched jar, on one stack."""

    run_dir: str
    seconds: float
    stock: ScenarioReport
    patched: ScenarioReport

    def to_json(self) -> dict[str, Any]:
        return {
            "run_dir": self.run_dir,
            "seconds": self.seconds,
            "stock": self.stock.to_json(),
            "patched": self.patched.to_json(),
        }
