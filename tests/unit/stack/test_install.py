"""Setup's bookkeeping: what makes a component stale, and what a failed download tells the user."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from splitaudit.errors import ExternalError
from splitaudit.progress import Progress
from splitaudit.stack import install


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
