"""The CLI end to end, as a user runs it: separate processes for up, status and down, and the demo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import psutil
import pytest

pytestmark = pytest.mark.integration

SPLITAUDIT = [sys.executable, "-m", "splitaudit"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SPLITAUDIT, *args], capture_output=True, text=True, timeout=600, check=False)


def _our_pids(workdir: Path) -> set[int]:
    """Every live process whose command line or working directory mentions the run directory."""
    found = set()
    for proc in psutil.process_iter(["pid", "cmdline", "cwd"]):
        try:
            text = " ".join(proc.info["cmdline"] or []) + " " + (proc.info["cwd"] or "")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if str(workdir) in text and proc.info["pid"] != os.getpid():
            found.add(proc.info["pid"])
    return found


def test_up_status_down_from_separate_processes_leaves_nothing_running(tmp_path: Path) -> None:
    workdir = tmp_path / "stack"
    up = _cli("--json", "stack", "up", "--workdir", str(workdir))
    assert up.returncode == 0, up.stderr
    started = {s["name"]: s["pid"] for s in json.loads(up.stdout)["services"]}
    assert set(started) == {"kafka", "flink-jobmanager", "flink-taskmanager"}
    # the caller (the `up` process) is gone; the servers must outlive it
    assert all(psutil.pid_exists(pid) for pid in started.values())

    again = _cli("stack", "up", "--workdir", str(workdir))
    assert again.returncode == 2
    assert "already running" in again.stderr

    status = _cli("--json", "stack", "status", "--workdir", str(workdir))
    assert status.returncode == 0, status.stderr
    document = json.loads(status.stdout)
    assert document["up"] is True
    assert {s["name"]: s["detail"] for s in document["services"]} == dict.fromkeys(started, "healthy")

    down = _cli("--json", "stack", "down", "--workdir", str(workdir))
    assert down.returncode == 0, down.stderr
    assert {s["name"]: s["pid"] for s in json.loads(down.stdout)["services"]} == started
    assert not any(psutil.pid_exists(pid) for pid in started.values())
    assert _our_pids(workdir) == set()

    after = _cli("--json", "stack", "status", "--workdir", str(workdir))
    assert after.returncode == 3
    assert json.loads(after.stdout)["up"] is False


def test_demo_json_reports_the_savepoint_it_restored_from(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    demo = _cli("--json", "demo", "--workdir", str(run_dir))
    assert demo.returncode == 0, demo.stderr
    report = json.loads(demo.stdout)

    assert report["records_per_partition"] == {"0": 2500, "1": 2500, "2": 2500, "3": 2500}
    assert report["restored_from"] == report["savepoint_path"]
    savepoint = Path(urlparse(report["savepoint_path"]).path)
    assert savepoint.parent == run_dir / "savepoints"
    assert (savepoint / "_metadata").is_file()
    assert [step["name"].split(" ")[0] for step in report["steps"]] == [
        "stack",
        "create",
        "upload",
        "savepoint",
        "restore",
        "checkpoint",
        "stack",
    ]
    assert _our_pids(run_dir) == set()

    rerun = _cli("demo", "--workdir", str(run_dir))
    assert rerun.returncode == 2
    assert "already holds a run" in rerun.stderr
