"""Benchmark the audit on small work, start-up included: what a user waits for on a 10,000-row sink and on a
savepoint alone.

    .venv/bin/python benchmarks/spark_small.py [--repeat 5] [--master local[2]] [--baseline-cli PATH]

Each figure is the median wall time of --repeat cold `splitaudit --json audit` processes:
1. a 10,000-row Parquet sink (topic t, partitions 0..3, offsets 0..2,499 each, every offset once: clean);
2. the savepoint-only audit of a real stock restore (fixtures/beam_flink_source: restore_stock_after against
   restore_stock_before, --partitions 4): no findings.
With --baseline-cli (another checkout's `splitaudit`, e.g. before a change) the same commands run with it in the
same run, and the findings of both must be identical. Prints a table and writes benchmarks/out/spark_small.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "out"
BEAM = REPO / "fixtures" / "beam_flink_source"
ROWS, PARTITIONS = 10_000, 4


def write_sink(folder: Path) -> Path:
    """The clean 10,000-row sink: every offset of every partition exactly once."""
    per_partition = ROWS // PARTITIONS
    table = pa.table(
        {
            "topic": ["t"] * ROWS,
            "partition": pa.array([p for p in range(PARTITIONS) for _ in range(per_partition)], pa.int32()),
            "offset": pa.array([o for _ in range(PARTITIONS) for o in range(per_partition)], pa.int64()),
        }
    )
    sink = folder / "sink"
    sink.mkdir()
    pq.write_table(table, sink / "part-0.parquet")
    return sink


def timed(command: list[str], repeat: int) -> tuple[float, dict[str, Any]]:
    """Median wall time of `repeat` runs, and the JSON document of the last (findings, summary)."""
    times, document = [], {}
    for _ in range(repeat):
        started = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=command_dir)
        times.append(time.perf_counter() - started)
        if result.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)} failed ({result.returncode}): {result.stdout}{result.stderr}")
        document = json.loads(result.stdout)
    return statistics.median(times), document


command_dir = Path(tempfile.mkdtemp(prefix="splitaudit-bench-"))  # audit logs land in .splitaudit/logs/ here


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--baseline-cli", type=Path, help="another splitaudit executable to time side by side")
    options = parser.parse_args()
    sink = write_sink(command_dir)
    cases = {
        f"sink audit, {ROWS:,} rows": ["audit", "--sink", str(sink), "--master", options.master],
        "savepoint-only audit": [
            "audit",
            "--savepoint",
            str(BEAM / "restore_stock_after"),
            "--before",
            str(BEAM / "restore_stock_before"),
            "--partitions",
            "4",
            "--master",
            options.master,
        ],
    }
    clis = {"this checkout": REPO / ".venv" / "bin" / "splitaudit"}
    if options.baseline_cli is not None:
        clis["baseline"] = options.baseline_cli
    results: dict[str, Any] = {}
    print(f"{'case':32} {'cli':14} {'median s':>9} {'findings':>9}")
    for case, args in cases.items():
        documents = {}
        for name, cli in clis.items():
            seconds, document = timed([str(cli), "--json", *args], options.repeat)
            documents[name] = {key: document[key] for key in ("summary", "findings")}
            results.setdefault(case, {})[name] = {"median_s": seconds, "findings": len(document["findings"])}
            print(f"{case:32} {name:14} {seconds:9.2f} {len(document['findings']):9}")
        if len(documents) == 2:
            same = documents["this checkout"] == documents["baseline"]
            results[case]["same_findings"] = same
            ratio = results[case]["baseline"]["median_s"] / results[case]["this checkout"]["median_s"]
            results[case]["ratio"] = ratio
            print(f"{'':32} baseline / this checkout: {ratio:.1f}x, same findings: {same}")
            if not same:
                raise SystemExit(f"{case}: the findings differ: {documents}")
    OUT.mkdir(exist_ok=True)
    (OUT / "spark_small.json").write_text(json.dumps({"repeat": options.repeat, **results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
