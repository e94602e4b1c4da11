"""The lab's `Output`: the product's renderers plus one per lab result, as JSON (`LabJsonOutput`) or rich tables
(`report/console.py`'s `LabConsoleOutput`); `lab_output` picks one for the top-level options."""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING

from splitaudit.report.output import JsonOutput, Output

if TYPE_CHECKING:
    from splitaudit_lab.scenario.results import DemoReport, GuardedRestore, MatrixReport, ScenarioReport
    from splitaudit_lab.scenario.users_job_results import UsersJobReport
    from splitaudit_lab.stack.results import SetupReport, SmokeReport, StackStatus


class LabOutput(Output):
    """Renders the lab's results besides every result of the product."""

    @abstractmethod
    def setup_report(self, report: SetupReport) -> None:
        """Show what `splitaudit setup` installed or found in place."""

    @abstractmethod
    def stack_status(self, status: StackStatus) -> None:
        """Show the processes of a stack run directory and whether they are up."""

    @abstractmethod
    def smoke_report(self, report: SmokeReport) -> None:
        """Show the steps of the smoke scenario and where its savepoint is."""

    @abstractmethod
    def scenario_report(self, report: ScenarioReport) -> None:
        """Show the restore scenario's steps, per-partition sink counts and where its savepoints are."""

    @abstractmethod
    def users_job_report(self, report: UsersJobReport) -> None:
        """Show the users'-job scenario: its steps and, per partition, what each output holds of each phase."""

    @abstractmethod
    def demo_report(self, report: DemoReport) -> None:
        """Show the stock and the patched restore scenario side by side, per partition."""

    @abstractmethod
    def matrix_report(self, report: MatrixReport) -> None:
        """Show every run of the real-cluster matrix per partition, with whether it is as expected."""

    @abstractmethod
    def guarded_restore(self, result: GuardedRestore) -> None:
        """Show `scenario --guard`: the guard's verdict and, when restored, what the watch found and did."""


class LabJsonOutput(JsonOutput, LabOutput):
    """The lab's results as one JSON document each, like the product's."""

    def setup_report(self, report: SetupReport) -> None:
        self._print(report.to_json())

    def stack_status(self, status: StackStatus) -> None:
        self._print(status.to_json())

    def smoke_report(self, report: SmokeReport) -> None:
        self._print(report.to_json())

    def scenario_report(self, report: ScenarioReport) -> None:
        self._print(report.to_json())

    def users_job_report(self, report: UsersJobReport) -> None:
        self._print(report.to_json())

    def demo_report(self, report: DemoReport) -> None:
        self._print(report.to_json())

    def matrix_report(self, report: MatrixReport) -> None:
        self._print(report.to_json())

    def guarded_restore(self, result: GuardedRestore) -> None:
        self._print(result.to_json())


def lab_output(as_json: bool, debug: bool) -> LabOutput:
    """JSON on stdout, or rich tables (rich imported only for them)."""
    if as_json:
        return LabJsonOutput(debug)
    from splitaudit_lab.report.console import LabConsoleOutput

    return LabConsoleOutput(debug)
