"""`splitaudit guard` on a real savepoint of stock Beam 2.62.0, the real stock and patched jars and a real broker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from splitaudit.cli import main
from splitaudit.clients import kafka
from splitaudit.errors import UsageError
from splitaudit.home import PIPELINE_JARS
from splitaudit_lab.scenario.restore import pipeline_jar
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration

SAVEPOINT = str(Path(__file__).parents[2] / "fixtures" / "beam_flink_source" / "restore_stock_before")
TOPIC = "restore-stock-3b5fcb84"  # fixtures/beam_flink_source/*/expected.json: next offset 5000 in partitions 0..3


def _guard(jar: Path, bootstrap: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        main, ["--json", "guard", "--savepoint", SAVEPOINT, "--jar", str(jar), "--bootstrap", bootstrap]
    )
    return result.exit_code, json.loads(result.stdout)


def _topic_of_8000_records(bootstrap: str) -> None:
    """The savepoint's topic, 4 partitions of offsets 0..7999 (once per stack: the tests share the broker)."""
    try:
        kafka.topic_partitions(bootstrap, TOPIC)
    except UsageError:
        kafka.create_topic(bootstrap, TOPIC, partitions=4)
        kafka.produce(bootstrap, TOPIC, partitions=4, count=32_000)


def _rows(document: dict[str, Any]) -> list[tuple[str, str, int, int, list[list[int]]]]:
    return [(f["kind"], f["severity"], f["partition"], f["count"], f["offset_ranges"]) for f in document["findings"]]


def test_guard_refuses_stock_and_lets_patched_through_also_on_a_grown_topic(stack: Stack, spark: SparkSession) -> None:
    bootstrap = stack.kafka.bootstrap
    _topic_of_8000_records(bootstrap)

    code, stock = _guard(PIPELINE_JARS["stock"], bootstrap)
    assert code == 1
    assert stock["jar"]["rereads_restored_splits"] is True
    # The savepoint's read: a group, auto.offset.reset=earliest, commitOffsetsInFinalize; this broker holds no
    # offsets of that group, so each twin starts at the log start and reads all 8,000 offsets a second time.
    # Offsets 0..4999 were read before the savepoint (its next offset is 5000): their windows, closed at the
    # savepoint, fire again in a job windowing by Kafka time.
    assert _rows(stock) == [("restore_rereads_partition", "error", p, 8000, [[0, 7999]]) for p in range(4)] + [
        ("lag", "info", p, 3000, [[5000, 7999]]) for p in range(4)
    ] + [("rereads_closed_windows", "warning", p, 5000, [[0, 4999]]) for p in range(4)]
    assert [(t["twin_start"], t["start_is"], t["decided_by"]) for t in stock["twins"]] == [
        (0, "log_start", "auto_offset_reset") for _ in range(4)
    ]
    assert (
        stock["twins"][0]["fact"]
        == "auto.offset.reset=earliest, group.id restore-stock-3b5fcb84 has no committed offset"
    )
    assert stock["line"].startswith("splitaudit-guard: UNSAFE errors=4 kinds=restore_rereads_partition savepoint=")

    code, patched = _guard(PIPELINE_JARS["patched"], bootstrap)
    assert code == 0
    assert (patched["jar"]["splitaudit_patch"], patched["jar"]["discovery"]) == (True, True)
    assert _rows(patched) == [("lag", "info", p, 3000, [[5000, 7999]]) for p in range(4)]
    assert patched["line"].startswith("splitaudit-guard: safe savepoint=")

    # Grown while the job was down: the patched enumerator discovers 4 and 5 on restore.
    kafka.grow_topic(bootstrap, TOPIC, partitions=6)
    code, grown = _guard(PIPELINE_JARS["patched"], bootstrap)
    assert code == 0
    assert _rows(grown) == [("partition_discovered_on_restore", "info", p, 0, []) for p in (4, 5)] + [
        ("lag", "info", p, 3000, [[5000, 7999]]) for p in range(4)
    ]


@pytest.mark.discovery
def test_guard_refuses_a_grown_topic_for_a_jar_without_discovery(stack: Stack, spark: SparkSession) -> None:
    # Beam 2.70.0 has the upstream fix (no twin splits) but never reads a partition added while it was down.
    bootstrap = stack.kafka.bootstrap
    _topic_of_8000_records(bootstrap)
    if len(kafka.topic_partitions(bootstrap, TOPIC)) == 4:
        kafka.grow_topic(bootstrap, TOPIC, partitions=6)
    code, grown = _guard(pipeline_jar("stock", "2.70.0"), bootstrap)
    assert code == 1
    assert (grown["jar"]["upstream_fix"], grown["jar"]["discovery"]) == (True, False)
    assert _rows(grown) == [("partition_unassigned", "error", p, 0, []) for p in (4, 5)] + [
        ("lag", "info", p, 3000, [[5000, 7999]]) for p in range(4)
    ]
    assert grown["findings"][0]["detail"].endswith("has no partition discovery on restore")
