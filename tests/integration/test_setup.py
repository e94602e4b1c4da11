"""Setup is idempotent: once `make setup` ran, a second run installs nothing, even with no network at all."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_second_setup_run_is_a_no_op_without_network() -> None:
    # `unshare -n` runs setup in a new network namespace with no interface up: any download would fail.
    result = subprocess.run(
        ["unshare", "-n", sys.executable, "-m", "splitaudit", "--json", "setup"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    states = {c["name"]: c["state"] for c in json.loads(result.stdout)["components"]}
    assert states == dict.fromkeys(("flink", "kafka-broker", "smoke-job", "beam-pipeline"), "present")
