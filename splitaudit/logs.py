"""Where the libraries' own logs go: Spark's JVM (log4j, `NativeCodeLoader`), its Python workers, and the Kafka
clients (librdkafka's `%4|…` lines).

The command line shows splitaudit's progress only: it names a file here (in the run directory, or the audit's
log file) and the libraries write there instead of on the console, unless `--debug`. Library users who name no
file see the libraries' output where they always print it.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path

# The Kafka clients log through this logger (their `logger` setting) once a file is named.
KAFKA_LOGGER = logging.getLogger("splitaudit.kafka")
KAFKA_LOGGER.propagate = False

_log_file: Path | None = None


def log_libraries_to(path: Path) -> None:
    """From now on, the libraries write their logs to `path` (appended). Nothing is created until the first
    line is written: a run directory that must be new is still new when the command checks it."""
    global _log_file
    path = path.resolve()
    for handler in list(KAFKA_LOGGER.handlers):
        KAFKA_LOGGER.removeHandler(handler)
        handler.close()
    handler = _FileInFolder(path, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    KAFKA_LOGGER.addHandler(handler)
    KAFKA_LOGGER.setLevel(logging.INFO)
    _log_file = path


class _FileInFolder(logging.FileHandler):
    """A log file whose folder is created when the first line is written."""

    def _open(self) -> io.TextIOWrapper:
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()


def library_log() -> Path | None:
    """The file the libraries log to, or None when they print where they like (no file named)."""
    return _log_file
