"""The Python reference pipeline: Kafka into JSON-lines sink rows with lineage, on Flink's portable runner.

The Python twin of beam_pipelines/java/reference-pipeline: `ReadFromKafka` (KafkaIO, expanded by the Java
expansion service) into one JSON object per record, one file per bundle. It runs in the Python SDK's own
environment (apache-beam 2.62.0 under `.stack/`), not in splitaudit's: the two cannot share pyarrow.

Columns: the lineage kit's (`splitaudit_beam.lineage`): `topic, partition, offset` (the record), `job_id` (the
run label the submitter passes, since the Python SDK cannot learn the Flink job id); then `key_hash, value_hash`
(the first 16 hex digits of SHA-256, as the Java pipeline writes them). The portable runner cannot give `subtask`,
`attempt` or `reader_id`: the DoFns run in the Python SDK harness, outside any Flink task, and KafkaIO runs in the
Java harness with Beam's own deserializers only (the Java pipeline stamps the reader in a deserializer of its own).

`--read sdf` reads with KafkaIO's splittable DoFn (the SDK's default); `--read deprecated` adds the
`use_deprecated_read` experiment, so the expansion gives the legacy UnboundedSource, which the Flink runner
wraps in UnboundedSourceWrapper.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
from apache_beam.io.kafka import ReadFromKafka
from apache_beam.options.pipeline_options import PipelineOptions

from splitaudit_beam.lineage import lineage_columns


class AuditOptions(PipelineOptions):
    """Flink runner options the Python SDK does not declare; the job server reads them by name."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--checkpointing_interval", type=int, default=1000)
        parser.add_argument("--savepoint_path", default=None)
        parser.add_argument("--allow_non_restored_state", action="store_true", default=False)


def sha256_prefix(data: bytes | None) -> str | None:
    """The content hash of the Java pipeline's Hashes.sha256Prefix: 16 hex digits."""
    return None if data is None else hashlib.sha256(data).hexdigest()[:16]


class ToAuditRow(beam.DoFn):  # type: ignore[misc]
    """One Kafka record (with metadata) into one JSON sink row."""

    def __init__(self, job_id: str) -> None:
        self._job_id = job_id

    def process(self, record: Any) -> Iterator[str]:
        row = lineage_columns(record, self._job_id) | {
            "key_hash": sha256_prefix(record.key),
            "value_hash": sha256_prefix(record.value),
        }
        yield json.dumps(row, separators=(",", ":"))


class WriteJsonLines(beam.DoFn):  # type: ignore[misc]
    """At-least-once JSON-lines files: every bundle's rows in one file, renamed into place when complete."""

    def __init__(self, sink_dir: str, job_id: str) -> None:
        self._sink_dir = sink_dir
        self._job_id = job_id
        self._rows: list[str] = []
        self._writer = ""
        self._sequence = 0

    def setup(self) -> None:
        os.makedirs(self._sink_dir, exist_ok=True)
        self._writer = uuid.uuid4().hex[:8]
        self._sequence = 0

    def start_bundle(self) -> None:
        self._rows = []

    def process(self, row: str) -> Iterable[None]:
        self._rows.append(row)
        return ()

    def finish_bundle(self) -> None:
        if not self._rows:
            return
        name = f"{self._job_id}-{self._writer}-{self._sequence:06d}"
        self._sequence += 1
        temporary = os.path.join(self._sink_dir, f".{name}.tmp")
        with open(temporary, "w", encoding="utf-8") as stream:
            stream.write("".join(row + "\n" for row in self._rows))
        os.replace(temporary, os.path.join(self._sink_dir, f"{name}.jsonl"))
        self._rows = []


def main(argv: list[str] | None = None) -> None:
    """Builds and submits the pipeline; returns once the job server has it running (streaming, detached)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap_servers", required=True)
    parser.add_argument("--topic", required=True, help="comma-separated topics")
    parser.add_argument("--sink_dir", required=True)
    parser.add_argument("--group_id", default="splitaudit-python")
    parser.add_argument("--run_label", required=True, help="written to the job_id column")
    parser.add_argument("--expansion_service", required=True, help="host:port of the Java expansion service")
    parser.add_argument("--read", choices=("deprecated", "sdf"), default="deprecated")
    known, pipeline_args = parser.parse_known_args(argv)
    if known.read == "deprecated":
        pipeline_args.append("--experiments=use_deprecated_read")
    options = PipelineOptions(pipeline_args, streaming=True)
    pipeline = beam.Pipeline(options=options)
    (
        pipeline
        | "Read"
        >> ReadFromKafka(
            consumer_config={
                "bootstrap.servers": known.bootstrap_servers,
                "group.id": known.group_id,
                "auto.offset.reset": "earliest",
            },
            topics=known.topic.split(","),
            with_metadata=True,
            # With the splittable DoFn, committing offsets adds a stable-input step (KafkaCommitOffset) whose
            # buffered timers Flink's portable operator replays without a key after each checkpoint:
            # "State backend must be locked when retrieving the current key", and the job fails over.
            commit_offset_in_finalize=known.read == "deprecated",
            expansion_service=known.expansion_service,
        )
        | "ToAuditRow" >> beam.ParDo(ToAuditRow(known.run_label))
        | "WriteJsonLines" >> beam.ParDo(WriteJsonLines(known.sink_dir, known.run_label))
    )
    result = pipeline.run()
    print(json.dumps({"state": str(result.state)}), flush=True)
