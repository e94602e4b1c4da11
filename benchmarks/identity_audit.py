"""Identity-audit benchmark: a sink without Kafka coordinates audited by record identity, against a bare scan of both
sides, in one run.

Starts the stack's Kafka broker (127.0.0.1, a run directory under `--data`), produces N JSON weather records to a
4-partition topic (record i to partition i % 4, so at offset i // 4; each with a unique `timestamp`), and writes the
job's output as Parquet (`timestamp`, `temperature`, `rainfall`; no coordinates) in 40 files of interleaved
partitions, as a streaming job writes them, with planted anomalies: 1,000 records of partition 0 twice and 100
records of partition 1 absent (`--damage wide`: instead of the 1,000, every record of partitions 0 and 2 from a
third of their offsets on, twice: a sixth of the records). Then, on one Spark session, best of `--repeat`, interleaved:

- the bare scan of both sides: the source topic read by Spark's Kafka source with the identity expression
  evaluated on every record, and the sink's identity column, each aggregated (count and max) so nothing is pruned;
- splitaudit's identity audit: `identity.map_to_source` and `sink.audit_sink` (the join of fingerprints, pass 1,
  the suspects), whose findings must equal the planted ones exactly.

Prints JSON with the times and the ratio. Generating the topic and the sink is not measured. `--keep` keeps each
size's broker data and sink under `--data` and reuses them in the next run with `--keep` (producing 100 M records
takes longer than auditing them); without it they are deleted after the run. `--driver-memory` is the Spark
driver's (the executor's, on `local`). `--stages` turns Spark's UI on (127.0.0.1, a free port) and reports Spark's
own metrics of each stage of the last audit (wall and task time, rows read and shuffled): where its time goes.
`--cluster N` runs on the stack's Spark standalone cluster instead (a master and N one-core workers on 127.0.0.1,
`--executor-memory` each), started for the run and stopped after it.

    .venv/bin/python benchmarks/identity_audit.py --rows 1000000 [--rows 10000000] [--repeat 3] [--data DIR] \
        [--keep] [--driver-memory 4g] [--stages] [--cluster 2 [--executor-memory 4g]] [--damage few|wide]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import Producer
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from spark_bench import UI_CONFIG, StageMetrics, add_master_options, kept_topic_run, spark_master, timed

from splitaudit.audit.passes.identity import map_to_source
from splitaudit.audit.passes.kafka_topic import read_topics, topic_records
from splitaudit.audit.passes.sink import audit_sink
from splitaudit.audit.request import IdentityMatch
from splitaudit.clients import kafka
from splitaudit.clients.spark import spark_session

PARTITIONS = 4
FILES = 40
TOPIC = "weather"
MATCH = IdentityMatch("timestamp", "get_json_object(CAST(value AS STRING), '$.timestamp')")
DUPLICATED = (0, 5_000, 5_999)  # partition 0's offsets 5,000..5,999 written twice
WIDE = (0, 2)  # --damage wide: these partitions' records written twice from a third of their offsets on
LOST = (1, 7_000, 7_099)  # partition 1's offsets 7,000..7,099 never written


def timestamp(i: int) -> str:
    """Record i's identity: a time with a sequence number, unique per record."""
    return f"2026-11-25T{i // 3_600_000 % 24:02d}:{i // 60_000 % 60:02d}:{i // 1000 % 60:02d}.{i % 1000:03d}Z-{i}"


def produce(bootstrap: str, rows: int) -> None:
    kafka.create_topic(bootstrap, TOPIC, partitions=PARTITIONS)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 50, "batch.num.messages": 10_000}
    )
    for i in range(rows):
        value = f'{{"timestamp":"{timestamp(i)}","temperature":{i % 40 - 10},"rainfall":{i % 7}}}'
        while True:
            try:
                producer.produce(TOPIC, value=value.encode(), partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(120) == 0


def write_sink(directory: Path, rows: int, *, wide: bool = False) -> Path:
    """The job's output: every record once, but the planted duplicates and losses, in FILES time-ordered files."""
    directory.mkdir(parents=True)
    per_file = -(-rows // FILES)
    for n in range(FILES):
        indexes = [i for i in range(n * per_file, min(rows, (n + 1) * per_file)) if not _lost(i)]
        indexes += [i for i in indexes if (_twice(i, rows) if wide else _duplicated(i))]
        table = pa.table(
            {
                "timestamp": [timestamp(i) for i in indexes],
                "temperature": [i % 40 - 10 for i in indexes],
                "rainfall": [i % 7 for i in indexes],
            }
        )
        pq.write_table(table, directory / f"part-{n:04d}.parquet")
    return directory


def _duplicated(i: int) -> bool:
    partition, first, last = DUPLICATED
    return i % PARTITIONS == partition and first <= i // PARTITIONS <= last


def _twice(i: int, rows: int) -> bool:
    return i % PARTITIONS in WIDE and i // PARTITIONS >= _restore(rows)


def _restore(rows: int) -> int:
    """The offset from which --damage wide writes its partitions twice."""
    return rows // PARTITIONS // 3


def expected_findings(rows: int, wide: bool) -> tuple[list[Any], int]:
    """The findings the audit must give, in its order, and the sink's rows."""
    expected: list[Any] = [("missing_records", LOST[0], LOST[2] - LOST[1] + 1, ((LOST[1], LOST[2]),))]
    if not wide:
        count = DUPLICATED[2] - DUPLICATED[1] + 1
        expected.append(("duplicate_records", DUPLICATED[0], count, ((DUPLICATED[1], DUPLICATED[2]),)))
    for partition in WIDE if wide else ():
        last = (rows - 1 - partition) // PARTITIONS  # the partition's last offset
        expected.append(("duplicate_records", partition, last - _restore(rows) + 1, ((_restore(rows), last),)))
    duplicates = sum(count for kind, _, count, _ in expected if kind == "duplicate_records")
    return expected, rows - (LOST[2] - LOST[1] + 1) + duplicates


def _lost(i: int) -> bool:
    partition, first, last = LOST
    return i % PARTITIONS == partition and first <= i // PARTITIONS <= last


def bare_scan(spark: SparkSession, bootstrap: str, sink: str) -> tuple[int, int]:
    """The floor: both sides read, the identity evaluated on every row, aggregated so that nothing is pruned."""
    source = read_topics(spark, bootstrap, (TOPIC,)).select(F.expr(MATCH.source_key).alias("k"))
    records = source.agg(F.count("k"), F.max("k")).first()
    rows = spark.read.parquet(sink).agg(F.count("timestamp"), F.max("timestamp")).first()
    assert records is not None
    assert rows is not None
    return int(records[0]), int(rows[0])


def identity_audit(spark: SparkSession, bootstrap: str, sink: str) -> list[tuple[str, int | None, int, Any]]:
    records = read_topics(spark, bootstrap, (TOPIC,), headers=True)
    held = topic_records(bootstrap, (TOPIC,))
    with map_to_source(spark.read.parquet(sink), records, (TOPIC,), MATCH, records=held) as m:
        audit = audit_sink(m.sink, source=m.source, source_topics=frozenset({TOPIC}))
        return [(f.kind, f.partition, f.count, f.offset_ranges) for f in (*m.findings, *audit.findings)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, action="append", help="records (default 1,000,000)")
    parser.add_argument("--data", type=Path, default=Path("benchmarks/out/identity"))
    parser.add_argument("--repeat", type=int, default=1, help="time each N times, interleaved; report the fastest")
    parser.add_argument("--keep", action="store_true", help="keep the topic and sink, reuse kept ones")
    parser.add_argument("--driver-memory", default="4g", help="the Spark driver's memory")
    parser.add_argument("--stages", action="store_true", help="turn the UI on and report each audit stage's metrics")
    parser.add_argument(
        "--damage", choices=("few", "wide"), default="few", help="1,000 duplicated records, or partitions twice"
    )
    add_master_options(parser)
    args = parser.parse_args()
    with spark_master(args.master, args.cluster, args.data / "spark-cluster", args.executor_memory) as where:
        report = _run(args, *where)
    print(json.dumps(report, indent=2))


def _run(args: argparse.Namespace, master: str, master_config: dict[str, str]) -> dict[str, Any]:
    wide = args.damage == "wide"
    report: dict[str, Any] = {
        "master": master,
        "cpus": os.cpu_count(),
        "repeat": args.repeat,
        "damage": args.damage,
        "sizes": {},
    }
    for rows in args.rows or [1_000_000]:
        expected, sink_rows = expected_findings(rows, wide)
        run = args.data / f"run-{rows}{'-wide' if wide else ''}"

        def make(bootstrap: str, run: Path = run, rows: int = rows) -> None:
            produce(bootstrap, rows)
            write_sink(run / "sink", rows, wide=wide)

        with kept_topic_run(run, args.keep, make) as broker:
            sink = str(run / "sink")
            config = {"spark.driver.memory": args.driver_memory, "spark.sql.shuffle.partitions": "8", **master_config}
            spark = spark_session(
                master, app_name="splitaudit-bench", config=config | UI_CONFIG if args.stages else config
            )
            spark.sparkContext.setLogLevel("ERROR")
            stage_metrics = StageMetrics(spark) if args.stages else None
            bare_scan(spark, broker.bootstrap, sink)  # warms the JVM: no timed query pays for JIT compilation
            scans, audits = [], []
            for _ in range(args.repeat):
                seconds, counted = timed(lambda: bare_scan(spark, broker.bootstrap, sink))  # noqa: B023
                assert counted == (rows, sink_rows), counted
                scans.append(seconds)
                if stage_metrics is not None:
                    stage_metrics.mark()
                seconds, found = timed(lambda: identity_audit(spark, broker.bootstrap, sink))  # noqa: B023
                assert found == expected, found
                audits.append(seconds)
            report["sizes"][rows] = {
                "bare_scan_s": round(min(scans), 2),
                "audit_s": round(min(audits), 2),
                "audit_over_scan": round(min(audits) / min(scans), 2),
                "all_scans_s": [round(s, 2) for s in scans],
                "all_audits_s": [round(s, 2) for s in audits],
            }
            if stage_metrics is not None:
                report["sizes"][rows]["audit_stages"] = stage_metrics.since_mark()  # of the last run
            spark.stop()
    return report


if __name__ == "__main__":
    main()
