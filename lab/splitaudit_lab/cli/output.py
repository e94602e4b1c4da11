"""The Output a lab command renders its result through: the lab's, for the top-level --json and --debug."""

from __future__ import annotations

from splitaudit.cli.context import Context
from splitaudit_lab.report.output import LabOutput, lab_output


def output(context: Context) -> LabOutput:
    """The lab's Output for `context`'s options (the product's `context.output` cannot show the lab's results)."""
    return lab_output(context.as_json, context.debug)
