"""The errors splitaudit reports to its users, and the exit code each one maps to.

The CLI catches `SplitauditError` and shows one line (a traceback only with `--debug`); anything else is
a bug and is shown as such.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

# Exit codes are a contract (docs/commands.md): 0 clean, 1 findings of severity error, 2 bad input or usage.
# 3 extends it for a failure of the environment: a server that did not start, a download that failed.
EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_BAD_INPUT = 2
EXIT_ENVIRONMENT = 3
# 4 is `watch`'s: the watched job failed, was suspended or vanished without a final state, and nothing was found.
EXIT_JOB_LOST = 4


class SplitauditError(Exception):
    """Base of every error meant for the user rather than for a developer."""

    exit_code = EXIT_BAD_INPUT
    # Text from outside the error's one line (a server's whole answer, a Java trace), shown only with --debug.
    detail: str | None = None


class UsageError(SplitauditError):
    """The command line asks for something that cannot be done as asked."""


class InputError(SplitauditError):
    """A file the user gave us is not what it should be; names the file and the byte offset."""

    def __init__(self, path: str, offset: int | None, message: str) -> None:
        self.path = path
        self.offset = offset
        self.message = message
        where = f"{path}" if offset is None else f"{path} at byte {offset}"
        super().__init__(f"{where}: {message}")


class ExternalError(SplitauditError):
    """Something outside the input failed: a download, a server start, a remote call."""

    exit_code = EXIT_ENVIRONMENT


# The optional dependencies (pyproject's extras) by top-level module: what a command without them is told to install.
_EXTRA_OF_MODULE = {
    "pyspark": "spark",
    "pyarrow": "spark",
    "pandas": "spark",
    "numpy": "spark",
    "confluent_kafka": "kafka",
    "psutil": "stack",
    "apache_beam": "beam",
}


def missing_extra(ex: ModuleNotFoundError) -> ExternalError | None:
    """The error for a command run without the optional dependency it imports (splitaudit installed without the
    extra that brings it), or None when the missing module is no optional dependency's (a bug)."""
    module = (ex.name or "").partition(".")[0]
    extra = _EXTRA_OF_MODULE.get(module)
    if extra is None:
        return None
    error = ExternalError(
        f"this command needs {module}, which splitaudit's extra [{extra}] installs: "
        f"pip install 'splitaudit[{extra}]' (or uv pip install 'splitaudit[{extra}]')"
    )
    error.__cause__ = ex  # --debug shows where it was imported
    return error


def summary(ex: BaseException) -> str:
    """One line saying what went wrong in `ex`: the first line of its text, or its type when it has none.

    A Java error passed through Py4J says only `An error occurred while calling o48.load.` on its first line;
    its Java text follows: the error it reports (`Encountered error while reading file …`) and, last, the
    `Caused by:` at the root (`java_errors`). Those two, without their class names, are the line.
    """
    lines = str(ex).strip().splitlines()
    if not lines:
        return type(ex).__name__
    if not _PY4J_CALL.match(lines[0]):
        return lines[0]
    said = [_without_class(line.removeprefix("Caused by: ")) for line in java_errors(lines[1:])]
    return "; caused by: ".join(dict.fromkeys(said)) or lines[0]


def java_errors(trace: Iterable[str]) -> list[str]:
    """What the lines of a Java trace say went wrong, each its line as the trace has it, stripped: the first
    exception it names (`org.x.SomeException: message`, after Py4J's `: ` if any) and the last `Caused by:`
    (the root), either missing when the trace has none; never a frame (`at …`) or other text around them."""
    lines = [line.strip().removeprefix(": ") for line in trace]
    reported = next((line for line in lines if _JAVA_EXCEPTION.fullmatch(line)), None)
    root = next((line for line in reversed(lines) if line.startswith("Caused by: ")), None)
    return [line for line in (reported, root) if line is not None]


_PY4J_CALL = re.compile(r"An error occurred while calling [\w.]+\.?$")
# A Java class name (`org.apache.spark.SparkException`); a Java exception's line is one, then its message if any.
_JAVA_CLASS = r"(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*"
_JAVA_EXCEPTION = re.compile(rf"{_JAVA_CLASS}(?::.*)?")
_CLASS_PREFIX = re.compile(rf"^{_JAVA_CLASS}: ")


def _without_class(line: str) -> str:
    """A Java exception's line without its class name: `org.apache.spark.SparkException: message` -> `message`."""
    return _CLASS_PREFIX.sub("", line)


def printable(text: str) -> str:
    """`text` with every control character (newline, carriage return, escape, …) written as an escape, so a
    message naming a file keeps to one line and a file name cannot move the cursor or colour the terminal."""
    return "".join(repr(char)[1:-1] if unicodedata.category(char) == "Cc" else char for char in text)


def printable_lines(text: str) -> str:
    """`text` with each line `printable`: a trace keeps its lines, nothing in them can act on the terminal."""
    return "\n".join(printable(line) for line in text.splitlines())
