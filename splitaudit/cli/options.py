"""Options more than one command group shares: where the libraries log, and how a savepoint is read."""

from __future__ import annotations

import time
from pathlib import Path

import click

# The libraries' log file in a run directory (see `main`'s help).
LIBRARIES_LOG = "libraries.log"
LOG_FILE = click.option(
    "--log",
    "log_path",
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where Spark's and the Kafka clients' own logs go (appended; default "
    ".splitaudit/logs/COMMAND-<UTC time>.log; on the console with --debug).",
)


def default_log(command: str) -> Path:
    """The libraries' log file of a `command` run outside a run directory, when `--log` names none."""
    return Path(".splitaudit/logs") / time.strftime(f"{command}-%Y%m%dT%H%M%SZ.log", time.gmtime())


SINK_NAMING = click.option(
    "--sink-naming",
    metavar="TEMPLATE",
    help="How a custom FileNaming names the sink's files, for its ledger: the name with {start} and {end} (ISO "
    "instants or epoch millis), {pane}, {shard}, {shards} and {*} for what varies, e.g. "
    "'weather-{start}-{end}-pane{pane}-{shard}-of-{shards}.parquet'. Default: Beam's own names (TextIO's "
    "W-P-SSSSS-of-NNNNN, FileIO's defaultNaming).",
)
UIDS = click.option(
    "--uid",
    "uids",
    multiple=True,
    metavar="UID",
    help="Only the operator with this uid (repeatable). Flink 1.x files store only operator ids; the id "
    "is computed from the uid (murmur3_128, as Flink does) and the uid is shown beside it.",
)
ALLOW_EXTERNAL_STATE = click.option(
    "--allow-external-state",
    is_flag=True,
    help="Also read state files that the metadata names by absolute path or URI outside the savepoint directory "
    "(entropy-injected S3 paths, file-merging segments). Off by default: nothing outside it is read, and no "
    "path or URI from a file is resolved (no DNS lookup, no connection).",
)


def _size(value: str) -> int:
    """A byte count: digits, optionally followed by K, M or G (powers of 1024)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    number, unit = value[:-1] if value[-1:].upper() in "KMG" else value, value[-1:].upper()
    unit = unit if unit in "KMG" else ""
    if not number.isdigit() or int(number) < 1:
        raise click.BadParameter(f"{value!r} is not a size such as 1073741824, 512M or 2G")
    return int(number) * units[unit]


MAX_FILE_SIZE = click.option(
    "--max-file-size",
    metavar="SIZE",
    default="1G",
    show_default=True,
    callback=lambda _ctx, _param, value: _size(value),
    help="The largest _metadata or state file read (bytes, or with K, M, G); a larger one is bad input (exit 2).",
)
