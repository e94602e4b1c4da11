"""The reference pipeline's sink, read with pyarrow: JSON-lines files of one row per Kafka record.

Only complete files count: the sink (beam_pipelines/java, WriteJsonLinesFn) writes each bundle under a hidden
`.…tmp` name and renames it to `*.jsonl` when it is whole. The scenario polls it with these while the job
runs; the verdict on the finished sink is the Spark auditor's (`splitaudit.audit.run`).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.json as pajson

# Column types of the sink rows (beam_pipelines/java/README.md, "Each sink row"); the hashes are null for null
# keys and values.
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
