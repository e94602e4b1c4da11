"""`inspect`'s console tables of the real DynamicKafkaSource savepoint of fixtures/dynamic_kafka/: a cluster column
(the split id `<cluster>-<topic>-<partition>` says nothing more, so no split column), in 80 columns."""

from __future__ import annotations

import json
from typing import Any

from tests.unit.conftest import FIXTURES
from tests.unit.report.test_inspect_console import _inspect, _rows

CASE = FIXTURES / "dynamic_kafka" / "1.19.3-dynamic-kafka-3.3.0-1.19"
EXPECTED: dict[str, Any] = json.loads((CASE / "expected.json").read_text())


def test_each_partition_shows_with_its_cluster_in_the_readers_and_the_enumerators_tables() -> None:
    job = EXPECTED["job"]
    lines = _inspect(CASE / EXPECTED["sp0"]["snapshot_dir"])
    cluster, topic = job["cluster"], job["topic"]
    readers = [r for r in _rows(lines) if len(r) == 6]
    enumerator = [r for r in _rows(lines) if len(r) == 7]
    # In 80 columns long names fold: a row's first line holds the start of its cluster and topic.
    assert all(topic.startswith(r[-4]) and cluster.startswith(r[-5]) for r in readers + enumerator)
    # Subtask 0 holds p1, subtask 1 p0 and p2 (the connector's owner rule), each at the 100 records produced to it.
    assert [(*r[:2], *r[3:]) for r in readers] == [
        ("0", cluster, "1", "100", "-"),
        ("1", cluster, "0", "100", "-"),
        ("1", cluster, "2", "100", "-"),
    ]
    assert [(*r[:2], *r[4:]) for r in enumerator] == [("-", "assigned", str(p), "-", "-") for p in range(3)]
    assert not any(f"{cluster}-{topic[:5]}" in line for line in lines)  # no split column
