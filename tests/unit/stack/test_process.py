"""Pid files: a process is stopped only when the pid file really names it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psutil
import pytest

from splitaudit.errors import ExternalError, UsageError
from splitaudit_lab.stack import process

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_spawn_records_the_process_and_stop_ends_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids" / "sleeper.pid"
    record = process.spawn("sleeper", SLEEPER, pid_file=pid_file, log_file=tmp_path / "sleeper.log")
    assert record.process() is not None
    assert json.loads(pid_file.read_text())["pid"] == record.pid

    stopped = process.stop(pid_file)

    assert stopped == record
    assert not pid_file.exists()
    assert not psutil.pid_exists(record.pid) or psutil.Process(record.pid).status() == psutil.STATUS_ZOMBIE


def test_spawn_refuses_a_second_copy(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleeper.pid"
    process.spawn("sleeper", SLEEPER, pid_file=pid_file, log_file=tmp_path / "a.log")
    try:
        with pytest.raises(UsageError, match="already running"):
            process.spawn("sleeper", SLEEPER, pid_file=pid_file, log_file=tmp_path / "b.log")
    finally:
        process.stop(pid_file)


def test_stop_leaves_a_process_that_reused_the_pid_alone(tmp_path: Path) -> None:
    """A pid file whose start time does not match the live process names a stranger: never signal it."""
    pid_file = tmp_path / "sleeper.pid"
    record = process.spawn("sleeper", SLEEPER, pid_file=pid_file, log_file=tmp_path / "s.log")
    stranger = dict(record.__dict__, create_time=record.create_time - 3600)
    pid_file.write_text(json.dumps(stranger))
    try:
        assert process.stop(pid_file) is not None
        assert psutil.Process(record.pid).status() != psutil.STATUS_ZOMBIE
        assert psutil.Process(record.pid).is_running()
    finally:
        psutil.Process(record.pid).kill()
        psutil.Process(record.pid).wait(10)


def test_stop_without_a_pid_file_does_nothing(tmp_path: Path) -> None:
    assert process.stop(tmp_path / "absent.pid") is None


def test_a_garbled_pid_file_is_a_usage_error(tmp_path: Path) -> None:
    pid_file = tmp_path / "x.pid"
    pid_file.write_text("12345")
    with pytest.raises(UsageError, match="not a splitaudit pid file"):
        process.PidRecord.read(pid_file)


def test_wait_until_reports_a_process_that_died_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "dies.log"
    record = process.spawn(
        "dies",
        [sys.executable, "-c", "print('port already in use'); raise SystemExit(1)"],
        pid_file=tmp_path / "dies.pid",
        log_file=log,
    )
    with pytest.raises(ExternalError, match="dies exited before the server came up") as failure:
        process.wait_until("the server came up", lambda: False, timeout=30, alive=record, log=log)
    assert "port already in use" in str(failure.value)


def test_free_port_is_bindable_on_loopback_below_the_ephemeral_range_and_never_handed_out_twice() -> None:
    import socket

    ports = [process.free_port() for _ in range(50)]
    with socket.socket() as server:
        server.bind(("127.0.0.1", ports[0]))
    assert len(set(ports)) == 50
    assert all(process.PORTS_FROM <= port < process.ephemeral_range_start() for port in ports)


def test_the_ephemeral_range_is_read_from_the_kernel_or_taken_as_linux_default(tmp_path: Path) -> None:
    (tmp_path / "range").write_text("40000\t60999\n")
    assert process.ephemeral_range_start(tmp_path / "range") == 40000
    assert process.ephemeral_range_start(tmp_path / "absent") == 32768
    (tmp_path / "garbled").write_text("")
    assert process.ephemeral_range_start(tmp_path / "garbled") == 32768
