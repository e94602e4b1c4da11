"""Session-scoped real stack for the integration tests: started once, always stopped, even when tests fail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from splitaudit.clients.spark import spark_session
from splitaudit.progress import Progress
from splitaudit.stack.stack import Stack


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
