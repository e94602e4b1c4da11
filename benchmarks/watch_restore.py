"""How fast `splitaudit watch` stops a restored stock Beam 2.62.0 job, and that it stays silent on a patched one.

On one real stack, each run is `splitaudit_lab.scenario.watched.run_watched_restore`: the restore scenario's first
half (N records, the reference pipeline, savepoint and cancel, N more records: the restored backlog), then the
watch started, then the restore submitted with the job id the watch waits for; the watch acts with
stop-with-savepoint or cancel (`--on-error`). Every run is repeated at each pace of `--rates` (records per second
per subtask, the pipeline's --maxRecordsPerSecond; 0 is full speed), stock then patched, so both sides of a pace
share the machine's load. Prints one JSON line per run: the seconds from submitting the restore to each stage
(listed, running, read, finding, ended), the findings, the action, and from the sink the restored job's rows and
distinct offsets (rows - distinct = records read twice by the stop) against the backlog N, with the load
average. Patched runs are watched for `--patched-seconds` from their listing and must stay silent.

    .venv/bin/python benchmarks/watch_restore.py [--stock-runs 3] [--patched-runs 1] [--records 20000]
        [--rates 0,500] [--on-error stop|cancel] [--probe SECONDS] [--interval SECONDS]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from splitaudit.guard.results import ACTIONS, STOP
from splitaudit.progress import Progress
from splitaudit_lab.scenario.restore import ScenarioSettings, pipeline_jar
from splitaudit_lab.scenario.watched import WatchedCase, run_watched_restore
from splitaudit_lab.stack.stack import Stack


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--stock-runs", type=int, default=3)
    parser.add_argument("--patched-runs", type=int, default=1)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rates", default="0,500", help="records per second per subtask, 0 for full speed")
    parser.add_argument("--on-error", choices=ACTIONS, default=STOP)
    parser.add_argument("--patched-seconds", type=float, default=60.0)
    parser.add_argument("--probe", type=float, default=0.0, help="watch --probe: seconds of triggered checkpoints")
    parser.add_argument("--interval", type=float, default=0.25, help="watch --interval: seconds between polls")
    parser.add_argument("--workdir", type=Path, default=Path(".splitaudit/watch-benchmark"))
    args = parser.parse_args()
    workdir = args.workdir.resolve() / time.strftime("%Y%m%dT%H%M%S")
    runs = [("stock", 180.0)] * args.stock_runs + [("patched", args.patched_seconds)] * args.patched_runs
    for rate in (int(r) for r in args.rates.split(",")):
        settings = ScenarioSettings(records=args.records, records_per_second=rate)
        # A stack per pace: every job loads the pipeline's classes anew, and a TaskManager's metaspace holds
        # about a dozen jobs' worth.
        with Stack(workdir / f"stack-{rate}").running(Progress()) as stack:
            for index, (variant, seconds) in enumerate(runs):
                case = WatchedCase(
                    stack, workdir / f"{rate}-{index}-{variant}", pipeline_jar(variant), variant, settings
                )
                result = run_watched_restore(
                    case, on_error=args.on_error, watch_seconds=seconds, probe=args.probe, interval=args.interval
                )
                load = round(os.getloadavg()[0], 1)
                line = {"rate": rate, "probe": args.probe, "interval": args.interval, "load": load}
                print(json.dumps(line | result.to_json()), flush=True)


if __name__ == "__main__":
    main()
