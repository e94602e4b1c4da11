"""The jar fact that decides what a KafkaSource restore at another parallelism does (guard/kafka_rescale.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from splitaudit.audit.checks.findings import INFO
from splitaudit.errors import InputError
from splitaudit.guard.kafka_rescale import (
    KAFKA_SOURCE_CLASS,
    REASSIGNMENT_INTERFACE,
    KafkaSourceJar,
    read_kafka_source_jar,
    rescale_detail,
)
from splitaudit.guard.partitions import HeldPartition
from splitaudit.guard.predict import RESCALE, Restore, judge
from splitaudit.guard.results import SourceFacts
from splitaudit.patch.jar import JarFacts
from splitaudit_lab.stack.kafka_matrix import KAFKA_SOURCE_MATRIX


def _jar(path: Path, entries: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as jar:
        for name, data in entries.items():
            jar.writestr(name, data)
    return path


def test_a_kafka_source_class_naming_the_interface_reassigns_on_recovery(tmp_path: Path) -> None:
    # a class file names each interface it implements in its constant pool (CONSTANT_Class -> CONSTANT_Utf8)
    naming = _jar(tmp_path / "a.jar", {KAFKA_SOURCE_CLASS: b"\xca\xfe\xba\xbe..." + REASSIGNMENT_INTERFACE + b"..."})
    plain = _jar(
        tmp_path / "b.jar", {KAFKA_SOURCE_CLASS: b"\xca\xfe\xba\xbe...org/apache/flink/api/connector/source/Source"}
    )
    assert read_kafka_source_jar(naming) == KafkaSourceJar(True)
    assert read_kafka_source_jar(plain) == KafkaSourceJar(False)
    assert read_kafka_source_jar(_jar(tmp_path / "c.jar", {"Main.class": b""})) is None


def test_a_file_that_is_no_jar_is_refused_with_its_name(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jar"
    bad.write_bytes(b"not a zip")
    with pytest.raises(InputError, match=r"bad\.jar"):
        read_kafka_source_jar(bad)


def test_the_detail_names_the_fact_that_decided() -> None:
    assert "does not implement SupportsSplitReassignmentOnRecovery" in rescale_detail(KafkaSourceJar(False))
    assert "implements SupportsSplitReassignmentOnRecovery (Flink 2.2 on" in rescale_detail(KafkaSourceJar(True))
    assert "ships no KafkaSource class" in rescale_detail(None)


@pytest.mark.needs_build
def test_the_stack_s_kafka_source_job_does_not_reassign_splits_on_recovery() -> None:
    # connector 3.3.0-1.19, as `make setup` builds the job; 5.0.0-2.2's is asserted on the real rescale run
    # (tests/integration/test_flink_kafka_matrix.py)
    assert read_kafka_source_jar(KAFKA_SOURCE_MATRIX[0].datastream_job) == KafkaSourceJar(False)


def test_judge_says_rescale_for_a_kafka_source_at_another_parallelism_with_the_jar_fact() -> None:
    plain = JarFacts("job.jar", None, None, False, False, False, False)
    held = tuple(HeldPartition("orders", p, 100) for p in range(4))
    source = SourceFacts("cbc357ccb763df2852fee8c4fc7d55f2", 2, ("kafka",), held)
    (finding,) = judge(Restore(plain, [source], 3, kafka_jar=KafkaSourceJar(False)), (), (), {})
    assert (finding.kind, finding.severity, finding.partition, finding.count) == (RESCALE, INFO, None, 4)
    assert finding.detail.startswith(
        "source cbc357ccb763df2852fee8c4fc7d55f2: parallelism 2 in the savepoint, 3 on restore: every split the "
        "savepoint holds is read once, from its offset; decided by the jar: its "
        "org/apache/flink/connector/kafka/source/KafkaSource.class does not implement"
    )
    assert judge(Restore(plain, [source], 2, kafka_jar=KafkaSourceJar(False)), (), (), {}) == ()
