"""The RocksDB reader under fuzzing (tests/fuzz_rocksdb.py): a short run of every mutation of SST, MANIFEST and
CURRENT bytes finds nothing but InputErrors and clean reads. Longer: `python -m tests.fuzz_rocksdb --seconds N`;
this one takes a third of FUZZ_SECONDS (default 100: `make test` 33 s, the quick unit run 3 s)."""

from __future__ import annotations

import os

from tests.fuzz_rocksdb import STRATEGIES, run_case
from tests.fuzz_savepoints import fuzz

SECONDS = float(os.environ.get("FUZZ_SECONDS", "100")) / 3


def test_a_short_run_of_every_rocksdb_mutation_finds_nothing() -> None:
    summary = fuzz(cases=None, seconds=SECONDS, seed=0, workers=2, memory_mib=1024, case_seconds=10.0, run=run_case)
    assert summary.failures == []
    assert set(summary.strategies) == set(STRATEGIES)
    assert summary.outcomes["input_error"] > 0
    assert summary.cases == summary.outcomes["input_error"] + summary.outcomes["ok"]
