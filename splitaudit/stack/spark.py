"""The Spark session factory: `local[*]` on 127.0.0.1 by default, any master (a cluster) when given."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

from splitaudit.stack.home import spark_kafka_jars
from splitaudit.stack.results import ServiceStatus


def spark_session(
    master: str = "local[*]",
    *,
    app_name: str = "splitaudit",
    local_dir: Path | None = None,
    config: dict[str, str] | None = None,
) -> SparkSession:
    """A SparkSession whose driver binds to 127.0.0.1 and whose workers run this very Python.

    `master` is `local[*]` on a laptop, or e.g. `spark://host:7077` / `yarn` for a cluster. `local_dir` keeps
    Spark's scratch space (and the driver's java.io.tmpdir) inside a run directory. When `splitaudit setup`
    installed Spark's Kafka connector, its jars go on `spark.jars` (after any given in `config`), so
    `spark.read.format("kafka")` works in every session made here.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if master.startswith("local"):
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
    if local_dir is not None:
        local_dir.mkdir(parents=True, exist_ok=True)
        builder = builder.config("spark.local.dir", str(local_dir)).config(
            "spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={local_dir}"
        )
    settings = dict(config or {})
    kafka_jars = sorted(str(jar) for jar in spark_kafka_jars().glob("*.jar"))
    if kafka_jars:
        settings["spark.jars"] = ",".join(filter(None, [settings.get("spark.jars", ""), *kafka_jars]))
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def spark_check(master: str, workdir: Path) -> ServiceStatus:
    """Start a session on `master`, run one aggregation, stop it; report as a stack service."""
    started = time.monotonic()
    try:
        session = spark_session(master, app_name="splitaudit-check", local_dir=workdir / "spark")
        try:
            total = session.range(1_000_000).selectExpr("sum(id) AS s").collect()[0]["s"]
            version = session.version
        finally:
            session.stop()
    except Exception as ex:  # any failure to start or query is the health check's answer, not a crash
        return ServiceStatus("spark", None, False, master, f"failed: {type(ex).__name__}: {ex}"[:300])
    healthy = total == 499_999_500_000
    detail = f"Spark {version}, query {'ok' if healthy else 'WRONG'} in {time.monotonic() - started:.1f} s"
    return ServiceStatus("spark", None, healthy, master, detail)
