"""`splitaudit watch` through a new attempt the cluster makes of the restored job, on a real stack of its own
(Kafka, Flink, Beam 2.62.0 stock and patched jars): a JobManager failover in a highly available cluster, and a
rescale by the adaptive scheduler. The watch must follow the new attempt, and its final tally per partition must
equal the double read counted in the sink.

Each restore has a backlog of 500 records per partition (2,000 before the savepoint, 2,000 more while the job is
down, 4 partitions), read until the sink stops growing; then the new attempt, which reads 250 more records per
partition. The stock restore reads the backlog twice (beam#31313: the twin starts at the restored offset); its
new attempt restores a checkpoint and splits the source again too, and its fresh splits start at the group's
committed offsets, the checkpoint's: the 250 are read again by each reader too many. How many that is varies
from run to run: a fresh split of a restored split's index mostly runs beside that split's reader, but once ran as
the only reader of both (the reader keeps one split per index). The patched one reads each record once. Whatever
the stock job did, the watch's tally must equal the sink's truth exactly.

- Failover: the job restored at parallelism 2 (splits {0, 2} and {1, 3}); the stock checkpoint holds one split
  per index, the recovered attempt adds a fresh twin to each: every partition's 250 read twice, 750 in all (in one
  run of eight, subtask 1 ran one reader of split 1: 500 for partitions 1 and 3).
- Rescale: the job restored at parallelism 1 (both splits on subtask 0), then rescaled to 2, where the
  checkpoint's splits are handed out in contiguous runs: partitions 1 and 3 (split 1) are read on subtask 1 now,
  which the watch must poll. Stock: the restore at 1 read the backlog twice (a fresh split of all four partitions
  beside the two restored ones), its checkpoint holds that fresh split as split 0 and the restored split 1
  ({1, 3}), and the rescale adds another fresh split of all four: partitions 0 and 2 have two readers, 1 and 3
  three, so 250 and 500 of the 250 are read again (750 and 1,000 in all, in each of five runs).

Marked `watch` (`make watch`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from splitaudit.guard.lifecycle import FAILOVER, RESCALE, RESTORED
from splitaudit.guard.results import WatchReport
from splitaudit.guard.watch import READ_TWICE
from splitaudit.progress import Progress
from splitaudit_lab.scenario.recovered import JOBMANAGER_FAILOVER, run_watched_recovery
from splitaudit_lab.scenario.recovered import RESCALE as RESCALE_FAULT
from splitaudit_lab.scenario.restore import ScenarioSettings, pipeline_jar
from splitaudit_lab.scenario.results import WatchedLife
from splitaudit_lab.scenario.watched import WatchedCase
from splitaudit_lab.stack.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.watch]

MORE = 1_000  # records produced after the new attempt runs: 250 per partition
PARTITIONS = range(4)
# Per partition what the stock job may read twice: the backlog's 500, then what its new attempt reads again. A fresh
# split of a restored split's index ran beside the restored split's reader (one reader too many) in most runs, and
# as that one reader in one (subtask 1 after a failover: partitions 1 and 3 read once by the new attempt).
STOCK_FAILOVER = dict.fromkeys(PARTITIONS, frozenset({500, 500 + 250}))
ONE_OR_TWO_TOO_MANY, NONE_OR_ONE_TOO_MANY = frozenset({500 + 250, 500 + 500}), frozenset({500, 500 + 250})
STOCK_RESCALE = {0: NONE_OR_ONE_TOO_MANY, 1: ONE_OR_TWO_TOO_MANY, 2: NONE_OR_ONE_TOO_MANY, 3: ONE_OR_TWO_TOO_MANY}


@pytest.fixture(scope="module")
def ha_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Kafka and a highly available Flink cluster (ZooKeeper) on 127.0.0.1, for this module's failovers."""
    with Stack(tmp_path_factory.mktemp("ha-stack"), high_availability=True).running(Progress()) as running:
        yield running


@pytest.fixture(scope="module")
def adaptive_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Kafka and a Flink cluster with the adaptive scheduler on 127.0.0.1, for this module's rescales."""
    with Stack(tmp_path_factory.mktemp("adaptive-stack"), scheduler="adaptive").running(Progress()) as running:
        yield running


def _tally(watch: WatchReport) -> dict[int, tuple[int, bool, str | None]]:
    return {t.partition: (t.read_twice, t.exact, t.why) for t in watch.tally}


def _check(result: WatchedLife, stock: dict[int, frozenset[int]], attempts: list[tuple[str, int]]) -> None:
    watch, twice = result.watch, result.read_twice
    # The watch's final figures are the sink's, exactly, whatever the stock job's readers did.
    assert _tally(watch) == {p: (n, True, None) for p, n in twice.items()}, result.to_json()  # the whole report
    if result.variant == "stock":
        assert sorted(twice) == list(PARTITIONS)
        assert all(twice[p] in stock[p] for p in PARTITIONS), twice
    else:
        assert twice == dict.fromkeys(PARTITIONS, 0)
    assert [(a.cause, a.parallelism) for a in watch.attempts] == attempts
    assert (watch.end.phase, watch.end.state) == ("finished", "FINISHED")
    if result.variant == "stock":
        assert [(f.partition, f.count) for f in watch.findings if f.kind == READ_TWICE] == list(twice.items())
        assert (watch.action, watch.exit_code) == ("report", 1)
    else:
        assert (watch.findings, watch.action, watch.exit_code) == ((), "none", 0)


@pytest.mark.parametrize("variant", ["stock", "patched"])
def test_jobmanager_killed_and_started_again_recovers_the_job_the_watch_follows(
    ha_stack: Stack, tmp_path: Path, variant: str
) -> None:
    # The REST API refuses connections until the new JobManager runs, then answers 503 until it leads: retried
    # within --rest-timeout, which must outlast the failover.
    settings = ScenarioSettings(records=2_000)
    case = WatchedCase(ha_stack, tmp_path / "run", pipeline_jar(variant), variant, settings)
    result = run_watched_recovery(case, JOBMANAGER_FAILOVER, MORE, rest_timeout=120.0)
    _check(result, STOCK_FAILOVER, [(RESTORED, 2), (FAILOVER, 2)])
    assert result.watch.rest_faults


@pytest.mark.parametrize("variant", ["stock", "patched"])
def test_a_rescale_by_the_adaptive_scheduler_is_followed_on_the_new_subtasks(
    adaptive_stack: Stack, tmp_path: Path, variant: str
) -> None:
    settings = ScenarioSettings(records=2_000, restore_parallelism=1)
    case = WatchedCase(adaptive_stack, tmp_path / "run", pipeline_jar(variant), variant, settings)
    result = run_watched_recovery(case, RESCALE_FAULT, MORE, parallelism=2)
    _check(result, STOCK_RESCALE, [(RESTORED, 1), (RESCALE, 2)])
