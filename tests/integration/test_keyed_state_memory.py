"""Large key groups from real runs, read a window at a time: memory bounded by the window and the largest entry,
not by the key group, whether the key group is Snappy compressed or not, canonical or a heap checkpoint's.

`KeyedStateFixtureJob` (fixtures/generate_keyed.py) runs on Flink 1.19.3 with 120,000 values and max parallelism
2, so each of its two subtasks holds one key group: `window-sum`'s holds 14,400 windows and their 14,400 timers,
about 1 MB decompressed. Too large to keep in fixtures/keyed/, so each test makes
its snapshot (about 30 s: the job is given 20 s to see every value). Measured (tracemalloc's peak while reading
`window-sum`, a 16 KiB window): 243 KB for the compressed heap checkpoint (key groups of 955 KB decompressed), 79
KB for the uncompressed one (955 KB), 218 KB for the compressed canonical savepoint (1.24 MB). The reader before
held each key group whole (2.9 MB for the savepoint) and misread both heap checkpoints' one-key-group handles as
canonical (a refusal, exit 2).
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from fixtures.generate_flink import CHECKPOINT_EVERY_SECOND, INLINE_THRESHOLD_0, SNAPPY
from fixtures.generate_keyed import Case, compile_keyed_job, expected_state, flink_classpath, make_snapshot
from splitaudit.primitives.snappy import snappy_framed
from splitaudit.savepoint import keyed
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint.metadata import operator_id_from_uid, read_metadata
from splitaudit.savepoint_view import keyed_reader, read_keyed_state
from tests.unit.test_fixtures import fold_keyed_state

pytestmark = [pytest.mark.integration, pytest.mark.needs_build]

VERSION = "1.19.3"
RECORDS = 120_000
WAIT_MILLIS = 20_000  # the job's time to see every value before its snapshot, on a busy machine


def _large(name: str, mode: str, conf: dict[str, str], max_parallelism: int) -> Case:
    return Case(name, "hashmap", mode, conf, False, RECORDS, max_parallelism, WAIT_MILLIS)


CASES = (
    _large(
        "heap-checkpoint-files-snappy", "checkpoint", {**CHECKPOINT_EVERY_SECOND, **INLINE_THRESHOLD_0, **SNAPPY}, 2
    ),
    # Subtask 0's handle holds key group 0 alone: uncompressed, its bytes read as either layout until it is read to
    # its end as heap (KeyGroupsReader._layout).
    _large("heap-checkpoint-files", "checkpoint", {**CHECKPOINT_EVERY_SECOND, **INLINE_THRESHOLD_0}, 2),
    _large("heap-savepoint-canonical-files-snappy", "savepoint-CANONICAL", {**INLINE_THRESHOLD_0, **SNAPPY}, 2),
)
WINDOW = 16 << 10  # the test's window: a large key group is many windows


@pytest.fixture(scope="module")
def keyed_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """Flink 1.19.3's classpath and the fixture job compiled against it."""
    classpath = flink_classpath(VERSION)
    return classpath, compile_keyed_job(classpath, tmp_path_factory.mktemp("keyed-job"))


def _largest_key_group(snapshot: Path) -> tuple[int, int]:
    """The largest key group of `window-sum`, as (bytes in the file, bytes decompressed)."""
    files = SavepointFiles(str(snapshot))
    metadata = read_metadata(files.read_metadata(), files.metadata_path)
    [operator] = [op for op in metadata.operators if op.operator_id == operator_id_from_uid("window-sum")]
    largest = (0, 0)
    for subtask in operator.subtask_states:
        assert subtask.managed_keyed_state is not None
        reader = keyed_reader(subtask.managed_keyed_state, files, operator.max_parallelism)
        assert isinstance(reader, keyed.KeyGroupsReader)
        starts = sorted(offset for offset in reader.handle.offsets if offset)
        for offset, end in zip(starts, [*starts[1:], reader.stream.size], strict=True):
            stored = decompressed = end - offset
            if reader.header.compressed:
                start = offset + (4 if reader.layout == "heap" else 0)
                decompressed = len(snappy_framed(reader.stream.read(start, end - start, "key group")))
            largest = max(largest, (stored, decompressed))
    return largest


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_a_large_key_group_is_read_a_window_at_a_time(
    case: Case, keyed_job: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    classpath, classes = keyed_job
    snapshot, _, _ = make_snapshot(VERSION, case, classes, classpath, tmp_path)
    # Every key and value, as the job was fed.
    want = {
        operator_id: {name: value for name, value in operator["states"].items() if value}
        for operator_id, operator in expected_state(RECORDS).items()
    }
    assert fold_keyed_state(str(snapshot)) == want
    stored, decompressed = _largest_key_group(snapshot)
    assert decompressed > 500_000
    monkeypatch.setattr(keyed, "WINDOW_BYTES", WINDOW)
    tracemalloc.start()
    try:
        entries = sum(1 for _ in read_keyed_state(str(snapshot), ["window-sum"]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert entries == 2 * 24 * RECORDS // 100  # a window per key and 100 values, and its timer
    # Read whole, a key group would take its stored and its decompressed bytes at once; a window at a time it takes
    # the window, a Snappy chunk (64 KiB) and the entries in flight.
    assert peak < decompressed / 3, (peak, stored, decompressed)
