"""The real-cluster matrix (`make matrix`, not `make test`): every reachable Beam release on its own Flink.

Stock jars of the affected releases (2.54.0, 2.56.0, 2.59.0 on Flink 1.16.3, 2.62.0 on Flink 1.19.3) read every
partition twice after a restore from a savepoint; the Maven-patched jar, the stock jar put through `splitaudit
patch-jar`, and Beam 2.70.0 (fixed upstream) read each offset exactly once. Needs `splitaudit setup --matrix`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.home import MATRIX_FLINK
from splitaudit.progress import Progress
from splitaudit_lab.scenario.matrix import run_matrix
from splitaudit_lab.scenario.restore import ScenarioSettings

pytestmark = [pytest.mark.integration, pytest.mark.matrix]

RECORDS = 2_000  # per batch: 500 per partition before the savepoint, 500 after
PARTITIONS = 4
AFFECTED = ("2.54.0", "2.56.0", "2.59.0", "2.62.0")


def test_every_release_reads_twice_unpatched_and_once_patched(tmp_path: Path) -> None:
    settings = ScenarioSettings(partitions=PARTITIONS, records=RECORDS, parallelism=2)
    report = run_matrix(tmp_path / "matrix", Progress(), settings)
    seen = {(run.beam_version, run.variant): run for run in report.runs}
    assert sorted(seen) == sorted(
        [(release, "stock") for release in MATRIX_FLINK]
        + [
            (release, variant)
            for release in ("2.54.0", "2.56.0", "2.59.0", "2.62.0")
            for variant in ("patched", "patch-jar")
        ]
    )
    for (release, variant), run in seen.items():
        assert run.flink_version == MATRIX_FLINK[release]
        rows = [
            (p.partition, p.expected_records, p.sink_rows, p.double_read_offsets, p.replayed_offsets, p.missing_offsets)
            for p in run.report.partitions
        ]
        if variant == "stock" and release in AFFECTED:
            # The restored job's twin readers start where the consumer group's committed offsets are: from
            # 2.56.0 on the savepoint's offsets, so they read the 500 records produced after it a second time
            # (two readers of the restored job: double assignment); in 2.54.0 the group has no committed offsets
            # (the TaskManager log says "Found no committed offset" at the restore), so the twins start at the
            # first offset and read all 1,000 a second time: 500..999 beside the restored reader (double
            # assignment), 0..499 after the first job read them (another generation: replay).
            replayed = 500 if release == "2.54.0" else 0
            expected = [(p, 1_000, 1_500 + replayed, 500, replayed, 0) for p in range(PARTITIONS)]
            assert rows == expected, (release, variant)
            assert run.report.double_assigned == tuple((run.report.topics[0], p) for p in range(4))
        else:
            assert rows == [(p, 1_000, 1_000, 0, 0, 0) for p in range(PARTITIONS)], (release, variant)
            assert run.report.audit.findings == (), (release, variant)
        assert run.as_expected
    assert report.as_expected
