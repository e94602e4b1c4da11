"""How fast `splitaudit watch` stops a restored stock Beam 2.62.0 job, and that it stays silent on a patched one.

On one real stack, each run is `splitaudit.scenario.watched.run_watched_restore`: the restore scenario's first
half (N records, the reference pipeline, savepoint and cancel, N more records: the restored backlog), then the
restore with `watch` started as soon as Flink's REST API names the restored savepoint, acting with
stop-with-savepoint. Prints one JSON line per run: seconds from the restore's submission to the end of the
watch, the findings with their time, the action, and from the sink the restored job's rows and distinct offsets
(rows - distinct = records read twice by the stop) against the backlog N. Patched runs are watched for
`--patched-seconds` and must stay silent.

    .venv/bin/python benchmarks/watch_restore.py [--stock-runs 3] [--patched-runs 1] [--records 20000]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from splitaudit.progress import Progress
from splitaudit.scenario.restore import ScenarioSettings, pipeline_jar
from splitaudit.scenario.watched import run_watched_restore
from splitaudit.stack.stack import Stack


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--stock-runs", type=int, default=3)
    parser.add_argument("--patched-runs", type=int, default=1)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--patched-seconds", type=float, default=60.0)
    parser.add_argument("--workdir", type=Path, default=Path(".splitaudit/watch-benchmark"))
    args = parser.parse_args()
    workdir = args.workdir.resolve() / time.strftime("%Y%m%dT%H%M%S")
    settings = ScenarioSettings(records=args.records)
    runs = [("stock", 180.0)] * args.stock_runs + [("patched", args.patched_seconds)] * args.patched_runs
    with Stack(workdir / "stack").running(Progress()) as stack:
        for index, (variant, seconds) in enumerate(runs):
            result = run_watched_restore(
                stack, workdir / f"{index}-{variant}", pipeline_jar(variant), variant, Progress(), settings,
                watch_seconds=seconds,
            )  # fmt: skip
            print(json.dumps(result.to_json()), flush=True)


if __name__ == "__main__":
    main()
