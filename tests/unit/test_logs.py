"""The libraries' logs go to the named file, not to the console: librdkafka's lines (a real client failing to
reach a closed port on 127.0.0.1) land in the file, and nothing is printed on stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# A real admin client against a port nobody listens on: librdkafka logs the refused connection.
SCRIPT = """
import sys
from pathlib import Path
from splitaudit.clients import kafka
from splitaudit.logs import log_libraries_to
if sys.argv[1] != "-":
    log_libraries_to(Path(sys.argv[1]))
kafka.admin("127.0.0.1:9").poll(3)
"""


def _run(log: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SCRIPT, log], capture_output=True, text=True, timeout=60, check=True)


def test_kafka_client_lines_go_to_the_named_file_not_stderr(tmp_path: Path) -> None:
    log = tmp_path / "run" / "libraries.log"  # its folder does not exist yet: made when the first line comes
    result = _run(str(log))
    assert result.stderr == ""
    lines = log.read_text().splitlines()
    assert lines
    assert all(" splitaudit.kafka " in line for line in lines)
    assert any("Connect to ipv4#127.0.0.1:9 failed" in line for line in lines)


def test_without_a_named_file_librdkafka_prints_as_it_always_does() -> None:
    result = _run("-")
    assert "Connect to ipv4#127.0.0.1:9 failed" in result.stderr
