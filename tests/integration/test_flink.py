"""The real Flink cluster through the REST client: run, savepoint, restore, stop, errors."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest

from splitaudit.clients import kafka
from splitaudit.clients.flink import FlinkRestError
from splitaudit.home import jobs_dir
from splitaudit_lab.stack.install import SMOKE_JOB
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def jar_id(stack: Stack) -> str:
    return stack.flink.client().upload_jar(jobs_dir() / SMOKE_JOB)


def _topic(stack: Stack, name: str) -> list[str]:
    kafka.create_topic(stack.kafka.bootstrap, name, partitions=4)
    kafka.produce(stack.kafka.bootstrap, name, partitions=4, count=2_000)
    return ["--bootstrap", stack.kafka.bootstrap, "--topic", name, "--group", name, "--throttle-ms", "2"]


def test_savepoint_then_restore_names_the_savepoint_as_restore_source(
    stack: Stack, jar_id: str, tmp_path: Path
) -> None:
    flink = stack.flink.client()
    args = _topic(stack, "restore")
    job = flink.run_jar(jar_id, program_args=args, parallelism=2)
    flink.wait_all_running(job)
    flink.wait_for_checkpoint(job)

    savepoint = flink.savepoint(job, tmp_path.as_uri(), format_type="CANONICAL")
    flink.cancel(job)

    assert flink.job_state(job) == "CANCELED"
    assert (Path(urlparse(savepoint).path) / "_metadata").is_file()
    assert Path(urlparse(savepoint).path).parent == tmp_path

    restored = flink.run_jar(jar_id, program_args=args, parallelism=2, savepoint_path=savepoint)
    flink.wait_all_running(restored)
    history = flink.checkpoints(restored)
    try:
        assert history.latest_restored is not None
        assert history.latest_restored.is_savepoint
        assert history.latest_restored.external_path == savepoint
        # the restored job's checkpoint ids continue after the savepoint's
        after = flink.wait_for_checkpoint(restored, after=history.latest_restored.id)
        assert after.id > history.latest_restored.id
    finally:
        flink.cancel(restored)


def test_stop_with_savepoint_finishes_the_job(stack: Stack, jar_id: str, tmp_path: Path) -> None:
    flink = stack.flink.client()
    job = flink.run_jar(jar_id, program_args=_topic(stack, "stop"), parallelism=1)
    flink.wait_all_running(job)

    request = flink.stop_with_savepoint(job, tmp_path.as_uri(), format_type="NATIVE")
    location = flink.wait_for_savepoint(job, request)

    assert flink.wait_for_state(job, {"FINISHED"}) == "FINISHED"
    assert (Path(urlparse(location).path) / "_metadata").is_file()
    assert flink.checkpoints(job).latest_savepoint is not None


def test_flink_errors_reach_the_user_verbatim(stack: Stack) -> None:
    flink = stack.flink.client()
    with pytest.raises(FlinkRestError) as failure:
        flink.run_jar("no-such-jar.jar")
    assert failure.value.status == 500  # Flink 1.19 answers a missing jar id with an internal error
    assert any("no-such-jar.jar" in line for line in failure.value.flink_errors)
    assert "no-such-jar.jar" in str(failure.value)


def test_restoring_from_a_missing_savepoint_fails_with_flinks_reason(stack: Stack, jar_id: str, tmp_path: Path) -> None:
    flink = stack.flink.client()
    args = _topic(stack, "missing")
    missing = (tmp_path / "savepoint-000000-000000000000").as_uri()
    with pytest.raises(FlinkRestError) as failure:
        flink.run_jar(jar_id, program_args=args, savepoint_path=missing)
    assert "savepoint-000000-000000000000" in str(failure.value)
