"""Aggregate-reconciliation benchmark: an aggregating sink reconciled against its source topic, against a bare scan
of both sides, in one run.

Starts the stack's Kafka broker (127.0.0.1, a run directory under `--data`), produces N records to a 4-partition
topic (record i to partition i % 4, so at offset i // 4; its value `k{i % KEYS}`, its key), and writes the job's
output as Parquet (`k`, `n`: one count per key, in 10 files) as a processing-time word count restored by stock Beam
with the twin at the group's committed offset would: the span is each partition's offsets from a third of them (SP0)
to the end (SP1), the twin counted each partition again from half of them (the committed offset). Then, on one
Spark session, best of `--repeat`, interleaved:

- the bare scan of both sides: the source topic through Spark's Kafka source with the group key evaluated on every
  record, and the sink's key and value, each aggregated (count and max) so that nothing is pruned;
- splitaudit's reconciliation, `aggregate.reconcile` (the source aggregation per key with every hypothesis, the sink
  aggregation, the join, the totals and samples), whose totals and inferred ranges must equal the planted ones.

Prints JSON with the times and the ratio. Generating the topic and the sink is not measured. `--keep` keeps each
size's broker data and sink under `--data` and reuses them.

    .venv/bin/python benchmarks/aggregate_audit.py --rows 1000000 [--rows 10000000] [--repeat 2] [--data DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import Producer
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from spark_bench import kept_topic_run, timed

from splitaudit.audit.checks.hypotheses import hypotheses_of
from splitaudit.audit.passes.aggregate import Span, reconcile
from splitaudit.audit.passes.kafka_topic import read_topics
from splitaudit.audit.request import AggregateMatch
from splitaudit.clients import kafka
from splitaudit.clients.spark import spark_session

PARTITIONS = 4
KEYS = 10_000
FILES = 10
TOPIC = "words"
MATCH = AggregateMatch("count", "CAST(value AS STRING)", "k", "n")


def produce(bootstrap: str, rows: int) -> None:
    kafka.create_topic(bootstrap, TOPIC, partitions=PARTITIONS)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 50, "batch.num.messages": 10_000}
    )
    for i in range(rows):
        while True:
            try:
                producer.produce(TOPIC, value=f"k{i % KEYS}".encode(), partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(120) == 0


def span_of(rows: int) -> tuple[Span, dict[tuple[str, int], int]]:
    """SP0 at a third of each partition's offsets, SP1 at its end; the committed offsets at half."""
    ends = {(TOPIC, p): len(range(p, rows, PARTITIONS)) for p in range(PARTITIONS)}
    return Span({tp: n // 3 for tp, n in ends.items()}, ends), {tp: n // 2 for tp, n in ends.items()}


def expected_counts(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Per key: the span's count, and the twin's excess (numpy over the record indexes, not Spark)."""
    span, committed = span_of(rows)
    i = np.arange(rows, dtype=np.int64)
    offset, partition = i // PARTITIONS, i % PARTITIONS
    start = np.array([span.start[(TOPIC, p)] for p in range(PARTITIONS)])[partition]
    twin = np.array([committed[(TOPIC, p)] for p in range(PARTITIONS)])[partition]
    keys = i % KEYS
    return np.bincount(keys[offset >= start], minlength=KEYS), np.bincount(keys[offset >= twin], minlength=KEYS)


def write_sink(directory: Path, rows: int) -> Path:
    directory.mkdir(parents=True)
    expected, excess = expected_counts(rows)
    emitted = expected + excess
    for n, chunk in enumerate(np.array_split(np.arange(KEYS), FILES)):
        table = pa.table({"k": [f"k{k}" for k in chunk], "n": emitted[chunk]})
        pq.write_table(table, directory / f"part-{n:04d}.parquet")
    return directory


def bare_scan(spark: SparkSession, bootstrap: str, sink: str) -> tuple[int, int]:
    """The floor: both sides read, the keys evaluated on every row, aggregated so that nothing is pruned."""
    source = read_topics(spark, bootstrap, (TOPIC,)).select(F.expr(MATCH.group_key).alias("k"))
    records = source.agg(F.count("k"), F.max("k")).first()
    rows = spark.read.parquet(sink).agg(F.count("k"), F.max("n")).first()
    assert records is not None
    assert rows is not None
    return int(records[0]), int(rows[0])


def reconciliation(spark: SparkSession, bootstrap: str, sink: str, rows: int) -> tuple[Any, ...]:
    span, committed = span_of(rows)
    hypotheses = hypotheses_of(span.start, {tp: 0 for tp in span.end}, committed)
    result = reconcile(read_topics(spark, bootstrap, (TOPIC,)), spark.read.parquet(sink), MATCH, span, hypotheses, "")
    doubles = tuple((f.partition, f.offset_ranges) for f in result.findings if f.kind == "double_assignment")
    return result.totals.expected_total, result.totals.excess_total, result.totals.excess_keys, doubles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, action="append", help="records (default 1,000,000)")
    parser.add_argument("--data", type=Path, default=Path("benchmarks/out/aggregate"))
    parser.add_argument("--repeat", type=int, default=1, help="time each N times, interleaved; report the fastest")
    parser.add_argument("--keep", action="store_true", help="keep the topic and sink, reuse kept ones")
    parser.add_argument("--driver-memory", default="4g", help="the Spark driver's memory")
    args = parser.parse_args()
    report: dict[str, Any] = {"cpus": os.cpu_count(), "repeat": args.repeat, "keys": KEYS, "sizes": {}}
    for rows in args.rows or [1_000_000]:
        report["sizes"][rows] = _run(args, rows)
    print(json.dumps(report, indent=2))


def _run(args: argparse.Namespace, rows: int) -> dict[str, Any]:
    run = args.data / f"run-{rows}"

    def make(bootstrap: str) -> None:
        produce(bootstrap, rows)
        write_sink(run / "sink", rows)

    with kept_topic_run(run, args.keep, make) as broker:
        sink = str(run / "sink")
        expected, excess = expected_counts(rows)
        span, committed = span_of(rows)
        truth = (
            int(expected.sum()),
            int(excess.sum()),
            int((excess > 0).sum()),
            tuple((p, ((committed[(TOPIC, p)], span.end[(TOPIC, p)] - 1),)) for p in range(PARTITIONS)),
        )
        config = {"spark.driver.memory": args.driver_memory, "spark.sql.shuffle.partitions": "8"}
        spark = spark_session("local[2]", app_name="splitaudit-bench", config=config)
        spark.sparkContext.setLogLevel("ERROR")
        bare_scan(spark, broker.bootstrap, sink)  # warms the JVM: no timed query pays for JIT compilation
        scans, audits = [], []
        for _ in range(args.repeat):
            seconds, counted = timed(lambda: bare_scan(spark, broker.bootstrap, sink))
            assert counted == (rows, KEYS), counted
            scans.append(seconds)
            seconds, found = timed(lambda: reconciliation(spark, broker.bootstrap, sink, rows))
            assert found == truth, (found, truth)
            audits.append(seconds)
        spark.stop()
        return {
            "bare_scan_s": round(min(scans), 2),
            "reconcile_s": round(min(audits), 2),
            "reconcile_over_scan": round(min(audits) / min(scans), 2),
            "all_scans_s": [round(s, 2) for s in scans],
            "all_reconciles_s": [round(s, 2) for s in audits],
            "excess_total": truth[1],
        }


if __name__ == "__main__":
    main()
