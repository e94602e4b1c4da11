"""Wall times and memory of the stack: setup (as it stands), stack up, savepoint, restore, and peak RSS.

Runs the smoke scenario in a fresh run directory while a sampler thread reads the resident memory of every
process in the stack's pid files twice a second, and prints one JSON document:

    .venv/bin/python benchmarks/stack_footprint.py [--workdir DIR]

Setup's first-run time is measured on a fresh clone instead (docs/getting-started.md), since a first run
downloads and this script should not delete anyone's .stack/.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

import psutil

from splitaudit.progress import ConsoleProgress
from splitaudit_lab.stack import install, process
from splitaudit_lab.stack.smoke import run_smoke
from splitaudit_lab.stack.stack import Stack


class RssSampler(threading.Thread):
    """Samples the summed RSS of the processes named by the stack's pid files; keeps the peak."""

    def __init__(self, stack_dir: Path) -> None:
        super().__init__(daemon=True)
        self.stack = Stack(stack_dir)
        self.peak_total = 0
        self.peak_by_name: dict[str, int] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.5):
            total = 0
            for pid_file in self.stack.pid_files():
                record = process.PidRecord.read(pid_file) if pid_file.exists() else None
                live = record.process() if record else None
                if record is None or live is None:
                    continue
                try:
                    rss = int(live.memory_info().rss)
                except psutil.NoSuchProcess:
                    continue
                total += rss
                self.peak_by_name[record.name] = max(self.peak_by_name.get(record.name, 0), rss)
            self.peak_total = max(self.peak_total, total)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path(f".splitaudit/bench/{time.strftime('%Y%m%dT%H%M%S')}"))
    args = parser.parse_args()
    progress = ConsoleProgress()

    started = time.monotonic()
    install.setup(progress)
    setup_seconds = time.monotonic() - started

    sampler = RssSampler(args.workdir.resolve() / "stack")
    sampler.start()
    report = run_smoke(args.workdir.resolve(), progress)
    sampler.stopped.set()
    sampler.join()

    steps = {step.name: round(step.seconds, 1) for step in report.steps}
    mib = 1024 * 1024
    print(
        json.dumps(
            {
                "setup_seconds_present": round(setup_seconds, 1),
                "steps_seconds": steps,
                "peak_rss_mib_total": round(sampler.peak_total / mib),
                "peak_rss_mib_by_process": {k: round(v / mib) for k, v in sampler.peak_by_name.items()},
                "run_dir": report.run_dir,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
