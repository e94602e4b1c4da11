"""The `splitaudit` command line: click commands that compute a result and hand it to an Output.

`main` is the top-level group (`group.py`): it names each command's module and imports it only when the command
runs or a help lists it. Each command imports what it runs inside its action: Spark, pyarrow, requests,
confluent_kafka and rich cost seconds of start-up together, and `inspect --json` needs none of them.
"""

from splitaudit.cli.group import main

__all__ = ["main"]
