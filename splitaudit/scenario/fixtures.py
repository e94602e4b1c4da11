"""Regenerate the fixtures of real restore-scenario runs.

    python -m splitaudit.scenario.fixtures [--part all|savepoints|sinks] [--records N] [--workdir DIR]

Brings a stack up (in DIR, default a new folder under .splitaudit/runs) and runs the restore scenario with the
stock and with the patched job jar:

- savepoints: N records (default 20,000, the issue's scenario); the four savepoints (stock/patched,
  before/after the restore) go to `fixtures/beam_flink_source/restore_<variant>_<phase>/`, each with an
  expected.json that says what a reader must find in it and what the run's sink held;
- sinks: 200 records, so the sink stays small; the whole sink goes to
  `fixtures/beam_sink/restore_<variant>_small/sink/` with an expected.json of per-partition counts made by
  plain Python (json + Counter), independently of the pyarrow code in `splitaudit.scenario.sink`.

What the savepoints must contain follows from the scenario and from Beam 2.62.0's code: with parallelism 2
and no max parallelism, FlinkSource splits KafkaUnboundedSource into 2 splits, partitions sorted and dealt
round robin (split 0: partitions 0 and 2, split 1: 1 and 3), split i on subtask i % 2; every savepoint is
taken after every record produced so far was read, so each partition's next offset is its record count; the
enumerator has assigned everything, so its checkpoint (pending splits) is empty. In the stock savepoint
after the restore each split index still appears once: FlinkSourceReaderBase keeps one reader per split
index in its snapshot, although two readers ran. The twin is visible only in the sink.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from splitaudit.report.progress import ConsoleProgress
from splitaudit.scenario.restore import ScenarioSettings, pipeline_jar, run_restore_scenario
from splitaudit.scenario.results import ScenarioReport
from splitaudit.stack.home import BEAM_VERSION, FLINK_VERSION, REPO_ROOT
from splitaudit.stack.stack import Stack

FIXTURES = REPO_ROOT / "fixtures" / "beam_flink_source"
SINK_FIXTURES = REPO_ROOT / "fixtures" / "beam_sink"
SINK_RECORDS = 200
SOURCE_CLASS = "org.apache.beam.sdk.io.kafka.KafkaUnboundedSource"


def expected_document(report: ScenarioReport, phase: str, settings: ScenarioSettings) -> dict[str, Any]:
    """What a savepoint of `report` (phase "before" or "after" the restore) holds, and the run it came from."""
    produced_per_partition = settings.records // settings.partitions * (1 if phase == "before" else 2)
    splits = settings.parallelism  # KafkaUnboundedSource.split(parallelism) when there are more partitions
    reader_splits = [
        {
            "subtask": index % settings.parallelism,
            "serializer_version": 0,  # FlinkSourceSplit.serializer() is SerdeUtils' naive one, version 0
            "type": "beam_flink_source",
            "split": {
                "split_index": index,
                "source_class": SOURCE_CLASS,
                "topic_partitions": [
                    {"topic": report.topic, "partition": p} for p in range(index, settings.partitions, splits)
                ],
                "checkpoint": {
                    "partitions": [
                        {"topic": report.topic, "partition": p, "next_offset": produced_per_partition}
                        for p in range(index, settings.partitions, splits)
                    ]
                },
            },
        }
        for index in range(splits)
    ]
    document: dict[str, Any] = {
        "scenario": "restore",
        "variant": report.variant,
        "phase": phase,
        "beam_version": BEAM_VERSION,
        "flink_version": FLINK_VERSION,
        "kind": "savepoint",
        "savepoint_format": "CANONICAL",
        "job_id": report.job_id_before if phase == "before" else report.job_id_after,
        "topic": report.topic,
        "partitions": settings.partitions,
        "parallelism": settings.parallelism,
        "source": {
            "reader_splits": reader_splits,
            # SourceCoordinator serde version 1 (Flink 1.19), Beam SerdeUtils' naive serializer version 0.
            "enumerator": {
                "serde_version": 1,
                "serializer_version": 0,
                "type": "beam_flink_source",
                "state": {"pending": []},
            },
        },
    }
    if phase == "after":
        document["sink"] = {
            "rows": report.sink_rows,
            "expected_records": report.expected_records,
            "duplicate_rows": report.duplicate_rows,
            "missing_offsets": report.missing_offsets,
            "double_read_offsets": report.double_read_offsets,
        }
    return document


def write_fixture(savepoint_uri: str, destination: Path, expected: dict[str, Any]) -> None:
    """Copy a savepoint directory to `destination` (replacing it) and write its expected.json."""
    source = Path(urlparse(savepoint_uri).path)
    if destination.exists():
        shutil.rmtree(destination)
    shutil.copytree(source, destination)
    (destination / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def sink_expectation(sink: Path, topic: str, expected: dict[int, int]) -> dict[str, Any]:
    """Per-partition counts of a sink, computed with plain Python for an independent check of the pyarrow ones."""
    rows = [json.loads(line) for path in sorted(sink.glob("*.jsonl")) for line in path.read_text().splitlines()]
    rows = [row for row in rows if row["topic"] == topic]
    keys = Counter((row["partition"], row["offset"]) for row in rows)
    readers: dict[tuple[str, int, int, int], set[str]] = {}
    for row in rows:
        readers.setdefault((row["job_id"], row["attempt"], row["partition"], row["offset"]), set()).add(
            row["reader_id"]
        )
    partitions = {}
    for partition, records in expected.items():
        mine = {offset: count for (p, offset), count in keys.items() if p == partition}
        partitions[str(partition)] = {
            "expected_records": records,
            "sink_rows": sum(mine.values()),
            "duplicate_keys": sum(1 for count in mine.values() if count > 1),
            "duplicate_rows": sum(mine.values()) - len(mine),
            "missing_offsets": sum(1 for offset in range(records) if offset not in mine),
            "double_read_offsets": len(
                {offset for (_, _, p, offset), ids in readers.items() if p == partition and len(ids) > 1}
            ),
        }
    return {"topic": topic, "rows": len(rows), "partitions": partitions}


def main() -> None:
    """Run both scenarios on one stack and rewrite the four fixtures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("all", "savepoints", "sinks"), default="all", help="what to regenerate")
    parser.add_argument("--records", type=int, default=20_000, help="records before and again after the restore")
    parser.add_argument("--workdir", type=Path, default=None, help="run directory (must not exist)")
    arguments = parser.parse_args()
    run_dir = (
        arguments.workdir or Path(".splitaudit/runs") / time.strftime("fixtures-%Y%m%dT%H%M%SZ", time.gmtime())
    ).resolve()
    progress = ConsoleProgress()
    stack = Stack(run_dir / "stack")
    stack.up(progress)
    try:
        for variant in ("stock", "patched"):
            jar = pipeline_jar(variant)
            if arguments.part in ("all", "savepoints"):
                settings = ScenarioSettings(records=arguments.records)
                report = run_restore_scenario(stack, run_dir / variant, jar, variant, progress, settings)
                for phase, savepoint in (("before", report.savepoint_before), ("after", report.savepoint_after)):
                    destination = FIXTURES / f"restore_{variant}_{phase}"
                    write_fixture(savepoint, destination, expected_document(report, phase, settings))
                    progress.info(f"{destination} <- {savepoint}")
            if arguments.part in ("all", "sinks"):
                settings = ScenarioSettings(records=SINK_RECORDS)
                small = run_restore_scenario(stack, run_dir / f"{variant}-small", jar, variant, progress, settings)
                destination = SINK_FIXTURES / f"restore_{variant}_small"
                if destination.exists():
                    shutil.rmtree(destination)
                shutil.copytree(small.sink_path, destination / "sink")
                expected = {p.partition: p.expected_records for p in small.partitions}
                document = {"variant": variant, **sink_expectation(Path(small.sink_path), small.topic, expected)}
                (destination / "expected.json").write_text(json.dumps(document, indent=2) + "\n")
                progress.info(f"{destination} <- {small.sink_path}")
    finally:
        stack.down(progress)


if __name__ == "__main__":
    main()
