from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from splitaudit.cli import main
from tests.unit.conftest import fixture, normalized

CASE = "2.0.1-savepoint-canonical-inline"


def test_inspect_json_follows_the_contract() -> None:
    case = fixture(CASE)
    result = CliRunner().invoke(main, ["inspect", "--json", str(case.snapshot)])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert list(document) == [
        "path",
        "format_version",
        "checkpoint_id",
        "kind",
        "savepoint_format",
        "operators",
    ]
    assert list(document["operators"][0]) == ["id", "uid", "name", "parallelism", "max_parallelism", "source"]
    document.pop("path")
    assert normalized(document) == case.expected["inspect"]
    # The global --json gives the same document.
    again = CliRunner().invoke(main, ["--json", "inspect", str(case.snapshot)])
    assert json.loads(again.output) == json.loads(result.output)


def test_inspect_table_shows_splits_and_offsets() -> None:
    case = fixture(CASE)
    result = CliRunner().invoke(main, ["inspect", str(case.snapshot)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "savepoint (CANONICAL), checkpoint" in result.output
    rows = [[c.strip() for c in line.strip("│").split("│")] for line in result.output.splitlines()]
    splits = [(row[0], row[-2]) for row in rows if len(row) == 6 and row[2] == "-"]  # no topic: number sequence
    assert sorted(splits) == sorted((str(s["subtask"]), str(s["last"] + 1)) for s in case.expected["job"]["witness"])


def test_corrupt_input_exits_2_with_one_line(tmp_path: Path) -> None:
    snapshot = tmp_path / "sp"
    shutil.copytree(fixture(CASE).snapshot, snapshot)
    metadata = snapshot / "_metadata"
    metadata.write_bytes(metadata.read_bytes()[:100])
    result = CliRunner().invoke(main, ["inspect", str(snapshot)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {metadata} at byte ")
    assert "Traceback" not in result.output + result.stderr


def test_corrupt_input_as_json(tmp_path: Path) -> None:
    (tmp_path / "_metadata").write_bytes(b"\x49\x60\x67\x2d\x00\x00\x00\x63")
    result = CliRunner().invoke(main, ["--json", "inspect", str(tmp_path)])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert (error["type"], error["path"], error["offset"]) == ("InputError", str(tmp_path / "_metadata"), 4)


def test_inspect_help_describes_the_command() -> None:
    result = CliRunner().invoke(main, ["inspect", "--help"])
    assert result.exit_code == 0
    for option in ("--uid", "--json", "--allow-external-state"):
        assert option in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kill-taskmanager", "--fault", "broker-restart"], "--kill-taskmanager is --fault taskmanager-kill"),
        (["--fault", "jobmanager-kill", "--continuous"], "apply to the savepoint restore, not to a fault"),
        (["--kill-taskmanager", "--add-partitions", "2"], "apply to the savepoint restore, not to a fault"),
        (["--continuous", "--add-partitions", "2"], "do not go together"),
        (
            ["--fault", "taskmanager-kill", "--restore-parallelism", "3"],
            "apply to the savepoint restore, not to a fault",
        ),
        (["--restore-parallelism", "0"], "0 is not in the range x>=1"),
        (["--parallelism", "0"], "0 is not in the range x>=1"),
    ],
)
def test_scenario_refuses_options_that_do_not_combine(tmp_path: Path, args: list[str], message: str) -> None:
    # Refused before anything starts: no run directory, no stack.
    result = CliRunner().invoke(main, ["scenario", "--workdir", str(tmp_path / "run"), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["scenario", "--guard", "--continuous"], "--guard runs the plain savepoint restore: no --continuous"),
        (["scenario", "--force"], "--force overrides the guard's refusal: it needs --guard"),
        (["demo", "--guard", "--add-partitions", "2"], "--guard runs the plain savepoint restore: no --add-partitions"),
    ],
)
def test_a_scenario_usage_error_is_shown_through_the_output(tmp_path: Path, args: list[str], message: str) -> None:
    # The request checks the options once (ScenarioRequest, DemoRequest) and is made in the command's action, so its
    # errors are shown as every other error is: one line, or one JSON document with --json; not click's usage text.
    command, *rest = args
    workdir = ["--workdir", str(tmp_path / "run")]
    shown = CliRunner().invoke(main, [command, *workdir, *rest])
    assert (shown.exit_code, shown.stdout, shown.stderr) == (2, "", f"error: {message}\n")
    as_json = CliRunner().invoke(main, ["--json", command, *workdir, *rest])
    assert as_json.exit_code == 2
    assert json.loads(as_json.stdout) == {"error": {"type": "UsageError", "message": message}}
    assert not (tmp_path / "run").exists()


def test_demo_with_added_partitions_needs_the_upstream_fix_jar_before_any_stack_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import splitaudit_lab.scenario.restore as restore

    jars = {"stock": tmp_path / "stock.jar", "patched": tmp_path / "patched.jar"}
    for jar in jars.values():
        jar.write_bytes(b"PK")

    def built(release: str) -> dict[str, Path]:
        return jars if release == "2.62.0" else {"stock": tmp_path / "absent" / "stock.jar"}

    monkeypatch.setattr(restore, "pipeline_jars", built)
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(main, ["demo", "--workdir", str(run_dir), "--add-partitions", "2"])
    assert result.exit_code == 3, result.output
    assert f"{tmp_path / 'absent' / 'stock.jar'} is missing; run `splitaudit setup --matrix`" in result.output
    assert not (run_dir / "stack").exists()


SDF = Path(__file__).parents[2] / "fixtures" / "beam_sdf"


def test_inspect_audit_and_diff_of_the_sdf_savepoints() -> None:
    [before] = (str(p) for p in (SDF / "heap_before").glob("savepoint-*"))
    [after] = (str(p) for p in (SDF / "heap_after").glob("savepoint-*"))
    shown = CliRunner().invoke(main, ["inspect", after], terminal_width=200)
    assert shown.exit_code == 0
    rows = [[c.strip() for c in line.strip("│").split("│")] for line in shown.output.splitlines()]
    residuals = [r for r in rows if len(r) == 6 and r[1].startswith("sdf_checkpoint:")]  # one row per partition
    assert sorted((r[-3], r[-2], r[-1]) for r in residuals) == [(str(p), "1000", "-") for p in range(4)]
    # Forward (before, then after): every partition moved from 500 to 1000, held once.
    audit = ["audit", "--savepoint", after, "--before", before, "--partitions", "4"]
    assert CliRunner().invoke(main, audit).exit_code == 0
    assert CliRunner().invoke(main, ["diff", before, after]).exit_code == 0
    # Backwards: every partition rewound by 500 offsets (error, exit 1).
    rewound = CliRunner().invoke(main, ["--json", "diff", after, before])
    assert rewound.exit_code == 1
    findings = json.loads(rewound.stdout)["findings"]
    assert [(f["kind"], f["partition"], f["count"]) for f in findings] == [("rewind", p, 500) for p in range(4)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sink-key", "k"], "give --sink-key and --source-key together (or --match-payload for a pass-through job)"),
        (
            ["--savepoint", "sp", "--group", "g"],
            "--group needs --bootstrap: the group's offsets are read from the Kafka cluster",
        ),
    ],
)
def test_every_audit_usage_error_is_one_json_document(tmp_path: Path, args: list[str], message: str) -> None:
    # The request checks its options once (AuditRequest), and its errors are shown as every other error is.
    result = CliRunner().invoke(main, ["--json", "audit", *args, "--log", str(tmp_path / "libraries.log")])
    assert result.exit_code == 2
    assert json.loads(result.stdout) == {"error": {"type": "UsageError", "message": message}}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--aggregate", "count", "--group-key", "value", "--sink-group-key", "k", "--sink-value", "n"],
            "--aggregate needs --sink, --bootstrap, --before SP0 and --savepoint SP1: the sink's aggregates are "
            "reconciled with the source records from SP0's offsets to SP1's, read from that cluster",
        ),
        (["--aggregate", "count", "--group-key", "value"], "--aggregate needs --sink-group-key, --sink-value"),
        (["--group-key", "value"], "--group-key: only with --aggregate (they describe an aggregating sink)"),
    ],
)
def test_aggregate_options_are_refused_before_spark_starts(tmp_path: Path, args: list[str], message: str) -> None:
    shown = CliRunner().invoke(main, ["--json", "audit", "--sink", str(tmp_path), *args])
    assert shown.exit_code == 2
    assert json.loads(shown.stdout) == {"error": {"type": "UsageError", "message": message}}
