"""Session-scoped real stack for the integration tests: started once, always stopped, even when tests fail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from splitaudit.clients.spark import spark_session
from splitaudit.home import PATCH_VARIANTS, patch_jar_path
from splitaudit.progress import Progress
from splitaudit_lab.stack.stack import Stack
from tests.integration.wheel_install import build_wheel


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A Kafka broker and a Flink cluster on 127.0.0.1, shared by the session's integration tests."""
    with Stack(tmp_path_factory.mktemp("stack")).running(Progress()) as running:
        yield running


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """A local[2] Spark session with its scratch space in the test's temp dir."""
    session = spark_session("local[2]", app_name="splitaudit-tests", local_dir=Path(tmp_path_factory.mktemp("spark")))
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `uv build` makes of this checkout (after `make setup` put the patch's jars into the package)."""
    for flink_runner, beam_version in PATCH_VARIANTS:
        if not patch_jar_path(flink_runner, beam_version).is_file():
            pytest.fail(f"{patch_jar_path(flink_runner, beam_version)} is missing: run `make setup` first")
    return build_wheel(tmp_path_factory.mktemp("dist"))
