"""The command line starts light: importing it, every command's `--help`, and `--json inspect` of a real
savepoint load no Spark, no pyarrow (its filesystem layer alone costs about a second), no HTTP or Kafka client
and no rich; `inspect` loads no other command's packages (audit, guard, watch, the lab's scenarios and stack);
`guard` judges a real savepoint without Spark.

Each check runs in a fresh interpreter, so modules this test session already imported do not hide an import.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from splitaudit.patch.jar import ENUMERATOR_CLASS, FINALIZE_MARKER, FLINK_RUNNER_CLASS, UNBOUNDED_READER_CLASS
from tests.unit.conftest import FIXTURES

HEAVY = ("pyspark", "pyarrow", "pyarrow.fs", "numpy", "requests", "confluent_kafka", "psutil")
# A Beam KafkaIO savepoint: Java serialization, Avro checkpoint marks and both split families of the enumerator.
BEAM_SAVEPOINT = FIXTURES / "beam_flink_source" / "restore_stock_after"

# Runs the command line as `splitaudit` does and, on the way out, writes which modules were loaded.
PROBE = """
import atexit, json, sys
atexit.register(lambda: open(sys.argv[1], "w").write(json.dumps(sorted(sys.modules))))
from splitaudit.cli import main
main(sys.argv[2:], prog_name="splitaudit")
"""


def _loaded(tmp_path: Path, *args: str) -> tuple[int, set[str], str]:
    record = tmp_path / "modules.json"
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(record), *args], capture_output=True, text=True, timeout=120
    )
    return result.returncode, set(json.loads(record.read_text())), result.stdout


def test_importing_the_cli_loads_no_heavy_library(tmp_path: Path) -> None:
    code, modules, _ = _loaded(tmp_path, "--help")
    assert code == 0
    assert sorted(modules & {*HEAVY, "rich", "fastavro"}) == []


@pytest.mark.parametrize(
    "command",
    [
        ("setup",),
        ("stack", "up"),
        ("stack", "status"),
        ("stack", "down"),
        ("smoke",),
        ("patch-jar",),
        ("lineage-kit",),
        ("scenario",),
        ("demo",),
        ("matrix",),
        ("audit",),
        ("guard",),
        ("watch",),
        ("diff",),
        ("inspect",),
    ],
    ids=lambda command: " ".join(command),
)
def test_every_commands_help_loads_no_heavy_library(tmp_path: Path, command: tuple[str, ...]) -> None:
    code, modules, stdout = _loaded(tmp_path, *command, "--help")
    assert code == 0
    assert stdout.startswith(f"Usage: splitaudit {' '.join(command)} ")
    assert sorted(modules & {*HEAVY, "rich", "fastavro"}) == []


def test_guard_judges_a_savepoint_without_spark(tmp_path: Path) -> None:
    # A stock Beam 2.62.0 job jar, as its Maven metadata and FlinkSource enumerator (without the fix) say.
    jar = tmp_path / "job.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr(
            "META-INF/maven/org.apache.beam/beam-runners-flink-1.19/pom.properties",
            "groupId=org.apache.beam\nversion=2.62.0\n",
        )
        archive.writestr(FLINK_RUNNER_CLASS, b"\xca\xfe\xba\xbe")
        archive.writestr(ENUMERATOR_CLASS, b"\xca\xfe\xba\xbe stock")
        archive.writestr(UNBOUNDED_READER_CLASS, b"\xca\xfe\xba\xbe " + FINALIZE_MARKER)  # 2.56+ finalizes
    log = tmp_path / "libraries.log"
    args = ("--json", "guard", "--savepoint", str(BEAM_SAVEPOINT), "--jar", str(jar), "--log", str(log))
    code, modules, stdout = _loaded(tmp_path, *args)
    assert code == 1, stdout
    # No Spark, and no Kafka client without --bootstrap (rich draws the progress lines on stderr).
    assert sorted(modules & {"pyspark", "pyarrow.fs", "requests", "confluent_kafka", "psutil"}) == []
    report = json.loads(stdout)
    assert report["safe"] is False
    held = [(p["partition"], p["next_offset"]) for p in report["sources"][0]["partitions"]]
    assert held == [(0, 10000), (1, 10000), (2, 10000), (3, 10000)]
    assert [(f["kind"], f["partition"]) for f in report["findings"]] == [
        ("restore_rereads_partition", 0),
        ("restore_rereads_partition", 1),
        ("restore_rereads_partition", 2),
        ("restore_rereads_partition", 3),
    ]


def test_json_inspect_loads_no_heavy_library(tmp_path: Path) -> None:
    code, modules, stdout = _loaded(tmp_path, "--json", "inspect", str(BEAM_SAVEPOINT))
    assert code == 0, stdout
    assert sorted(modules & {*HEAVY, "rich"}) == []
    # Nor the RocksDB native reader (and its CRC-32C library): this savepoint has no native snapshot.
    assert sorted(m for m in modules if m.startswith("splitaudit.savepoint.rocksdb") or m == "crc32c") == []
    # It did read the Beam splits (fastavro decodes their checkpoint marks): the probe ran a real inspect.
    assert "fastavro" in modules
    sources = [op["source"] for op in json.loads(stdout)["operators"] if op["source"] is not None]
    assert len(sources) == 1
    assert len(sources[0]["reader_splits"]) > 0


# The packages of the other commands (the watch lives in guard/) and of the lab, and the other commands' modules:
# `inspect` (the group imports a command's module only when it runs) loads none of them.
OTHER_COMMANDS = (
    "splitaudit.audit",
    "splitaudit.guard",
    "splitaudit_lab.scenario",
    "splitaudit_lab.stack",
    "splitaudit.cli.",
)
# What the console's inspect tables are made of (`audit/checks/savepoint_tables.py`, the data source's rows).
INSPECT_TABLES = {
    "splitaudit.audit",
    "splitaudit.audit.checks",
    "splitaudit.audit.checks.savepoint_tables",
    "splitaudit.audit.checks.rows",
}


@pytest.mark.parametrize("args", [("--json", "inspect"), ("inspect",)], ids=["json", "console"])
def test_inspect_loads_no_other_commands_package(tmp_path: Path, args: tuple[str, ...]) -> None:
    code, modules, stdout = _loaded(tmp_path, *args, str(BEAM_SAVEPOINT))
    assert code == 0, stdout
    allowed = {"splitaudit.cli.context", "splitaudit.cli.group", "splitaudit.cli.options", "splitaudit.cli.settings"}
    allowed.add("splitaudit.cli.savepoints")
    if args == ("inspect",):
        allowed |= INSPECT_TABLES
    others = sorted(m for m in modules - allowed if m.startswith(OTHER_COMMANDS))
    assert others == []
    # the probe did read the savepoint (its splits' decoders were loaded)
    assert "splitaudit.splits.beam" in modules


def test_inspect_of_a_file_uri_reads_the_local_disk_without_pyarrow(tmp_path: Path) -> None:
    code, modules, stdout = _loaded(tmp_path, "--json", "inspect", f"file:{BEAM_SAVEPOINT}")
    assert code == 0, stdout
    assert "pyarrow" not in modules
    assert json.loads(stdout)["path"] == f"{BEAM_SAVEPOINT}/_metadata"


def test_a_savepoint_only_audit_loads_no_spark_and_no_pyarrow(tmp_path: Path) -> None:
    before = FIXTURES / "beam_flink_source" / "restore_stock_before"
    args = ("--json", "audit", "--savepoint", str(BEAM_SAVEPOINT), "--before", str(before), "--partitions", "4")
    code, modules, stdout = _loaded(tmp_path, *args, "--log", str(tmp_path / "libraries.log"))
    assert code == 0, stdout
    assert sorted(modules & set(HEAVY)) == []
    audit = json.loads(stdout)
    assert audit["findings"] == []
    # Each of the 4 partitions held once, by subtask 0 (0, 2) or 1 (1, 3), at next offset 10,000.
    held = [
        (p["partition"], p["status"], [(h["subtask"], h["next_offset"]) for h in p["holders"]])
        for p in audit["assignment"][0]["partitions"]
    ]
    assert held == [(0, "ok", [(0, 10000)]), (1, "ok", [(1, 10000)]), (2, "ok", [(0, 10000)]), (3, "ok", [(1, 10000)])]
