"""The reader under fuzzing (tests/fuzz_savepoints.py): a short run of every mutation strategy finds nothing, and
the harness itself reports what it exists to catch (an unexpected exception, a hang).

The long run is `make fuzz` (FUZZ_CASES=1000000 by default); this one takes FUZZ_SECONDS (default 100).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests import fuzz_savepoints
from tests.fuzz_savepoints import STRATEGIES, fuzz, run_case

SECONDS = float(os.environ.get("FUZZ_SECONDS", "100"))


def test_a_short_run_of_every_strategy_finds_nothing() -> None:
    summary = fuzz(cases=None, seconds=SECONDS, seed=0, workers=2, memory_mib=1024, case_seconds=10.0)
    assert summary.failures == []
    assert set(summary.strategies) == set(STRATEGIES)
    assert summary.outcomes["input_error"] > 0
    assert summary.outcomes["ok"] > 0
    assert summary.cases == summary.outcomes["input_error"] + summary.outcomes["ok"]


def test_the_harness_reports_an_unexpected_exception(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(location: str) -> None:
        raise ValueError("a bug in the reader")

    monkeypatch.setattr(fuzz_savepoints, "inspect_savepoint", broken)
    _, outcome, detail = run_case(tmp_path / "case", seed=7, case_seconds=5.0)
    assert outcome == "exception"
    assert detail.endswith("ValueError: a bug in the reader")


def test_the_harness_interrupts_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fuzz_savepoints, "inspect_savepoint", lambda location: time.sleep(60))
    previous = signal.signal(signal.SIGALRM, fuzz_savepoints._on_alarm)
    try:
        started = time.monotonic()
        _, outcome, _ = run_case(tmp_path / "case", seed=7, case_seconds=0.5)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert outcome == "hang"
    assert time.monotonic() - started < 30
