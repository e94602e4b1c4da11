"""The reference pipeline's sink, read with pyarrow: JSON-lines files of one row per Kafka record.

Only complete files count: the sink (beam_pipelines/java, WriteJsonLinesFn) writes each bundle under a hidden
`.…tmp` name and renames it to `*.jsonl` when it is whole. The per-partition counts here are what the
scenario reports until the Spark auditor takes over.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

# Column types of the sink rows (DESIGN.md, "Reference pipeline sink"); the hashes are null for null keys/values.
SINK_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("subtask", pa.int32()),
        ("reader_id", pa.string()),
        ("attempt", pa.int32()),
        ("job_id", pa.string()),
        ("key_hash", pa.string()),
        ("value_hash", pa.string()),
    ]
)


def sink_files(sink_dir: Path) -> list[Path]:
    """The sink's complete files, in name order."""
    return sorted(sink_dir.glob("*.jsonl")) if sink_dir.is_dir() else []


def read_sink(sink_dir: Path) -> pa.Table:
    """Every row of the sink's complete files, with the sink schema (an empty table when there are none)."""
    options = pajson.ParseOptions(explicit_schema=SINK_SCHEMA, unexpected_field_behavior="error")
    tables = [pajson.read_json(path, parse_options=options) for path in sink_files(sink_dir)]
    return pa.concat_tables(tables) if tables else SINK_SCHEMA.empty_table()


def count_rows(sink_dir: Path) -> int:
    """Rows in the sink's complete files, counted by lines (cheap enough to poll)."""
    return sum(path.read_bytes().count(b"\n") for path in sink_files(sink_dir))


@dataclass(frozen=True)
class PartitionCounts:
    """What the sink holds for one partition, against the offsets the topic has."""

    partition: int
    expected_records: int  # offsets 0 .. expected_records-1 exist in the topic
    sink_rows: int
    duplicate_keys: int  # (topic, partition, offset) keys that appear more than once
    duplicate_rows: int  # sink rows minus distinct keys
    missing_offsets: int  # existing offsets absent from the sink
    double_read_offsets: int  # offsets two different readers emitted within one (job_id, attempt)
    replayed_offsets: int  # offsets emitted in more than one (job_id, attempt): a replay after a restart


def partition_counts(table: pa.Table, topic: str, expected: dict[int, int]) -> tuple[PartitionCounts, ...]:
    """Per-partition counts of `topic`'s rows in `table`, for a topic whose partition p holds offsets
    0..expected[p]-1 (the scenario's topics are fresh, dense and never compacted)."""
    rows = table.filter(pc.equal(table["topic"], topic))
    per_key = rows.group_by(["partition", "offset"]).aggregate([([], "count_all")])
    # Readers per (job_id, attempt, partition, offset): more than one is two readers in one attempt.
    per_attempt = (
        rows.group_by(["job_id", "attempt", "partition", "offset"])
        .aggregate([("reader_id", "count_distinct")])
        .filter(pc.greater(pc.field("reader_id_count_distinct"), 1))
    )
    # Attempts per offset: more than one is a replay after a failover or a restore.
    per_offset_attempts = (
        rows.group_by(["job_id", "attempt", "partition", "offset"])
        .aggregate([])
        .group_by(["partition", "offset"])
        .aggregate([([], "count_all")])
        .filter(pc.greater(pc.field("count_all"), 1))
    )
    result = []
    for partition in sorted(expected):
        keys = per_key.filter(pc.equal(per_key["partition"], partition))
        offsets = keys["offset"]
        in_range = pc.and_(pc.greater_equal(offsets, 0), pc.less(offsets, expected[partition]))
        counts = keys["count_all"]
        sink_rows = int(pc.sum(counts).as_py() or 0)
        double = per_attempt.filter(pc.equal(per_attempt["partition"], partition))
        result.append(
            PartitionCounts(
                partition=partition,
                expected_records=expected[partition],
                sink_rows=sink_rows,
                duplicate_keys=int(pc.sum(pc.greater(counts, 1)).as_py() or 0),
                duplicate_rows=sink_rows - keys.num_rows,
                missing_offsets=expected[partition] - int(pc.sum(in_range).as_py() or 0),
                double_read_offsets=len(set(double["offset"].to_pylist())),
                replayed_offsets=per_offset_attempts.filter(
                    pc.equal(per_offset_attempts["partition"], partition)
                ).num_rows,
            )
        )
    return tuple(result)
