"""What restoring Flink's own KafkaSource at another parallelism does, decided by the job jar.

A FLIP-27 source reader checkpoints its splits as operator list state, one element per split; on a restore at
another parallelism Flink splits that list over the new subtasks round-robin (apache/flink flink-runtime
`RoundRobinOperatorStateRepartitioner`), so every split goes to exactly one reader, whichever the state gives it,
and the enumerator is not asked. Flink 2.2 adds `SupportsSplitReassignmentOnRecovery` (FLINK-39980,
flink-core `org.apache.flink.api.connector.source`): a source that implements it has its readers hand their
restored splits back to the enumerator, which assigns them again by its own rule. Which of the two a restore gets
is a fact of the job jar: whether the KafkaSource class it ships implements that interface (its class file names
the interface among its interfaces only then; flink-connector-kafka 5.0.0-2.2 does not). The connector's jar
records no release of its own (no pom.properties, nothing in its manifest), so the guard names the class, not a
release.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

from splitaudit.errors import InputError

KAFKA_SOURCE_CLASS = "org/apache/flink/connector/kafka/source/KafkaSource.class"
REASSIGNMENT_INTERFACE = b"org/apache/flink/api/connector/source/SupportsSplitReassignmentOnRecovery"


@dataclass(frozen=True)
class KafkaSourceJar:
    """What a job jar says about the KafkaSource it ships: whether that class implements
    SupportsSplitReassignmentOnRecovery."""

    reassigns_on_recovery: bool


def read_kafka_source_jar(jar_path: Path) -> KafkaSourceJar | None:
    """The KafkaSource facts of a job jar; None for a jar without flink-connector-kafka's KafkaSource."""
    try:
        with zipfile.ZipFile(jar_path) as jar:
            names = set(jar.namelist())
            if KAFKA_SOURCE_CLASS not in names:
                return None
            source = jar.read(KAFKA_SOURCE_CLASS)
    except (OSError, zipfile.BadZipFile) as ex:
        raise InputError(str(jar_path), None, f"not a readable jar (zip) file: {ex}") from ex
    return KafkaSourceJar(REASSIGNMENT_INTERFACE in source)


def rescale_detail(jar: KafkaSourceJar | None) -> str:
    """What the guard's `rescale` finding says of a KafkaSource restored at another parallelism: no split is
    dropped either way; who gives each reader its splits, and the jar fact that decided."""
    if jar is None:
        how = (
            "the job jar ships no KafkaSource class, so whether it reassigns splits on recovery is not known; "
            "without SupportsSplitReassignmentOnRecovery Flink hands each restored split to one reader round-robin"
        )
    elif jar.reassigns_on_recovery:
        how = (
            f"decided by the jar: its {KAFKA_SOURCE_CLASS} implements SupportsSplitReassignmentOnRecovery "
            "(Flink 2.2 on, FLINK-39980), so the readers return their restored splits to the enumerator, which "
            "assigns each again to the reader its owner rule names"
        )
    else:
        how = (
            f"decided by the jar: its {KAFKA_SOURCE_CLASS} does not implement "
            "SupportsSplitReassignmentOnRecovery (FLINK-39980), so Flink splits the readers' split state over the "
            "new subtasks round-robin, each split to exactly one reader, and the enumerator is not asked; a "
            "subtask beyond the savepoint's splits holds none until a partition is discovered"
        )
    return f"every split the savepoint holds is read once, from its offset; {how}"
