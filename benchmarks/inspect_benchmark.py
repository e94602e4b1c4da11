"""Benchmark `splitaudit inspect` against Flink's own State Processor API.

    .venv/bin/python benchmarks/inspect_benchmark.py [--parallelism 128] [--repeat 5] [--baseline-cli PATH]
        [--skip-state-processor]

1. `inspect` (in-process, median of --repeat runs) on every fixture under fixtures/*/.
2. A savepoint of a real NumberSequenceSource job with high parallelism (made once by the fixture job, chained,
   on a Flink 1.19.3 MiniCluster, kept in .stack/bench/), read three ways in the same run:
   - `inspect_savepoint` in-process, and the `splitaudit inspect --json` CLI as a fresh process;
   - `StateProcessorRead.java` (beam_pipelines/java/benchmarks): `SavepointReader.readListState(forUid,
     "SourceReaderState", byte[])` with flink-state-processor-api 1.19.1 (the newest 1.19 release on Maven
     Central here) on the 1.19.3 distribution, as a fresh JVM.
   Both sides compute the number of splits and the sum of their remaining values; they must agree. Every
   process side is the median of --repeat cold runs. `splitaudit --help` is timed the same way (a fresh process
   each run). --skip-state-processor leaves the JVM side out (no Maven, no JVM: the CLI's own figures only).
3. With --baseline-cli (another checkout's `splitaudit`, e.g. before a change), its `--json inspect` of the same
   savepoint, timed the same way in the same run, and whether it prints the same document.
Prints a table and writes benchmarks/out/results.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fixtures.generate_flink import Case, compile_job, java_opts, run_case, snapshot_dir  # noqa: E402
from splitaudit.home import flink_home, state_processor_api  # noqa: E402
from splitaudit.savepoint_view import SavepointView, inspect_savepoint  # noqa: E402

FLINK = "1.19.3"
READER_SOURCE = REPO / "beam_pipelines/java/benchmarks/src/main/java/dev/splitaudit/benchmarks/StateProcessorRead.java"
OUT = REPO / "benchmarks" / "out"


def median_seconds(action: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def checksum(view: SavepointView, uid: str) -> tuple[int, int]:
    """(number of splits, sum of to - from + 1) of the source with this uid."""
    source = next(op.source for op in view.operators if op.uid == uid)
    assert source is not None
    splits = [split.state.to_json() for split in source.reader_splits]
    return len(splits), sum(s["to"] - s["from"] + 1 for s in splits)


def high_parallelism_savepoint(parallelism: int) -> Path:
    target = REPO / ".stack" / "bench" / f"p{parallelism}"
    existing = sorted(target.glob("savepoints/savepoint-*"))
    if existing:
        return existing[0]
    home = flink_home(FLINK)
    classes = compile_job(home, REPO / ".stack" / "fixture-jobs" / FLINK)
    case = Case(
        f"bench-p{parallelism}",
        "savepoint-CANONICAL",
        parallelism,
        # Every slot in one MiniCluster TaskManager; the job chained (a negative slow-pass delay: no parallelism²
        # network channels) and its readers asleep 100 ms per record, so a thousand of them leave the cores free.
        {
            "taskmanager.numberOfTaskSlots": str(parallelism),
            # Deploying a thousand subtasks on 2 busy cores outlasts the default RPC and heartbeat timeouts.
            "pekko.ask.timeout": "300 s",
            "heartbeat.timeout": "600000",
            "heartbeat.rpc-failure-threshold": "-1",
        },
        # Every subtask must be running before the savepoint: deploying 1,024 takes minutes on 2 busy cores.
        slow_sink_millis=-100,
        wait_millis=max(20_000, parallelism * 250),
    )
    target.mkdir(parents=True, exist_ok=True)
    job = run_case(FLINK, home, classes, case, target)
    snapshot, _ = snapshot_dir(target, case, job)
    return snapshot


def state_processor_command(
    source: Path, build: Path, main_class: str, *args: str, sources: tuple[Path, ...] = ()
) -> list[str]:
    """A fresh JVM running `main_class` of `source` and `sources` (compiled into `build` against the Flink
    distribution and flink-state-processor-api, which setup downloads: stack component `state-processor-api`) with
    `args`."""
    jar = state_processor_api()
    if not jar.is_file():
        raise SystemExit(f"{jar} is missing: `make setup` downloads it (stack component state-processor-api)")
    home = flink_home(FLINK)
    classes = compile_job(home, build, (source, *sources), str(jar))
    return ["java", *java_opts(home), "-cp", f"{classes}:{home}/lib/*:{jar}", main_class, *args]


def state_processor_read(snapshot: Path, uid: str, repeat: int) -> tuple[float, dict[str, Any]]:
    command = state_processor_command(
        READER_SOURCE,
        REPO / ".stack" / "bench" / "state-processor",
        "dev.splitaudit.benchmarks.StateProcessorRead",
        str(snapshot),
        uid,
    )
    outputs = []
    wall = median_seconds(
        lambda: outputs.append(subprocess.run(command, check=True, capture_output=True, text=True).stdout), repeat
    )
    return wall, json.loads(outputs[-1].strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parallelism", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline-cli", type=Path, help="another splitaudit executable to time side by side")
    parser.add_argument("--skip-state-processor", action="store_true", help="time splitaudit only, no JVM")
    options = parser.parse_args()
    results: dict[str, Any] = {"fixtures": {}}

    print(f"{'fixture':55} {'inspect ms':>10}")
    for expected in sorted(
        [*REPO.glob("fixtures/flink/*/expected.json"), *REPO.glob("fixtures/kafka/*/expected.json")]
    ):
        snapshot = expected.parent / json.loads(expected.read_text())["snapshot_dir"]
        seconds = median_seconds(lambda s=snapshot: inspect_savepoint(str(s)), options.repeat)
        results["fixtures"][expected.parent.name] = seconds
        print(f"{expected.parent.name:55} {seconds * 1000:10.2f}")

    snapshot = high_parallelism_savepoint(options.parallelism)
    size = sum(p.stat().st_size for p in snapshot.rglob("*") if p.is_file())
    in_process = median_seconds(lambda: inspect_savepoint(str(snapshot)), options.repeat)
    cli_command = [str(REPO / ".venv" / "bin" / "splitaudit"), "--json", "inspect", str(snapshot)]
    cli = median_seconds(lambda: subprocess.run(cli_command, check=True, capture_output=True), options.repeat)
    help_command = [str(REPO / ".venv" / "bin" / "splitaudit"), "--help"]
    help_cli = median_seconds(lambda: subprocess.run(help_command, check=True, capture_output=True), options.repeat)
    ours = checksum(inspect_savepoint(str(snapshot), uids=["seq-source"]), "seq-source")
    results["high_parallelism"] = {
        "parallelism": options.parallelism,
        "snapshot": str(snapshot),
        "bytes": size,
        "splits": ours[0],
        "remaining_values": ours[1],
        "inspect_in_process_s": in_process,
        "inspect_cli_s": cli,
        "help_cli_s": help_cli,
    }
    high = results["high_parallelism"]
    print(
        f"\nparallelism {options.parallelism}: {ours[0]} splits, {size} bytes (remaining values {ours[1]})\n"
        f"  splitaudit inspect in-process {in_process * 1000:.1f} ms, CLI process {cli * 1000:.0f} ms; "
        f"`splitaudit --help` {help_cli * 1000:.0f} ms"
    )
    if not options.skip_state_processor:
        jvm_wall, jvm = state_processor_read(snapshot, "seq-source", options.repeat)
        if (jvm["splits"], jvm["remaining"]) != ours:
            raise SystemExit(f"the two readers disagree: State Processor API {jvm}, splitaudit {ours}")
        high |= {
            "state_processor_jvm_wall_s": jvm_wall,
            "state_processor_in_jvm_s": jvm["jvm_millis"] / 1000,
            "ratio_wall": jvm_wall / cli,
            "ratio_in_process": jvm["jvm_millis"] / 1000 / in_process,
        }
        print(
            f"  both readers agree; State Processor API in JVM {high['state_processor_in_jvm_s'] * 1000:.0f} ms, "
            f"JVM process {jvm_wall * 1000:.0f} ms\n"
            f"  ratio (State Processor API / splitaudit): {high['ratio_wall']:.1f}x process wall, "
            f"{high['ratio_in_process']:.0f}x in-process"
        )
    if options.baseline_cli is not None:
        baseline_command = [str(options.baseline_cli), "--json", "inspect", str(snapshot)]
        baseline = median_seconds(
            lambda: subprocess.run(baseline_command, check=True, capture_output=True), options.repeat
        )
        same = (
            subprocess.run(baseline_command, check=True, capture_output=True).stdout
            == subprocess.run(cli_command, check=True, capture_output=True).stdout
        )
        high |= {"baseline_cli": str(options.baseline_cli), "baseline_cli_s": baseline, "baseline_same_output": same}
        print(
            f"  baseline {options.baseline_cli}: CLI process {baseline * 1000:.0f} ms "
            f"({baseline / cli:.1f}x this checkout's), same JSON document: {same}"
        )
    OUT.mkdir(exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
