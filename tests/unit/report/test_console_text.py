"""Text that comes from a savepoint is shown as text: rich markup in an operator name, uid or topic is neither
interpreted nor an error, in the console and in JSON (a real savepoint, its strings rewritten)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from splitaudit.cli import main
from tests.savepoint_mutations import mutated_copy
from tests.unit.conftest import flink_fixtures

FIXTURE = next(f for f in flink_fixtures("kafka") if f.name == "2.0.1-kafka-4.0.1-2.0-savepoint")
TOPIC = FIXTURE.expected["job"]["topic"]
# Same encoded lengths as the originals: "kafka-source", "Source: kafka" and the topic.
HOSTILE = {
    "kafka-source": "[bold]x[/i]y",
    "Source: kafka": "[red]boom[/x]",
    TOPIC: ("[/red][link=x]:smile:" + "=" * len(TOPIC))[: len(TOPIC)],
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mutated_copy(FIXTURE.snapshot, tmp_path_factory.mktemp("markup") / "savepoint", HOSTILE)


def test_console_shows_markup_from_the_file_literally(hostile: Path) -> None:
    result = CliRunner().invoke(main, ["inspect", str(hostile)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    for text in HOSTILE.values():
        assert text in result.output
    assert "😄" not in result.output  # :smile: stays text, not an emoji


def test_json_carries_the_strings_unchanged(hostile: Path) -> None:
    result = CliRunner().invoke(main, ["--json", "inspect", str(hostile)])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    source = next(op for op in document["operators"] if op["uid"] == HOSTILE["kafka-source"])
    assert source["name"] == HOSTILE["Source: kafka"]
    assert {split["split"]["topic"] for split in source["source"]["reader_splits"]} == {HOSTILE[TOPIC]}


def test_an_error_message_naming_such_a_file_is_one_literal_line(tmp_path: Path) -> None:
    bad = tmp_path / "[red]x[i]"
    bad.mkdir()
    result = CliRunner().invoke(main, ["inspect", str(bad)], terminal_width=80)
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert f"{bad}" in result.output
