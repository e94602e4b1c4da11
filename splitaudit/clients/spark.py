"""The Spark session factory: `local[*]` on 127.0.0.1 by default, any master (a cluster) when given."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from splitaudit.home import spark_avro_jars, spark_kafka_jars
from splitaudit.logs import library_log

DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def spark_session(
    master: str = "local[*]",
    *,
    app_name: str = "splitaudit",
    local_dir: Path | None = None,
    config: dict[str, str] | None = None,
    kafka: bool = True,
    avro: bool = False,
) -> SparkSession:
    """A SparkSession whose driver binds to 127.0.0.1 and whose workers run this very Python.

    `master` is `local[*]` on a laptop, or e.g. `spark://host:7077` / `yarn` for a cluster. `local_dir` keeps
    Spark's scratch space (and the driver's java.io.tmpdir) inside a run directory. With `kafka` (the default),
    when `splitaudit setup` installed Spark's Kafka connector, its jars go on `spark.jars` (after any given in
    `config`), so `spark.read.format("kafka")` works; a session that reads no topic passes `kafka=False` and
    skips loading them. With `avro`, Spark's Avro data source from the stack home likewise (`format("avro")`).
    When a libraries' log file is named (`splitaudit.logs`), the JVM's own output (log4j,
    warnings, its Python workers' stderr) goes to that file, not to the console.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    options = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # Local files through Hadoop's raw file system, not its checksummed one: the latter builds each file's
        # `.<name>.crc` path from the name alone, which fails for a name holding ':' (Beam's windowed file names:
        # `…2026-11-25T11:50:20.000Z-…`: "Relative path in absolute URI"). Beam writes no .crc files anyway.
        "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    }
    if master.startswith("local"):
        options |= {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
    java = DRIVER_JAVA_OPTIONS
    if local_dir is not None:
        local_dir.mkdir(parents=True, exist_ok=True)
        options |= {"spark.local.dir": str(local_dir), java: f"-Djava.io.tmpdir={local_dir}"}
    given = dict(config or {})
    if java in given and java in options:  # both kept: the run directory's tmpdir and the caller's flags
        given[java] = f"{options[java]} {given[java]}"
    options |= given
    connectors = [folder for folder, wanted in ((spark_kafka_jars(), kafka), (spark_avro_jars(), avro)) if wanted]
    jars = sorted(str(jar) for folder in connectors for jar in folder.glob("*.jar"))
    if jars:
        options["spark.jars"] = ",".join(filter(None, [options.get("spark.jars", ""), *jars]))
    conf = SparkConf().setAll(list(options.items()))
    log = library_log()
    if log is not None and SparkContext._active_spark_context is None:
        # The JVM's own output (log4j, warnings, its Python workers' stderr) goes to the log file.
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as stream:
            gateway = launch_gateway(conf, popen_kwargs={"stdout": stream, "stderr": stream})  # type: ignore[no-untyped-call]
        SparkContext(conf=conf, gateway=gateway)
    return SparkSession.builder.config(conf=conf).getOrCreate()
