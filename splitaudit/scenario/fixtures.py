"""Regenerate fixtures/beam_flink_source/: the savepoints of a real stock and a real patched restore scenario.

    python -m splitaudit.scenario.fixtures [--records N] [--workdir DIR]

Brings a stack up (in DIR, default a new folder under .splitaudit/runs), runs the restore scenario with the
stock and with the patched job jar, and copies the four savepoints (stock/patched, before/after the restore)
to `fixtures/beam_flink_source/restore_<variant>_<phase>/`, each with an expected.json that says what a
reader must find in it and what the run's sink held.

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
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from splitaudit.report.progress import ConsoleProgress
from splitaudit.scenario.restore import ScenarioSettings, pipeline_jar, run_restore_scenario
from splitaudit.scenario.results import ScenarioReport
from splitaudit.stack.home import FLINK_VERSION, REPO_ROOT
from splitaudit.stack.stack import Stack

FIXTURES = REPO_ROOT / "fixtures" / "beam_flink_source"
BEAM_VERSION = "2.62.0"
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
                "state": {"pending_splits": {}},
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


def main() -> None:
    """Run both scenarios on one stack and rewrite the four fixtures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000, help="records before and again after the restore")
    parser.add_argument("--workdir", type=Path, default=None, help="run directory (must not exist)")
    arguments = parser.parse_args()
    settings = ScenarioSettings(records=arguments.records)
    run_dir = (
        arguments.workdir or Path(".splitaudit/runs") / time.strftime("fixtures-%Y%m%dT%H%M%SZ", time.gmtime())
    ).resolve()
    progress = ConsoleProgress()
    stack = Stack(run_dir / "stack")
    stack.up(progress)
    try:
        for variant in ("stock", "patched"):
            report = run_restore_scenario(stack, run_dir / variant, pipeline_jar(variant), variant, progress, settings)
            for phase, savepoint in (("before", report.savepoint_before), ("after", report.savepoint_after)):
                destination = FIXTURES / f"restore_{variant}_{phase}"
                write_fixture(savepoint, destination, expected_document(report, phase, settings))
                progress.info(f"{destination} <- {savepoint}")
    finally:
        stack.down(progress)


if __name__ == "__main__":
    main()
