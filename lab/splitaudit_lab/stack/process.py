"""Processes the stack starts: spawned detached, recorded in pid files, stopped only by those pid files.

A pid file records the pid together with the process's start time, so `down` never signals a stranger that
reused the pid after a crash or a reboot.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import socket
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from splitaudit.errors import ExternalError, UsageError
from splitaudit.polling import poll


@dataclass(frozen=True)
class PidRecord:
    """What a pid file says: which process, started when, doing what."""

    name: str
    pid: int
    create_time: float
    argv0: str

    @classmethod
    def read(cls, pid_file: Path) -> PidRecord | None:
        try:
            document = json.loads(pid_file.read_text())
            return cls(document["name"], int(document["pid"]), float(document["create_time"]), document["argv0"])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as ex:
            raise UsageError(f"{pid_file}: not a splitaudit pid file ({ex})") from ex

    def process(self) -> psutil.Process | None:
        """The live process this record names, or None if it ended (or the pid now belongs to another)."""
        try:
            process = psutil.Process(self.pid)
            if abs(process.create_time() - self.create_time) > 1.0:
                return None
            if process.status() == psutil.STATUS_ZOMBIE:
                return None
            return process
        except psutil.NoSuchProcess:
            return None


# Where `free_port` looks: below the kernel's ephemeral range, from this port up.
PORTS_FROM = 15000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_handed_out: set[int] = set()


def ephemeral_range_start(range_file: Path = EPHEMERAL_RANGE) -> int:
    """The first port the kernel hands to outgoing connections: Linux's configured range, else 32768 (Linux's
    default; macOS and Windows start at 49152)."""
    try:
        return int(range_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing holds right now, for a server to bind a moment later; never the same
    one twice in a process.

    Taken below the ephemeral range: a port from inside it (what binding port 0 gives) may become the local port of
    any outgoing connection before the server binds it, which once kept a JobManager from starting.
    """
    below = ephemeral_range_start()
    candidates = [port for port in range(PORTS_FROM, below) if port not in _handed_out]
    for port in random.sample(candidates, min(len(candidates), 200)):
        if _bindable(port):
            _handed_out.add(port)
            return port
    # No room below the range (or all of it in use): the kernel's pick, inside it.
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port


def spawn(
    name: str,
    argv: Sequence[str],
    *,
    pid_file: Path,
    log_file: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> PidRecord:
    """Start `argv` in its own session with output to `log_file`; record it in `pid_file`."""
    existing = PidRecord.read(pid_file)
    if existing is not None and existing.process() is not None:
        raise UsageError(f"{name} is already running as pid {existing.pid} ({pid_file}); stop it first")
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as log:
        child = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
    record = PidRecord(name, child.pid, psutil.Process(child.pid).create_time(), argv[0])
    pid_file.write_text(json.dumps(record.__dict__))
    return record


def stop(pid_file: Path, timeout: float = 30.0) -> PidRecord | None:
    """Stop the process of `pid_file` (SIGTERM, then SIGKILL after `timeout`) and remove the file."""
    record = PidRecord.read(pid_file)
    if record is None:
        return None
    process = record.process()
    if process is not None:
        try:
            process.terminate()
            try:
                process.wait(timeout)
            except psutil.TimeoutExpired:
                process.kill()
                process.wait(10)
        except psutil.NoSuchProcess:
            pass
    reap(record.pid)
    pid_file.unlink(missing_ok=True)
    return record


def reap(pid: int) -> None:
    """Collect the exit status if the process was our own child, so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def wait_until(
    what: str,
    check: Callable[[], bool],
    *,
    timeout: float,
    alive: PidRecord | None = None,
    log: Path | None = None,
) -> None:
    """Poll `check` until it is true; fail early if the process `alive` died, naming its log."""

    def ready() -> bool:
        if check():
            return True
        if alive is not None and alive.process() is None:
            reap(alive.pid)
            raise ExternalError(f"{alive.name} exited before {what}; see {log or 'its log'}{tail(log)}")
        return False

    poll(what, ready, timeout=timeout, last_seen=lambda: f"see {log or 'its log'}{tail(log)}")


def tail(log: Path | None, lines: int = 12) -> str:
    """The last lines of a log, indented, for an error message."""
    if log is None or not log.exists():
        return ""
    text = log.read_text(errors="replace").splitlines()[-lines:]
    return "\n  " + "\n  ".join(text) if text else ""


def java_executable() -> str:
    """The `java` the stack runs on: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise ExternalError("no `java` found (set JAVA_HOME or put Java 17 on PATH)")
    return candidate
