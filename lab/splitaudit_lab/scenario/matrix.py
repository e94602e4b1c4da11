"""`splitaudit matrix`: the restore scenario on a real cluster for every Beam release users can get here.

Each Beam release runs on the Flink its runner artifact targets (`home.MATRIX_FLINK`: 2.54.0, 2.56.0 and 2.59.0
on Flink 1.16.3, 2.62.0 and 2.70.0 on Flink 1.19.3) as three jars where a patch variant exists: `stock`, as
released; `patched`, shaded by Maven with the variant's classes; `patch-jar`, the stock jar put through
`splitaudit patch-jar`. The expectation per run: an affected release's stock jar reads every partition twice
after the restore; the two patched jars and the upstream-fixed 2.70.0 read every offset exactly once.
"""

from __future__ import annotations

import time
from itertools import groupby
from pathlib import Path

from splitaudit.errors import UsageError
from splitaudit.home import FIXED_BEAM_VERSIONS, MATRIX_FLINK, pipeline_jars
from splitaudit.patch.jar import patch_jar
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import ScenarioSettings, pipeline_jar, run_restore_scenario
from splitaudit_lab.scenario.results import MatrixReport, MatrixRun
from splitaudit_lab.stack.stack import Stack


def run_matrix(
    run_dir: Path, progress: Progress, settings: ScenarioSettings, releases: tuple[str, ...] = tuple(MATRIX_FLINK)
) -> MatrixReport:
    """Every release of `releases` and each of its variants, one stack per Flink version, under `run_dir` (new)."""
    unknown = [release for release in releases if release not in MATRIX_FLINK]
    if unknown:
        raise UsageError(f"not in the matrix: {', '.join(unknown)} (the matrix has {', '.join(MATRIX_FLINK)})")
    if run_dir.exists():
        raise UsageError(f"{run_dir} already exists; choose a new --workdir (nothing is overwritten)")
    started = time.monotonic()
    # Every jar is checked before the first stack starts: a missing one fails at once, naming the setup to run.
    jars = {(r, variant): pipeline_jar(variant, r) for r in releases for variant in pipeline_jars(r)}
    run_dir.mkdir(parents=True)
    for release in releases:
        if "patched" in pipeline_jars(release):
            tool_patched = run_dir / "jars" / f"beam-{release}-patch-jar.jar"
            with progress.step(f"splitaudit patch-jar of the Beam {release} stock jar"):
                patch_jar(jars[release, "stock"], tool_patched, force=False)
            jars[release, "patch-jar"] = tool_patched
    runs = []
    by_flink = sorted(releases, key=lambda release: MATRIX_FLINK[release])
    for flink_version, group in groupby(by_flink, key=lambda release: MATRIX_FLINK[release]):
        stack = Stack(run_dir / f"stack-flink-{flink_version}", flink_version=flink_version)
        with stack.running(progress):
            for release in group:
                for variant in [v for r, v in jars if r == release]:
                    name = f"beam-{release}-{variant}"
                    progress.info(f"Beam {release} {variant} on Flink {flink_version}")
                    report = run_restore_scenario(
                        stack, run_dir / name, jars[release, variant], name, progress, settings
                    )
                    affected = variant == "stock" and release not in FIXED_BEAM_VERSIONS
                    runs.append(MatrixRun(release, flink_version, variant, affected, report))
    return MatrixReport(str(run_dir), time.monotonic() - started, tuple(runs))
