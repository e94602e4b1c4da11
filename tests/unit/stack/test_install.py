"""Setup's bookkeeping: what makes a component stale, what a failed build tells the user, and what setup from an
installed wheel installs, skips and refuses."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from splitaudit.errors import ExternalError, UsageError
from splitaudit.progress import Progress
from splitaudit_lab.stack import install
from splitaudit_lab.stack.lock import LockedFile
from tests.unit.stack.conftest import FileServer, RecordingProgress


def test_tree_hash_changes_with_any_input_file_but_not_with_build_output(tmp_path: Path) -> None:
    module = tmp_path / "job"
    (module / "src").mkdir(parents=True)
    (module / "pom.xml").write_text("<project/>")
    (module / "src" / "Job.java").write_text("class Job {}")
    before = install._tree_hash(module)

    (module / "target").mkdir()
    (module / "target" / "job.jar").write_bytes(b"PK")
    assert install._tree_hash(module) == before

    (module / "src" / "Job.java").write_text("class Job { int x; }")
    assert install._tree_hash(module) != before


def test_a_failed_download_names_the_artifact_and_the_log(tmp_path: Path) -> None:
    log = tmp_path / "kafka.log"
    maven_like = (
        "print('[INFO] Scanning for projects...'); "
        "print('[ERROR] Failed to execute goal on project x: Could not resolve dependencies for project x: "
        "Could not find artifact org.apache.kafka:kafka_2.13:jar:9.9.9 in central'); raise SystemExit(1)"
    )
    with pytest.raises(ExternalError) as failure:
        install._run(Progress(), log, [sys.executable, "-c", maven_like], "maven dependency:copy-dependencies")
    message = str(failure.value)
    assert "org.apache.kafka:kafka_2.13:jar:9.9.9" in message
    assert str(log) in message
    assert "exit 1" in message


def _served(server: FileServer, name: str, content: bytes) -> LockedFile:
    (server.root / name).write_bytes(content)
    return LockedFile(len(content), hashlib.sha256(content).hexdigest(), url=f"{server.url}/{name}")


def _from_a_wheel(monkeypatch: pytest.MonkeyPatch, home: Path, everything: list[install.Component]) -> None:
    monkeypatch.setenv("SPLITAUDIT_HOME", str(home))
    monkeypatch.setattr(install, "in_checkout", lambda: False)
    monkeypatch.setattr(install, "components", lambda matrix=False: everything)


def test_setup_from_a_wheel_installs_what_needs_no_checkout_and_says_what_it_downloads(
    file_server: FileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    jars = (_served(file_server, "a-1.jar", b"a" * 3_000_000), _served(file_server, "b-1.jar", b"b" * 145_728))
    built: list[str] = []
    key = ["key 1"]

    def build_into(folder: Path) -> None:
        built.append(folder.name)
        install._copy_jars(jars, folder)

    everything = [
        install.Component(
            "broker", "1", home / "broker", lambda: key[0], lambda p, log: build_into(home / "broker"), jars
        ),
        install.Component(
            "job", "1", home / "job", lambda: "k", lambda p, log: built.append("job"), needs_checkout=True
        ),
        install.Component(
            "connector",
            "1",
            home / "c",
            lambda: "k",
            lambda p, log: built.append("c"),
            unavailable=lambda: "no pyspark",
        ),
    ]
    _from_a_wheel(monkeypatch, home, everything)
    progress = RecordingProgress()

    report = install.setup(progress)

    assert [(c.name, c.state, c.downloaded_bytes, c.reason) for c in report.components] == [
        ("broker", "installed", 3_145_728, None),
        ("connector", "skipped", 0, "no pyspark"),
    ]
    assert built == ["broker"]
    assert sorted(p.name for p in (home / "broker").iterdir()) == ["a-1.jar", "b-1.jar"]
    assert progress.lines == [
        f"downloading into {home / 'downloads'}:",
        "broker: 2 files, 3.0 MiB",
        "in all: 2 files, 3.0 MiB",
        "step: install broker 1",
    ]

    for jar in jars:  # a second run needs no network
        (file_server.root / jar.name).unlink()
    again = RecordingProgress()
    assert [(c.name, c.state, c.downloaded_bytes) for c in install.setup(again).components] == [
        ("broker", "present", 0),
        ("connector", "skipped", 0),
    ]
    assert again.lines == []

    key[0] = "key 2"  # the lock changed: installed again, from what downloads/ holds
    broker, _ = install.setup(RecordingProgress()).components
    assert (broker.state, broker.downloaded_bytes) == ("installed", 0)
    assert built == ["broker", "broker"]


def test_setup_from_a_wheel_refuses_the_matrix_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _from_a_wheel(monkeypatch, tmp_path / "home", [])
    with pytest.raises(UsageError, match=r"--matrix` builds the reference pipeline of every matrix release"):
        install.setup(RecordingProgress(), matrix=True)
    assert not (tmp_path / "home").exists()


def test_the_embedded_stack_needs_no_checkout_and_spark_connectors_need_pyspark(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedded = ["flink", "kafka-broker", "spark-kafka", "spark-avro", "s3proxy", "flink-s3-fs-hadoop"]
    wheel = [*embedded, "demo-pipeline"]
    assert [c.name for c in install.components() if not c.needs_checkout] == wheel
    matrix_flink = ["flink-1.16.3", "flink-1.20.3", "flink-2.0.1", "flink-2.1.1", "flink-2.2.1"]
    assert [c.name for c in install.components(matrix=True) if not c.needs_checkout] == [*wheel, *matrix_flink]
    # a checkout's reactor builds the demo's job jars itself
    assert [c.name for c in install.components() if c.wheel_only] == ["demo-pipeline"]

    def no_pyspark() -> Path:
        raise FileNotFoundError("pyspark is not installed")

    monkeypatch.setattr(install, "pyspark_home", no_pyspark)
    reasons = {c.name: c.unavailable() for c in install.components()}
    assert {name for name, reason in reasons.items() if reason is not None} == {"spark-kafka", "spark-avro"}
    assert "splitaudit's extra [spark] installs it (pip install 'splitaudit[spark]')" in str(reasons["spark-kafka"])


def test_a_connector_jar_pyspark_already_ships_fails_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPLITAUDIT_HOME", str(tmp_path / "home"))
    (tmp_path / "pyspark" / "jars").mkdir(parents=True)
    (tmp_path / "pyspark" / "jars" / "kafka-clients-3.8.0.jar").write_bytes(b"PK")
    monkeypatch.setattr(install, "pyspark_home", lambda: tmp_path / "pyspark")
    clients = LockedFile(
        2, hashlib.sha256(b"PK").hexdigest(), maven="o:kafka-clients:3.9.2", path="o/k/kafka-clients-3.9.2.jar"
    )
    downloaded = tmp_path / "home" / "downloads" / clients.download_path
    downloaded.parent.mkdir(parents=True)
    downloaded.write_bytes(b"PK")

    with pytest.raises(ExternalError) as refused:
        install._install_spark_connector("spark-kafka", (clients,), tmp_path / "jars")
    assert str(refused.value) == (
        "the stack lock's spark-kafka holds jars pyspark already ships; exclude them in "
        "beam_pipelines/java/stack/spark-kafka/pom.xml and run `make stack-lock`: "
        "kafka-clients-3.9.2.jar (pyspark has kafka-clients-3.8.0.jar)"
    )
    assert not (tmp_path / "jars").exists()


def test_the_demo_jars_are_skipped_by_a_wheel_that_carries_no_pipeline_jar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(install, "pipeline_classes_jar", lambda: tmp_path / "reference-pipeline-beam-2.62.0-0.1.0.jar")
    (demo,) = [c for c in install.components() if c.name == "demo-pipeline"]
    assert demo.unavailable() == (
        "this installation carries no reference-pipeline-beam-2.62.0-0.1.0.jar (a wheel built before `make setup`)"
    )
