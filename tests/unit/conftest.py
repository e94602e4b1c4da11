"""Shared helpers for the unit tests: the real-Flink fixtures under fixtures/flink/."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "flink"


@dataclass(frozen=True)
class FlinkFixture:
    """One fixture folder: the snapshot directory and what the job that made it says it holds."""

    name: str
    snapshot: Path
    expected: dict[str, Any]

    @property
    def metadata(self) -> Path:
        return self.snapshot / "_metadata"


def flink_fixtures() -> list[FlinkFixture]:
    found = []
    for expected_file in sorted(FIXTURES.glob("*/expected.json")):
        expected = json.loads(expected_file.read_text())
        found.append(
            FlinkFixture(expected_file.parent.name, expected_file.parent / expected["snapshot_dir"], expected)
        )
    return found


def fixture(name: str) -> FlinkFixture:
    return next(f for f in flink_fixtures() if f.name == name)
