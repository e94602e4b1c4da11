"""The stack's Spark health check: a session on the given master runs one known aggregation."""

from __future__ import annotations

import time
from pathlib import Path

from splitaudit.clients.spark import spark_session
from splitaudit_lab.stack.results import ServiceStatus


def spark_check(master: str, workdir: Path) -> ServiceStatus:
    """Start a session on `master`, run one aggregation, stop it; report as a stack service."""
    started = time.monotonic()
    try:
        session = spark_session(master, app_name="splitaudit-check", local_dir=workdir / "spark")
        try:
            total = session.range(1_000_000).selectExpr("sum(id) AS s").collect()[0]["s"]
            version = session.version
        finally:
            session.stop()
    except Exception as ex:  # any failure to start or query is the health check's answer, not a crash
        return ServiceStatus("spark", None, False, master, f"failed: {type(ex).__name__}: {ex}"[:300])
    healthy = total == 499_999_500_000
    detail = f"Spark {version}, query {'ok' if healthy else 'WRONG'} in {time.monotonic() - started:.1f} s"
    return ServiceStatus("spark", None, healthy, master, detail)
