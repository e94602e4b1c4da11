"""The committed stack lock is what the dependency-list poms under beam_pipelines/java/stack/ (resolved by Maven)
and PyPI's index give now: `tools/stack_lock.py --check` passes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from splitaudit.home import REPO_ROOT

pytestmark = pytest.mark.integration


def test_the_committed_stack_lock_is_what_the_poms_and_pypi_resolve() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "stack_lock.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "is what the poms and PyPI give" in result.stderr
