"""The `--json` documents of every result, byte for byte: keys, their order, and how values are written.

Each result dataclass has `to_json() -> dict[str, Any]`; these pin what those documents are (the docs'
contracts), so a change of how a document is built cannot change what a script reading it sees.
"""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import splitaudit
import splitaudit_lab
from splitaudit.audit.checks.findings import (
    AssignmentMatrix,
    Finding,
    Findings,
    Holder,
    PartitionAssignment,
    PartitionCoverage,
    SinkFile,
    Summary,
)
from splitaudit.guard.partitions import HeldPartition, PendingPartition
from splitaudit.guard.positions import PartitionPositions
from splitaudit.guard.results import (
    GuardReport,
    JobEnd,
    RestFault,
    SourceFacts,
    WatchAttempt,
    WatchEvent,
    WatchReport,
    WatchTimeline,
)
from splitaudit.guard.tally import PartitionTally
from splitaudit.guard.twin import TwinStart
from splitaudit.patch.jar import JarFacts
from splitaudit.patch.results import PatchReport, ReplacedEntry
from splitaudit.progress import TimedStep
from splitaudit.splits.beam import ConsumerConfig, KafkaIORead
from splitaudit_lab.scenario.results import DemoReport, PartitionCounts, ScenarioReport
from splitaudit_lab.stack.results import ComponentState, ServiceStatus, SetupReport, SmokeReport, StackStatus

PACKAGE = Path(splitaudit.__file__).parent
LAB = Path(splitaudit_lab.__file__).parent


def _same(document: dict[str, Any], expected: dict[str, Any]) -> None:
    """Equal as the bytes `JsonOutput` prints: insertion order counts."""
    assert json.dumps(document, indent=2) == json.dumps(expected, indent=2)


FINDINGS = Findings(
    summary=Summary(duplicate_records=3, missing_records=2, double_assigned_partitions=1),
    findings=(
        Finding("double_assignment", "error", "t", 0, 3, ((5, 7),), False, ({"offset": 5},), "x", "inferred", "e"),
        Finding("partition_unassigned", "error", "t", 2, 0),
    ),
    coverage=(PartitionCoverage("t", 0, 10, 7, 0, 8, 2),),
    notes=("dense offsets assumed",),
    ledger=(SinkFile("w-a.json", "*.json", 1000, 2000, 0, True, 0, 1, 42, 3.5, 7, True),),
    assignment=(
        AssignmentMatrix(
            "kafka-source",
            2,
            "--partitions",
            (
                PartitionAssignment("t", 0, (Holder(0, "t-0", 9), Holder(None, "t-0", None))),
                PartitionAssignment("t", 2, ()),
            ),
        ),
    ),
)

FINDINGS_JSON = {
    "summary": {
        "duplicate_records": 3,
        "missing_records": 2,
        "double_assigned_partitions": 1,
        "missing_partitions": 0,
        "rewound_partitions": 0,
    },
    "findings": [
        {
            "kind": "double_assignment",
            "severity": "error",
            "topic": "t",
            "partition": 0,
            "count": 3,
            "offset_ranges": [[5, 7]],
            "ranges_truncated": False,
            "sample": [{"offset": 5}],
            "detail": "x",
            "classified_by": "inferred",
            "evidence": "e",
        },
        {
            "kind": "partition_unassigned",
            "severity": "error",
            "topic": "t",
            "partition": 2,
            "count": 0,
            "offset_ranges": [],
            "ranges_truncated": False,
            "sample": [],
            "detail": "",
            "classified_by": None,
            "evidence": "",
        },
    ],
    "coverage": [
        {
            "topic": "t",
            "partition": 0,
            "rows": 10,
            "distinct": 7,
            "first_offset": 0,
            "last_offset": 8,
            "missing": 2,
            "duplicates": 3,
        }
    ],
    "notes": ["dense offsets assumed"],
    "assignment": [
        {
            "operator": "kafka-source",
            "subtasks": 2,
            "partitions_from": "--partitions",
            "partitions": [
                {
                    "cluster": None,
                    "topic": "t",
                    "partition": 0,
                    "status": "double",
                    "holders": [
                        {"subtask": 0, "split_id": "t-0", "next_offset": 9},
                        {"subtask": None, "split_id": "t-0", "next_offset": None},
                    ],
                },
                {"cluster": None, "topic": "t", "partition": 2, "status": "missing", "holders": []},
            ],
        }
    ],
    "ledger": [
        {
            "path": "w-a.json",
            "family": "*.json",
            "window_start": 1000,
            "window_end": 2000,
            "pane": 0,
            "pane_last": True,
            "shard": 0,
            "shards": 1,
            "size": 42,
            "modified": 3.5,
            "rows": 7,
            "rewritten": True,
        }
    ],
}


def test_audit_document() -> None:
    _same(FINDINGS.to_json(), FINDINGS_JSON)


def test_stack_documents() -> None:
    _same(
        SetupReport(
            "/s",
            (
                ComponentState("flink", "1.19.3", "installed", "/s/flink", 9.5, 231973081),
                ComponentState("spark-kafka", "4.2.0", "skipped", "/s/spark", 0.0, reason="pyspark is not installed"),
            ),
        ).to_json(),
        {
            "stack_home": "/s",
            "downloaded_bytes": 231973081,
            "components": [
                {
                    "name": "flink",
                    "version": "1.19.3",
                    "state": "installed",
                    "path": "/s/flink",
                    "seconds": 9.5,
                    "downloaded_bytes": 231973081,
                    "reason": None,
                },
                {
                    "name": "spark-kafka",
                    "version": "4.2.0",
                    "state": "skipped",
                    "path": "/s/spark",
                    "seconds": 0.0,
                    "downloaded_bytes": 0,
                    "reason": "pyspark is not installed",
                },
            ],
        },
    )
    _same(
        StackStatus("/w", (ServiceStatus("kafka", 12, True, "127.0.0.1:9092", "ok"),)).to_json(),
        {
            "workdir": "/w",
            "up": True,
            "services": [{"name": "kafka", "pid": 12, "alive": True, "address": "127.0.0.1:9092", "detail": "ok"}],
        },
    )
    _same(
        SmokeReport("/r", "t", {0: 5, 1: 6}, "j0", "/sp", "j1", "/sp", (TimedStep("run", 1.5, "ok"),)).to_json(),
        {
            "run_dir": "/r",
            "topic": "t",
            "records_per_partition": {"0": 5, "1": 6},
            "job_id": "j0",
            "savepoint_path": "/sp",
            "restored_job_id": "j1",
            "restored_from": "/sp",
            "steps": [{"name": "run", "seconds": 1.5, "result": "ok"}],
        },
    )


def test_patch_document() -> None:
    report = PatchReport(
        "in.jar",
        "out.jar",
        "2.62.0",
        "beam-runners-flink-1.19",
        None,
        "p.jar",
        10,
        (ReplacedEntry("a/B.class", "aa", 1, "bb", 2),),
        ("a/C.class",),
    )
    _same(
        report.to_json(),
        {
            "in_jar": "in.jar",
            "out_jar": "out.jar",
            "beam_version": "2.62.0",
            "flink_runner": "beam-runners-flink-1.19",
            "bundled_flink": None,
            "patch_classes_from": "p.jar",
            "entries_total": 10,
            "replaced": [
                {
                    "name": "a/B.class",
                    "original_sha256": "aa",
                    "original_size": 1,
                    "patched_sha256": "bb",
                    "patched_size": 2,
                }
            ],
            "added": ["a/C.class"],
            "entries_kept": 9,
        },
    )


def test_scenario_and_demo_documents() -> None:
    scenario = ScenarioReport(
        variant="stock",
        restart="savepoint",
        continuous=False,
        parallelism=2,
        restore_parallelism=3,
        jar="s.jar",
        run_dir="/r",
        topics=("t",),
        job_id_before="j0",
        job_id_after="j1",
        savepoint_before="/sp0",
        savepoint_after="/sp1",
        sink_path="/sink",
        sink_format="json",
        expected_records=20,
        records_per_second=10.0,
        partitions=(PartitionCounts("t", 0, 10, 13, 3, 0, 3, 0), PartitionCounts("t", 1, 10, 10, 0, 0, 0, 0)),
        steps=(TimedStep("restore", 2.0, "job j1"),),
        audit=FINDINGS,
    )
    document = {
        "variant": "stock",
        "restart": "savepoint",
        "continuous": False,
        "parallelism": 2,
        "restore_parallelism": 3,
        "jar": "s.jar",
        "run_dir": "/r",
        "topics": ["t"],
        "job_id_before": "j0",
        "job_id_after": "j1",
        "savepoint_before": "/sp0",
        "savepoint_after": "/sp1",
        "sink_path": "/sink",
        "sink_format": "json",
        "expected_records": 20,
        "records_per_second": 10.0,
        "partitions": [
            {
                "topic": "t",
                "partition": p,
                "expected_records": 10,
                "sink_rows": rows,
                "duplicate_rows": dup,
                "missing_offsets": 0,
                "double_read_offsets": dup,
                "replayed_offsets": 0,
            }
            for p, rows, dup in ((0, 13, 3), (1, 10, 0))
        ],
        "steps": [{"name": "restore", "seconds": 2.0, "result": "job j1"}],
        "audit": FINDINGS_JSON,
        "sink_rows": 23,
        "duplicate_rows": 3,
        "missing_offsets": 0,
        "double_read_offsets": 3,
        "replayed_offsets": 0,
    }
    _same(scenario.to_json(), document)
    demo = {"run_dir": "/d", "seconds": 60.0, "as_expected": False, "stock": document, "patched": document}
    _same(DemoReport("/d", 60.0, scenario, scenario).to_json(), {**demo, "added_partitions": 0, "upstream_fix": None})
    _same(
        DemoReport("/d", 60.0, scenario, scenario, 2, scenario).to_json(),
        {**demo, "added_partitions": 2, "upstream_fix": document},
    )


def test_documents_come_from_to_json_only() -> None:
    # One convention: a result's JSON is its `to_json()`, which names every key; `asdict` and `__dict__` would
    # put whatever fields a class has into the contract. The pid file's record is a file format, not a result.
    allowed = {("splitaudit_lab/stack/process.py", "__dict__")}
    found = set()
    for path in sorted([*PACKAGE.rglob("*.py"), *LAB.rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            name = None
            if isinstance(node, ast.Attribute) and node.attr in ("__dict__", "asdict"):
                name = node.attr
            elif isinstance(node, ast.Name) and node.id == "asdict":
                name = node.id
            elif isinstance(node, ast.ImportFrom) and any(a.name == "asdict" for a in node.names):
                name = "asdict"
            if name is not None:
                root = PACKAGE.parent if path.is_relative_to(PACKAGE) else LAB.parent
                found.add((str(path.relative_to(root)), name))
    assert found == allowed


def test_guard_and_watch_documents() -> None:
    jar = JarFacts("job.jar", "2.62.0", "beam-runners-flink-1.19", True, False, False, False, True)
    finding = Finding("restore_rereads_partition", "error", "t", 0, 3, ((5, 7),), detail="x")
    spec = KafkaIORead(
        "org.apache.beam.sdk.io.kafka.AutoValue_KafkaIO_Read",
        ConsumerConfig(
            (("auto.offset.reset", "earliest"), ("group.id", "g")), (("sasl.jaas.config", "java.lang.String"),)
        ),
        None,
        True,
        None,
    )
    source = SourceFacts(
        "kafka-read", 2, ("beam_flink_source",), (HeldPartition("t", 0, 5),), (PendingPartition("t", 1, 3),), spec
    )
    twin = TwinStart(
        "t", 0, 5, 5, "committed_offset", "committed_offset", "group.id g has committed offset 5", ((5, 7),)
    )
    guard = GuardReport("sp/_metadata", jar, "127.0.0.1:9092", None, (source,), (finding,), ("n",), (twin,))
    finding_json = finding.to_json()
    _same(
        guard.to_json(),
        {
            "safe": False,
            "line": "splitaudit-guard: UNSAFE errors=1 kinds=restore_rereads_partition savepoint=sp/_metadata "
            "jar=job.jar",
            "savepoint": "sp/_metadata",
            "jar": {
                "path": "job.jar",
                "beam_version": "2.62.0",
                "flink_runner": "beam-runners-flink-1.19",
                "flink_source": True,
                "upstream_fix": False,
                "splitaudit_patch": False,
                "discovery": False,
                "rereads_restored_splits": True,
                "finalizes_checkpoints": True,
            },
            "bootstrap": "127.0.0.1:9092",
            "parallelism": None,
            "sources": [
                {
                    "operator": "kafka-read",
                    "parallelism": 2,
                    "families": ["beam_flink_source"],
                    "partitions": [{"topic": "t", "partition": 0, "next_offset": 5}],
                    "pending": [{"topic": "t", "partition": 1, "subtask": 3}],
                    "spec": {
                        "java_class": "org.apache.beam.sdk.io.kafka.AutoValue_KafkaIO_Read",
                        "consumer_config": {
                            "values": {"auto.offset.reset": "earliest", "group.id": "g"},
                            "not_shown": {"sasl.jaas.config": "java.lang.String"},
                        },
                        "offset_consumer_config": None,
                        "commit_offsets_in_finalize_enabled": True,
                        "start_read_time": None,
                    },
                }
            ],
            "findings": [finding_json],
            "twins": [
                {
                    "topic": "t",
                    "partition": 0,
                    "restored_from": 5,
                    "twin_start": 5,
                    "start_is": "committed_offset",
                    "decided_by": "committed_offset",
                    "fact": "group.id g has committed offset 5",
                    "read_twice": [[5, 7]],
                    "read_twice_count": 3,
                    "after_restore": True,
                }
            ],
            "notes": ["n"],
        },
    )
    timeline = WatchTimeline(listed=0.5, running=1.0, read=1.5, finding=2.25, ended=3.0)
    events = (WatchEvent(2.25, finding),)
    end = JobEnd("finished", "FINISHED")
    tally = (PartitionTally("t", 0, 1000, 500, True), PartitionTally("t", 1, 700, 200, False, "still reading"))
    fault = RestFault(
        "GET /jobs/j1", "HTTP 500: Internal server error. (java.util.concurrent.CancellationException)", 2, "trace"
    )
    attempts = (WatchAttempt(0, 0.6, "restored", 2), WatchAttempt(1, 2.0, "rescale", 4))
    watch = WatchReport("j1", "file:/sp", 3, 4.5, events, "stop", "file:/sp2", end, timeline, tally, (fault,), attempts)
    positions = (PartitionPositions("t", 2, None, None, None, (0, 49), "not_read"),)
    _same(
        positions[0].to_json(),
        {
            "topic": "t",
            "partition": 2,
            "restored": None,
            "last_read": None,
            "read": None,
            "expected": [0, 49],
            "verdict": "not_read",
        },
    )
    assert replace(watch, positions=positions).to_json()["positions"] == [positions[0].to_json()]
    _same(
        watch.to_json(),
        {
            "line": "splitaudit-watch: ERROR kinds=restore_rereads_partition after=2.25s action=stop state=finished "
            "job=j1",
            "job": "j1",
            "restored_from": "file:/sp",
            "polls": 3,
            "seconds": 4.5,
            "events": [{"seconds": 2.25, **finding_json}],
            "action": "stop",
            "savepoint": "file:/sp2",
            "job_state": "FINISHED",
            "end": {"phase": "finished", "state": "FINISHED", "reason": None},
            "findings": [finding_json],
            "tally": [
                {"topic": "t", "partition": 0, "read": 1000, "read_twice": 500, "exact": True, "why": None},
                {"topic": "t", "partition": 1, "read": 700, "read_twice": 200, "exact": False, "why": "still reading"},
            ],
            "positions": [],
            "rest_faults": [
                {
                    "call": "GET /jobs/j1",
                    "answer": "HTTP 500: Internal server error. (java.util.concurrent.CancellationException)",
                    "times": 2,
                }
            ],
            "attempts": [
                {"number": 0, "seconds": 0.6, "cause": "restored", "parallelism": 2},
                {"number": 1, "seconds": 2.0, "cause": "rescale", "parallelism": 4},
            ],
            "timeline": {"listed": 0.5, "running": 1.0, "read": 1.5, "finding": 2.25, "ended": 3.0},
        },
    )
