"""The guard on a savepoint of Flink's own KafkaSource: a partition no reader split holds is judged from the
enumerator's checkpoint, not from the jar's Beam build (a KafkaSource job has none)."""

from __future__ import annotations

from pathlib import Path

from splitaudit.audit.checks.assignment import PartitionList, check_assignment
from splitaudit.audit.checks.findings import ERROR, INFO, UNASSIGNED, Finding
from splitaudit.audit.checks.savepoint_tables import tables_of
from splitaudit.clients.kafka import PartitionOffsets
from splitaudit.guard.partitions import HeldPartition
from splitaudit.guard.predict import DISCOVERED_ON_RESTORE, Restore, enumerated_partitions, judge, source_facts
from splitaudit.guard.results import SourceFacts
from splitaudit.patch.jar import JarFacts
from splitaudit.savepoint_view import inspect_savepoint

TOPIC = "orders"
# What read_jar_facts says of a Flink-native job jar.
PLAIN = JarFacts("job.jar", None, None, False, False, False, False)
KAFKA_SOURCE = SourceFacts("cbc357ccb763df2852fee8c4fc7d55f2", 2, ("kafka",), (HeldPartition(TOPIC, 0, 100),))
BEAM_SOURCE = SourceFacts("kafka-read", 2, ("beam_flink_source",), (HeldPartition(TOPIC, 0, 100),))
UNREAD = Finding(
    UNASSIGNED, ERROR, TOPIC, 2, 0,
    detail="source cbc357ccb763df2852fee8c4fc7d55f2: in the topic but held by no reader and not pending: nothing "
    "will read it",
)  # fmt: skip
KAFKA = {(TOPIC, 0): PartitionOffsets(0, 150), (TOPIC, 2): PartitionOffsets(7, 57)}


def test_a_partition_the_enumerator_state_does_not_name_is_read_from_earliest() -> None:
    (finding,) = judge(Restore(PLAIN, [KAFKA_SOURCE], enumerated={(TOPIC, 0)}), [UNREAD], (), KAFKA)
    assert (finding.kind, finding.severity, finding.partition, finding.count, finding.offset_ranges) == (
        DISCOVERED_ON_RESTORE, INFO, 2, 50, ((7, 56),)
    )  # fmt: skip
    assert finding.detail == (
        "source cbc357ccb763df2852fee8c4fc7d55f2: decided by the savepoint, whose KafkaSourceEnumState does not name "
        "it: the KafkaSource enumerator lists the topic's partitions once when it starts, even with "
        "partition.discovery.interval.ms disabled, and assigns a partition its checkpoint does not name from "
        "earliest: read from its log start (offsets 7..56 now, 50 records)"
    )


def test_without_kafka_the_discovered_partition_has_no_count() -> None:
    (finding,) = judge(Restore(PLAIN, [KAFKA_SOURCE]), [UNREAD], (), {})
    assert (finding.kind, finding.count, finding.offset_ranges) == (DISCOVERED_ON_RESTORE, 0, ())
    assert finding.detail.endswith("read from its log start")


def test_a_partition_the_enumerator_counts_as_assigned_stays_unread() -> None:
    (finding,) = judge(Restore(PLAIN, [KAFKA_SOURCE], enumerated={(TOPIC, 0), (TOPIC, 2)}), [UNREAD], (), KAFKA)
    assert (finding.kind, finding.severity, finding.partition) == (UNASSIGNED, ERROR, 2)
    assert finding.detail.endswith(
        "; the KafkaSource enumerator's checkpoint names it as assigned, so its listing at start does not hand it "
        "out again"
    )


def test_a_beam_source_of_the_same_topic_is_judged_by_its_jar_as_before() -> None:
    (finding,) = judge(Restore(PLAIN, [BEAM_SOURCE]), [UNREAD], (), KAFKA)
    assert (finding.kind, finding.severity) == (UNASSIGNED, ERROR)
    assert finding.detail.endswith(
        "; not in the savepoint, and a job jar without Beam has no partition discovery on restore"
    )


# A savepoint the connector made (fixtures/generate_kafka.py: Flink 1.19.3, flink-connector-kafka 3.3.0-1.19, 4
# partitions at parallelism 2; its expected.json: enumerator state version 2, all 4 ASSIGNED).
FIXTURE = Path(__file__).parents[3] / "fixtures" / "kafka" / "1.19.3-kafka-3.3.0-1.19-savepoint"
FIXTURE_TOPIC = "fixture-1-19-3-1795243322"


def test_a_real_kafka_source_savepoint_grown_by_two_partitions() -> None:
    tables = tables_of(inspect_savepoint(str(FIXTURE / "savepoint-bc7ec8-6ca2e464d98e")))
    assert enumerated_partitions(tables) == {(FIXTURE_TOPIC, p) for p in range(4)}
    listed = PartitionList(frozenset((FIXTURE_TOPIC, p) for p in range(6)), "the test")
    kafka = {(FIXTURE_TOPIC, p): PartitionOffsets(0, 3000 if p < 4 else 20) for p in range(6)}
    (source,) = source_facts(tables)
    findings = judge(
        Restore(PLAIN, [source], enumerated=enumerated_partitions(tables)),
        check_assignment(tables, listed).findings,
        (),
        kafka,
    )
    assert [(f.kind, f.severity, f.partition, f.count, f.offset_ranges) for f in findings] == [
        (DISCOVERED_ON_RESTORE, INFO, 4, 20, ((0, 19),)),
        (DISCOVERED_ON_RESTORE, INFO, 5, 20, ((0, 19),)),
    ]
