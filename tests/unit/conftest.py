"""Shared helpers for the unit tests: the real fixtures under fixtures/ and how their blobs are framed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splitaudit.primitives.datainput import DataInput

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FAMILIES = ("flink", "kafka")


@dataclass(frozen=True)
class FlinkFixture:
    """One fixture folder: the snapshot directory and what the job that made it says it holds."""

    family: str
    name: str
    snapshot: Path
    expected: dict[str, Any]

    @property
    def metadata(self) -> Path:
        return self.snapshot / "_metadata"


def flink_fixtures(*families: str) -> list[FlinkFixture]:
    """Every fixture of the given families (default: all), in a stable order."""
    found = []
    for family in families or FAMILIES:
        for expected_file in sorted((FIXTURES / family).glob("*/expected.json")):
            expected = json.loads(expected_file.read_text())
            folder = expected_file.parent
            found.append(FlinkFixture(family, folder.name, folder / expected["snapshot_dir"], expected))
    return found


def normalized(document: dict[str, Any]) -> dict[str, Any]:
    """An inspect document in the order expected.json uses: operators by id, each subtask's splits by content
    (a Kafka reader lists its splits in hash-map order)."""
    document = json.loads(json.dumps(document))
    document["operators"].sort(key=lambda op: op["id"])
    for op in document["operators"]:
        if op["source"] is not None:
            op["source"]["reader_splits"].sort(key=lambda s: (s["subtask"], json.dumps(s["split"], sort_keys=True)))
    return document


def fixture(name: str) -> FlinkFixture:
    return next(f for f in flink_fixtures() if f.name == name)


def versioned(path: Path) -> tuple[int, DataInput]:
    """A `SimpleVersionedSerialization` blob written by Flink or Beam: int version, int length, payload."""
    inp = DataInput(path.read_bytes(), path.name)
    version = inp.read_int()
    payload = inp.sub(inp.read_length("payload length"), "payload")
    inp.expect_end(path.name)
    return version, payload
