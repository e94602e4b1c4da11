"""`splitaudit --json demo` as a user runs it: its JSON contract, stock beside patched, in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.integration

SIDE_KEYS = {"run_dir", "sink_path", "sink_format", "savepoint_before", "savepoint_after", "expected_records"}


def test_demo_json_puts_stock_beside_patched(tmp_path: Path) -> None:
    run_dir = tmp_path / "demo"
    result = subprocess.run(
        [sys.executable, "-m", "splitaudit", "--json", "demo", "--workdir", str(run_dir), "--records", "2000"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report) == {"run_dir", "seconds", "as_expected", "stock", "patched", "added_partitions", "upstream_fix"}
    assert (report["as_expected"], report["added_partitions"], report["upstream_fix"]) == (True, 0, None)
    for variant in ("stock", "patched"):
        side = report[variant]
        assert set(side) >= SIDE_KEYS
        assert side["run_dir"] == str(run_dir / variant)
        assert side["sink_path"] == str(run_dir / variant / "sink")
        assert side["sink_format"] == "json"
        assert side["expected_records"] == 4000
        for savepoint in (side["savepoint_before"], side["savepoint_after"]):
            assert (Path(urlparse(savepoint).path) / "_metadata").is_file()
    stock, patched = report["stock"], report["patched"]
    assert_the_verdict_of_2000_records(stock, patched)
    assert (stock["duplicate_rows"], patched["duplicate_rows"]) == (2000, 0)
    assert stock["audit"]["summary"]["double_assigned_partitions"] == 4
    assert [m["partitions_from"] for m in patched["audit"]["assignment"]] == [
        f"--partitions 4 (topic {patched['topics'][0]})"
    ]


def assert_the_verdict_of_2000_records(stock: dict[str, Any], patched: dict[str, Any]) -> None:
    """The two sides of `demo --records 2000`, per partition and in the auditor's findings."""
    # 1,000 offsets per partition; stock reads the 500 produced after the savepoint twice.
    assert [(p["sink_rows"], p["duplicate_rows"], p["double_read_offsets"]) for p in stock["partitions"]] == [
        (1500, 500, 500)
    ] * 4
    assert [(p["sink_rows"], p["duplicate_rows"], p["missing_offsets"]) for p in patched["partitions"]] == [
        (1000, 0, 0)
    ] * 4
    # The verdict is the auditor's: double assignment of offsets 500..999 in every partition, and nothing else.
    assert [(f["kind"], f["partition"], f["count"], f["offset_ranges"]) for f in stock["audit"]["findings"]] == [
        ("double_assignment", p, 500, [[500, 999]]) for p in range(4)
    ]
    assert patched["audit"]["findings"] == []
