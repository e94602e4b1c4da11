"""The command line starts light: importing it, and `--json inspect` of a real savepoint, load no Spark, no
pyarrow (its filesystem layer alone costs about a second), no HTTP or Kafka client and no rich.

Each check runs in a fresh interpreter, so modules this test session already imported do not hide an import.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


def test_json_inspect_loads_no_heavy_library(tmp_path: Path) -> None:
    code, modules, stdout = _loaded(tmp_path, "--json", "inspect", str(BEAM_SAVEPOINT))
    assert code == 0, stdout
    assert sorted(modules & {*HEAVY, "rich"}) == []
    # It did read the Beam splits (fastavro decodes their checkpoint marks): the probe ran a real inspect.
    assert "fastavro" in modules
    sources = [op["source"] for op in json.loads(stdout)["operators"] if op["source"] is not None]
    assert len(sources) == 1
    assert len(sources[0]["reader_splits"]) > 0


def test_inspect_of_a_file_uri_reads_the_local_disk_without_pyarrow(tmp_path: Path) -> None:
    code, modules, stdout = _loaded(tmp_path, "--json", "inspect", f"file:{BEAM_SAVEPOINT}")
    assert code == 0, stdout
    assert "pyarrow" not in modules
    assert json.loads(stdout)["path"] == f"{BEAM_SAVEPOINT}/_metadata"
