"""Fuzzing of the savepoint reader: every real savepoint and checkpoint in fixtures/, mutated as a hostile user
would, read by `inspect_savepoint`, `read_keyed_state` (keyed state too) and the data source's `keyed` table
(`keyed_batches`, every run of a state's entries read as a run, however short) under a time and memory limit per
case.

    .venv/bin/python -m tests.fuzz_savepoints --cases 1000000 --workers 2      # the long run (make fuzz)
    .venv/bin/python -m tests.fuzz_savepoints --seconds 60                     # a short run

Mutations, one per case, of a fresh copy of one fixture directory:

- `flip`: 1-8 bytes of `_metadata` or of a state file XORed with a random mask;
- `truncate`: `_metadata` or a state file cut short;
- `inflate`: a 2- or 4-byte big-endian field that holds a small number (a length or count) set to an absurd one;
- `path`: a `writeUTF` path string of `_metadata` (a state file name or `file:` URI) rewritten to an absolute path,
  a `../` escape, a URI (s3, hdfs, gs, http), the name of a FIFO, a symlink to a device or to a file outside;
- `special`: `_metadata` or a state file replaced by a FIFO, a symlink to /dev/zero, a directory or a sparse 8 GiB
  file;
- `class`: a Java class name inside Java-serialized state replaced by one that runs code when deserialized by a
  JVM (the reader parses Java serialization as data, so nothing may change but the decoded text).

A case passes when the reader returns or raises `InputError`, within `--case-seconds` and without exceeding the
worker's address-space limit. It fails on any other exception, a hang, a `MemoryError`, a worker crash, a read
outside the case's directory, a network call or a process start. Workers are separate processes (RLIMIT_AS),
so a blow-up ends one worker, not the run; a hang is interrupted by SIGALRM.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import queue
import random
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from splitaudit.audit.checks import keyed_columns
from splitaudit.audit.checks.tables import keyed_batches
from splitaudit.errors import InputError
from splitaudit.savepoint.fileio import SavepointFiles
from splitaudit.savepoint_view import inspect_savepoint, read_keyed_state

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STRATEGIES = ("flip", "truncate", "inflate", "path", "special", "class")
ABSURD = (0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 0x10000000, 0xFFFF, 0x8000)
# Class names Java deserialization gadget chains use; in Java serialization a class name is a writeUTF string.
DANGEROUS_CLASSES = (
    "java.lang.Runtime",
    "java.lang.ProcessBuilder",
    "javax.script.ScriptEngineManager",
    "com.sun.rowset.JdbcRowSetImpl",
    "org.apache.commons.collections.functors.InvokerTransformer",
    "org.codehaus.groovy.runtime.MethodClosure",
)
HOSTILE_PATHS = (
    "/etc/passwd",
    "../../../../../../../../../../etc/passwd",
    "s3://bucket/state",
    "hdfs://namenode:8020/state",
    "gs://bucket/state",
    "http://127.0.0.1:9/state",
    "fifo",
    "device-link",
    "outside-link",
)


class ViolationError(Exception):
    """The reader did something no input may make it do (a network call, a process start, a read outside)."""


class CaseTimeoutError(Exception):
    """SIGALRM: the case ran past its time limit."""


@dataclass
class Summary:
    """What a run found: cases per strategy and outcome, and every failure with its seed to replay it."""

    cases: int = 0
    seconds: float = 0.0
    outcomes: Counter[str] = field(default_factory=Counter)
    strategies: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return len(self.failures)

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "seconds": round(self.seconds, 1),
            "cases_per_second": round(self.cases / self.seconds, 1) if self.seconds else 0.0,
            "outcomes": dict(self.outcomes),
            "strategies": dict(self.strategies),
            "failed": self.failed,
            "failures": self.failures[:50],
        }


def corpus() -> list[Path]:
    """Every snapshot directory of the fixtures (the folder holding each `_metadata`)."""
    return sorted({metadata.parent for metadata in FIXTURES.rglob("_metadata")})


def _utf_strings(data: bytes, predicate: Any) -> list[tuple[int, int]]:
    """(start, end) of every writeUTF string whose text satisfies `predicate` (start = its length prefix)."""
    found = []
    for at in range(len(data) - 2):
        length = struct.unpack_from(">H", data, at)[0]
        if 4 <= length <= 512 and at + 2 + length <= len(data):
            try:
                text = data[at + 2 : at + 2 + length].decode("ascii")
            except UnicodeDecodeError:
                continue
            if text.isprintable() and predicate(text):
                found.append((at, at + 2 + length))
    return found


def _utf(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">H", len(raw)) + raw


def mutate_bytes(data: bytes, rng: random.Random, strategy: str) -> tuple[bytes, str] | None:
    """The byte strategies (`flip`, `truncate`, `inflate`) applied to a file's bytes, and what was done; None for
    another strategy, or bytes too short for this one."""
    if strategy == "flip" and data:
        out = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] ^= rng.randint(1, 255)
        return bytes(out), "flip"
    if strategy == "truncate" and data:
        cut = rng.randrange(len(data))
        return data[:cut], f"truncate at {cut}:"
    if strategy == "inflate" and len(data) > 4:
        small = [at for at in range(len(data) - 4) if 0 < struct.unpack_from(">I", data, at)[0] < 4096]
        at = rng.choice(small) if small else rng.randrange(len(data) - 4)
        wide = rng.random() < 0.7
        packed = struct.pack(">I", rng.choice(ABSURD)) if wide else struct.pack(">H", rng.choice(ABSURD) & 0xFFFF)
        return data[:at] + packed + data[at + len(packed) :], f"inflate at {at}:"
    return None


def mutate(case_dir: Path, rng: random.Random, strategy: str) -> str:
    """Apply one mutation of `strategy` to the snapshot copy in `case_dir`; describe it."""
    metadata = case_dir / "_metadata"
    files = sorted(p for p in case_dir.rglob("*") if p.is_file() and p.name != "_metadata")
    target = metadata if not files or rng.random() < 0.7 else rng.choice(files)
    mutated = mutate_bytes(target.read_bytes(), rng, strategy)
    if mutated is not None:
        target.write_bytes(mutated[0])
        return f"{mutated[1]} {target.name}"
    if strategy == "path":
        data = metadata.read_bytes()
        names = _utf_strings(data, lambda t: t.startswith(("file:", "/")) or (len(t) == 36 and t.count("-") == 4))
        if names:
            start, end = rng.choice(names)
            hostile = rng.choice(HOSTILE_PATHS)
            metadata.write_bytes(data[:start] + _utf(hostile) + data[end:])
            _make_special_names(case_dir)
            return f"path -> {hostile}"
    if strategy == "special":
        victim = rng.choice([metadata, *files])
        kind = rng.choice(("fifo", "device", "directory", "sparse"))
        victim.unlink()
        if kind == "fifo":
            os.mkfifo(victim)
        elif kind == "device":
            victim.symlink_to("/dev/zero")
        elif kind == "directory":
            victim.mkdir()
        else:
            with victim.open("wb") as sparse:
                sparse.truncate(8 << 30)
        return f"special {victim.name} -> {kind}"
    if strategy == "class":
        data = metadata.read_bytes()
        names = _utf_strings(data, lambda t: t.startswith(("org.apache.", "java.", "[L")) and "." in t)
        if names:
            start, end = rng.choice(names)
            metadata.write_bytes(data[:start] + _utf(rng.choice(DANGEROUS_CLASSES)) + data[end:])
            return "class name replaced"
    data = metadata.read_bytes()
    metadata.write_bytes(data[: rng.randrange(len(data))] if data else b"")
    return f"{strategy} (fell back to truncate)"


def _make_special_names(case_dir: Path) -> None:
    """The files the `path` strategy's hostile names point at: a FIFO and two symlinks leading out."""
    if not (case_dir / "fifo").exists():
        os.mkfifo(case_dir / "fifo")
    if not (case_dir / "device-link").is_symlink():
        (case_dir / "device-link").symlink_to("/dev/zero")
    if not (case_dir / "outside-link").is_symlink():
        (case_dir / "outside-link").symlink_to(case_dir.parent / "secret")


def _guard_process() -> None:
    """Make a network call or a process start raise ViolationError inside the worker."""

    def forbidden(*args: object, **kwargs: object) -> Any:
        raise ViolationError(f"network or process call: {args[:2]}")

    socket.getaddrinfo = forbidden
    socket.socket.connect = forbidden  # type: ignore[method-assign]
    subprocess.Popen.__init__ = forbidden  # type: ignore[method-assign]
    os.execv = forbidden


def _on_alarm(signum: int, frame: object) -> None:
    raise CaseTimeoutError


def run_case(case_dir: Path, seed: int, case_seconds: float) -> tuple[str, str, str]:
    """(strategy, outcome, detail) of one case; outcome is ok, input_error or a failure kind."""
    rng = random.Random(seed)
    strategy = rng.choice(STRATEGIES)
    source = rng.choice(corpus())
    shutil.rmtree(case_dir, ignore_errors=True)
    shutil.copytree(source, case_dir, symlinks=True)
    described = mutate(case_dir, rng, strategy)
    outcome, detail = read_case(case_dir, case_seconds)
    return strategy, outcome, f"{source.relative_to(FIXTURES)}: {described}: {detail}"


def read_case(case_dir: Path, case_seconds: float) -> tuple[str, str]:
    """(outcome, detail) of reading the mutated snapshot in `case_dir` whole, keyed state included, confined to
    it and within `case_seconds`."""
    inside = os.path.realpath(case_dir) + os.sep
    real_read = SavepointFiles._read

    def confined_read(self: SavepointFiles, fs: Any, path: str, *rest: Any, **options: Any) -> bytes:
        data = real_read(self, fs, path, *rest, **options)  # refused reads raise InputError before this line
        if not os.path.realpath(path).startswith(inside):
            raise ViolationError(f"read outside the savepoint directory: {path}")
        return data

    SavepointFiles._read = confined_read  # type: ignore[method-assign]
    run_entries = keyed_columns.RUN_ENTRIES
    keyed_columns.RUN_ENTRIES = 1  # the fixtures' runs are short: each is read as a run, so the fuzzing reaches them
    signal.setitimer(signal.ITIMER_REAL, case_seconds)
    try:
        inspect_savepoint(str(case_dir))
        for _ in read_keyed_state(str(case_dir)):  # keyed state, one key group at a time
            pass
        for _ in keyed_batches(str(case_dir)):  # the same as the data source's table: runs of entries too
            pass
        outcome, detail = "ok", ""
    except InputError:
        outcome, detail = "input_error", ""
    except CaseTimeoutError:
        outcome, detail = "hang", ""
    except MemoryError:
        outcome, detail = "memory", ""
    except ViolationError as ex:
        outcome, detail = "violation", str(ex)
    except Exception as ex:  # any other exception is what the fuzzer exists to find
        outcome, detail = "exception", "".join(traceback.format_exception_only(ex)).strip()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        SavepointFiles._read = real_read  # type: ignore[method-assign]
        keyed_columns.RUN_ENTRIES = run_entries
    return outcome, detail


CaseRunner = Callable[[Path, int, float], tuple[str, str, str]]


def _worker(
    seeds: Any, results: Any, memory_bytes: int, case_seconds: float, workdir: str, run: CaseRunner = run_case
) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    signal.signal(signal.SIGALRM, _on_alarm)
    _guard_process()
    case_dir = Path(workdir) / f"case-{os.getpid()}"
    while (seed := seeds.get()) is not None:
        results.put((seed, *run(case_dir, seed, case_seconds)))


def fuzz(
    cases: int | None,
    seconds: float | None,
    seed: int,
    workers: int,
    memory_mib: int,
    case_seconds: float,
    run: CaseRunner = run_case,
) -> Summary:
    """Run cases seed, seed+1, … on `workers` processes until `cases` are done or `seconds` have passed; `run`
    makes and reads one case (a module-level function: workers are spawned)."""
    summary = Summary()
    # spawn, not fork: the caller may have threads (a test session's Spark and Kafka clients), and a fork copies
    # their locks in whatever state they are in.
    context = multiprocessing.get_context("spawn")
    started = time.monotonic()
    wait = case_seconds * 4 + 60  # longer than any case may take, import of a fresh worker included
    with tempfile.TemporaryDirectory(prefix="splitaudit-fuzz-") as workdir:
        (Path(workdir) / "secret").write_bytes(b"outside every savepoint")
        next_seed = seed

        def more() -> bool:
            in_time = seconds is None or time.monotonic() - started < seconds
            return in_time and (cases is None or next_seed - seed < cases)

        while more():
            seeds, results = context.Queue(), context.Queue()
            args = (seeds, results, memory_mib << 20, case_seconds, workdir, run)
            pool = [context.Process(target=_worker, args=args, daemon=True) for _ in range(workers)]
            for process in pool:
                process.start()
            pending = 0
            while pending < 2 * workers and more():
                seeds.put(next_seed)
                next_seed, pending = next_seed + 1, pending + 1
            while pending:
                try:
                    case_seed, strategy, outcome, detail = results.get(timeout=wait)
                except queue.Empty:  # a worker died or hangs outside any case: a failure, and a fresh pool
                    alive = sum(process.is_alive() for process in pool)
                    summary.failures.append(
                        {"seed": None, "outcome": "worker_lost", "detail": f"no result in {wait:.0f} s, {alive} alive"}
                    )
                    break
                pending -= 1
                summary.cases += 1
                summary.strategies[strategy] += 1
                summary.outcomes[outcome] += 1
                if outcome not in ("ok", "input_error"):
                    summary.failures.append({"seed": case_seed, "outcome": outcome, "detail": detail})
                if more():
                    seeds.put(next_seed)
                    next_seed, pending = next_seed + 1, pending + 1
            for _ in pool:
                seeds.put(None)
            for process in pool:
                process.join(10)
                if process.is_alive():
                    process.kill()
            if pending:
                continue  # the pool was lost: go on with a fresh one while time and cases remain
    summary.seconds = time.monotonic() - started
    return summary


def main(run: CaseRunner = run_case, description: str | None = __doc__) -> int:
    """The command line of a fuzzer on this harness: `run` makes and reads one case."""
    parser = argparse.ArgumentParser(description=(description or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, help="stop after this many cases")
    parser.add_argument("--seconds", type=float, help="stop after this long (default: 60 unless --cases)")
    parser.add_argument("--seed", type=int, default=0, help="the first case's seed (a failure names its own)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--memory-mib", type=int, default=1024, help="address-space limit of each worker")
    parser.add_argument("--case-seconds", type=float, default=10.0, help="time limit of one case")
    args = parser.parse_args()
    seconds = args.seconds if args.seconds is not None or args.cases is not None else 60.0
    summary = fuzz(args.cases, seconds, args.seed, args.workers, args.memory_mib, args.case_seconds, run)
    json.dump(summary.to_json(), sys.stdout, indent=2)
    print()
    return 1 if summary.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
