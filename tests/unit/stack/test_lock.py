"""The stack lock: the one the package carries, what a valid entry is, a component's key, and what changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from splitaudit.errors import ExternalError
from splitaudit_lab.stack.lock import LockedFile, StackLock, differences, flink_component, read_lock

SHA = "ab" * 32
KAFKA = {"maven": "org.apache.kafka:kafka_2.13:3.9.1", "path": "org/apache/kafka/kafka_2.13/3.9.1/kafka_2.13-3.9.1.jar"}


def test_the_packaged_lock_names_every_component_setup_downloads() -> None:
    lock = read_lock()
    assert list(lock.components) == [
        "flink",
        "flink-1.16.3",
        "flink-1.20.3",
        "flink-2.0.1",
        "flink-2.1.1",
        "flink-2.2.1",
        "kafka-broker",
        "spark-kafka",
        "spark-avro",
        "s3proxy",
        "flink-s3-fs-hadoop",
        "flink-test-corpus",
        "state-processor-api",
        "demo-pipeline",
    ]
    # the reference pipeline's dependencies in Maven's resolution order (its shade order), Beam's SDK first
    demo = lock.files("demo-pipeline")
    assert (len(demo), demo[0].maven) == (158, "org.apache.beam:beam-sdks-java-core:2.62.0")
    assert not [f for f in demo if str(f.maven).startswith(("dev.splitaudit:", "org.apache.flink:", "org.slf4j:"))]
    assert [f.name for f in lock.files("flink")] == [
        "apache-flink-libraries-1.19.3.tar.gz",
        "apache-flink-1.19.3.tar.gz",
    ]
    assert [f.name for f in lock.files(flink_component("1.16.3"))] == [
        "apache-flink-libraries-1.16.3.tar.gz",
        "apache-flink-1.16.3.tar.gz",
    ]
    # the KafkaSource matrix's: from 2.0.1 on PyPI names the sdists as PEP 625 asks
    assert [f.name for f in lock.files(flink_component("1.20.3"))] == [
        "apache-flink-libraries-1.20.3.tar.gz",
        "apache-flink-1.20.3.tar.gz",
    ]
    assert [f.name for v in ("2.0.1", "2.1.1", "2.2.1") for f in lock.files(flink_component(v))] == [
        name
        for v in ("2.0.1", "2.1.1", "2.2.1")
        for name in (f"apache_flink_libraries-{v}.tar.gz", f"apache_flink-{v}.tar.gz")
    ]
    assert sorted(f.name for f in lock.files("spark-kafka")) == [
        "commons-pool2-2.13.1.jar",
        "kafka-clients-3.9.2.jar",
        "spark-sql-kafka-0-10_2.13-4.2.0.jar",
        "spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
    ]
    assert [f.maven for f in lock.files("flink-s3-fs-hadoop")] == ["org.apache.flink:flink-s3-fs-hadoop:1.19.3"]
    # Flink's test jars, one pom per release, the classifier after the version
    assert [f.maven for f in lock.files("flink-test-corpus")] == [
        "org.apache.flink:flink-core:1.19.1:tests",
        "org.apache.flink:flink-scala_2.12:1.19.1:tests",
        "org.apache.flink:flink-tests:1.19.1:tests",
        "org.apache.flink:flink-tests:1.20.1:tests",
        "org.apache.flink:flink-tests:2.0.0:tests",
    ]
    assert [f.maven for f in lock.files("state-processor-api")] == ["org.apache.flink:flink-state-processor-api:1.19.1"]


def test_a_lock_survives_its_json(tmp_path: Path) -> None:
    lock = StackLock(
        {"kafka-broker": (LockedFile(7, SHA, **KAFKA),), "flink": (LockedFile(9, SHA, url="https://x/f.tar.gz"),)}
    )
    (tmp_path / "lock.json").write_text(json.dumps(lock.to_json()))
    assert read_lock(tmp_path / "lock.json") == lock
    assert lock.files("kafka-broker")[0].download_path == f"maven/{KAFKA['path']}"
    assert lock.files("flink")[0].download_path == "f.tar.gz"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"url": "https://x/f.tar.gz", "size": -1, "sha256": SHA}, "size -1 is not a byte count"),
        ({"url": "https://x/f.tar.gz", "size": 1, "sha256": "AB" * 32}, "is not 64 lowercase hex digits"),
        ({"url": "http://x/f.tar.gz", "size": 1, "sha256": SHA}, "is not https"),
        ({**KAFKA, "url": "https://x/f.jar", "size": 1, "sha256": SHA}, "exactly one of them"),
        (
            {"maven": "g:a:1", "path": "../../etc/a.jar", "size": 1, "sha256": SHA},
            "is not a file of a Maven repository",
        ),
        ({"maven": "g:a:1", "path": "/etc/a.jar", "size": 1, "sha256": SHA}, "is not a file of a Maven repository"),
        ({"maven": "g:a", "path": "g/a/1/a-1.jar", "size": 1, "sha256": SHA}, "is not a file of a Maven repository"),
    ],
)
def test_an_invalid_entry_is_refused(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ExternalError, match="not a valid stack lock: .*" + message.replace(".", r"\.")):
        StackLock.from_json({"components": {"c": [entry]}}, "lock.json")


def test_a_component_naming_one_file_twice_is_refused() -> None:
    entry = {**KAFKA, "size": 1, "sha256": SHA}
    with pytest.raises(ExternalError, match="component 'c' names one file twice"):
        StackLock.from_json({"components": {"c": [entry, entry]}}, "lock.json")


def test_the_key_changes_with_any_file_of_the_component_alone() -> None:
    kafka = LockedFile(7, SHA, **KAFKA)
    flink = (LockedFile(9, SHA, url="https://x/f.tar.gz"),)
    before = StackLock({"kafka-broker": (kafka,), "flink": flink})
    after = StackLock({"kafka-broker": (LockedFile(7, "cd" * 32, **KAFKA),), "flink": flink})
    assert before.key("kafka-broker") != after.key("kafka-broker")
    assert before.key("flink") == after.key("flink")
    with pytest.raises(ExternalError, match="has no component 'spark'"):
        before.key("spark")


def test_differences_name_each_file_added_removed_or_changed() -> None:
    kafka = LockedFile(7, SHA, **KAFKA)
    clients = LockedFile(5, SHA, maven="g:clients:1", path="g/clients/1/clients-1.jar")
    old = StackLock({"kafka-broker": (kafka, clients), "flink-1.16.3": ()})
    new = StackLock({"kafka-broker": (LockedFile(8, SHA, **KAFKA),), "s3proxy": (clients,)})

    assert differences(old, old) == []
    assert differences(old, new) == [
        "kafka-broker: - clients-1.jar",
        "kafka-broker: ~ kafka_2.13-3.9.1.jar (org.apache.kafka:kafka_2.13:3.9.1, 7 bytes, sha256 abababababab… -> "
        "org.apache.kafka:kafka_2.13:3.9.1, 8 bytes, sha256 abababababab…)",
        "flink-1.16.3: component removed",
        "s3proxy: component added (1 files)",
    ]
    assert differences(old, StackLock({"kafka-broker": (clients, kafka), "flink-1.16.3": ()})) == [
        "kafka-broker: the same files in another order"
    ]
