"""The `splitaudit` command line: click commands that compute a result and hand it to an Output.

`main` is the top-level group (`group.py`); each command group's module registers its commands on it when
imported here. Each command imports what it runs inside its action: Spark, pyarrow, requests, confluent_kafka
and rich cost seconds of start-up together, and `inspect --json` needs none of them.
"""

# Imported for what importing them does: each registers its commands on `main`.
from splitaudit.cli import audit, guard, job_scenarios, patch, restore_scenarios, savepoints, stack, watch  # noqa: F401
from splitaudit.cli.group import main

__all__ = ["main"]
