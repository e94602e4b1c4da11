"""The Spark session factory: `local[*]` on 127.0.0.1 by default, any master (a cluster) when given."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from splitaudit.home import spark_kafka_jars


def spark_session(
    master: str = "local[*]",
    *,
    app_name: str = "splitaudit",
    local_dir: Path | None = None,
    config: dict[str, str] | None = None,
    kafka: bool = True,
) -> SparkSession:
    """A SparkSession whose driver binds to 127.0.0.1 and whose workers run this very Python.

    `master` is `local[*]` on a laptop, or e.g. `spark://host:7077` / `yarn` for a cluster. `local_dir` keeps
    Spark's scratch space (and the driver's java.io.tmpdir) inside a run directory. With `kafka` (the default),
    when `splitaudit setup` installed Spark's Kafka connector, its jars go on `spark.jars` (after any given in
    `config`), so `spark.read.format("kafka")` works; a session that reads no topic passes `kafka=False` and
    skips loading them.
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
    kafka_jars = sorted(str(jar) for jar in spark_kafka_jars().glob("*.jar")) if kafka else []
    if kafka_jars:
        settings["spark.jars"] = ",".join(filter(None, [settings.get("spark.jars", ""), *kafka_jars]))
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
