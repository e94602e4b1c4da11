"""The one place results become text or JSON.

Commands compute a result object and hand it to an `Output`; nothing else prints results. `ConsoleOutput`
(`report/console.py`) renders rich tables for people, `JsonOutput` renders the documented JSON contracts for
machines, so the two can never disagree about what was found. This module imports no result type at run time
and not rich: `--json inspect` starts without them.
"""

from __future__ import annotations

import json
import sys
import traceback
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splitaudit.audit.checks.findings import Findings
    from splitaudit.guard.results import GuardReport, WatchEvent, WatchReport
    from splitaudit.patch.results import LineageKitReport, PatchReport
    from splitaudit.savepoint_view import SavepointView


class Output(ABC):
    """Renders each kind of result splitaudit produces; with `debug`, also the text from outside a result keeps
    to one line by default (a server's whole trace)."""

    def __init__(self, debug: bool = False) -> None:
        self.debug = debug

    @abstractmethod
    def exception(self, ex: BaseException, debug: bool) -> None:
        """Show an error: one line, or the traceback with --debug."""

    @abstractmethod
    def patch_report(self, report: PatchReport) -> None:
        """Show which classes `patch-jar` replaced and where the patched jar is."""

    @abstractmethod
    def lineage_kit_report(self, report: LineageKitReport) -> None:
        """Show where `lineage-kit` wrote the kit's jar and the lines that add it to a Maven or Gradle build."""

    @abstractmethod
    def savepoint_view(self, view: SavepointView) -> None:
        """Show what `splitaudit inspect` read: operators, subtasks, splits, offsets."""

    @abstractmethod
    def guard_report(self, report: GuardReport) -> None:
        """Show what `splitaudit guard` predicts for a restore, ending in its one CI line."""

    def watch_event(self, event: WatchEvent) -> None:
        """Write one event of a running `splitaudit watch` as a JSON line on stdout, at once (flushed), the same
        with or without --json: a CI step reads them while the watch still runs."""
        sys.stdout.write(json.dumps(event.to_json()) + "\n")
        sys.stdout.flush()

    @abstractmethod
    def watch_report(self, report: WatchReport) -> None:
        """Show what `splitaudit watch` found and did, ending in its one CI line (each finding was already
        written as a JSON line when found)."""

    @abstractmethod
    def findings(self, findings: Findings) -> None:
        """Show what an audit found: summary, findings, per-partition coverage, notes."""


class JsonOutput(Output):
    """One JSON document on stdout per command; errors as {"error": …} on stdout and exit code."""

    def _print(self, document: Any) -> None:
        sys.stdout.write(json.dumps(document, indent=2, sort_keys=False) + "\n")

    def exception(self, ex: BaseException, debug: bool) -> None:
        detail = getattr(ex, "detail", None)
        if debug:
            sys.stderr.write("".join(traceback.format_exception(ex)))
            if detail:
                sys.stderr.write(f"{detail}\n")
        error: dict[str, Any] = {"type": type(ex).__name__, "message": str(ex)}
        path = getattr(ex, "path", None)
        if path is not None:
            error["path"] = path
            error["offset"] = getattr(ex, "offset", None)
        self._print({"error": error})

    def patch_report(self, report: PatchReport) -> None:
        self._print(report.to_json())

    def lineage_kit_report(self, report: LineageKitReport) -> None:
        self._print(report.to_json())

    def guard_report(self, report: GuardReport) -> None:
        self._print(report.to_json())

    def watch_report(self, report: WatchReport) -> None:
        # One line, so that stdout of `--json watch` is JSON lines: the findings as found, then this.
        sys.stdout.write(json.dumps(report.to_json(self.debug)) + "\n")

    def findings(self, findings: Findings) -> None:
        self._print(findings.to_json())

    def savepoint_view(self, view: SavepointView) -> None:
        self._print(view.to_json())
