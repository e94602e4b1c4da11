"""When a scenario's output has settled: the rows of checkpoints spanning SETTLED_SECONDS unchanged, not one
checkpoint interval's (a checkpoint is a step of a fake clock here; no cluster)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from splitaudit_lab.scenario import restore


def _settle(monkeypatch: pytest.MonkeyPatch, rows: list[int], seconds_per_checkpoint: float) -> tuple[int, int]:
    """The checkpoint `wait_until_settled` returns and how many rows it counted, checkpoints completing every
    `seconds_per_checkpoint` and the output counting `rows` at each (its first count before any checkpoint)."""
    clock, checkpoints, counts = [0.0], [0], iter(rows)

    def checkpoint_after_now(flink: Any, job_id: str, trigger: bool = False) -> int:
        clock[0] += seconds_per_checkpoint
        checkpoints[0] += 1
        return checkpoints[0]

    monkeypatch.setattr(restore, "checkpoint_after_now", checkpoint_after_now)
    monkeypatch.setattr(restore, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    counted = [0]

    def count() -> int:
        counted[0] = next(counts)
        return counted[0]

    checkpoint = restore.wait_until_settled(None, "job", count, "the sink", timeout=10.0)  # type: ignore[arg-type]
    return checkpoint, counted[0]


def test_one_quiet_checkpoint_interval_is_not_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    # As a CI run saw it: a stock twin emitted nothing for one interval mid-backlog, then 169 rows more.
    rows = [3001, 3001, 3170, 3500, 3500, 3500, 3500, 3500]
    assert _settle(monkeypatch, rows, seconds_per_checkpoint=1.0) == (6, 3500)


def test_settled_after_quiet_checkpoints_spanning_the_settle_time(monkeypatch: pytest.MonkeyPatch) -> None:
    assert restore.SETTLED_SECONDS == 3.0
    assert _settle(monkeypatch, [4000, 4000, 4000, 4000, 4000], seconds_per_checkpoint=1.0) == (3, 4000)
    assert _settle(monkeypatch, [4000, 4000, 4000], seconds_per_checkpoint=5.0) == (1, 4000)
