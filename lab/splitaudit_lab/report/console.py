"""`LabConsoleOutput`: the lab's results (setup, the stack, the smoke run, the scenarios, the demo, the matrix) as
rich tables, beside everything the product's `ConsoleOutput` renders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from splitaudit.report.console import ConsoleOutput
from splitaudit_lab.report.output import LabOutput

if TYPE_CHECKING:
    from splitaudit.progress import TimedStep
    from splitaudit_lab.scenario.results import DemoReport, GuardedRestore, MatrixReport, ScenarioReport
    from splitaudit_lab.scenario.users_job_results import OffsetRange, UsersJobReport
    from splitaudit_lab.stack.results import SetupReport, SmokeReport, StackStatus


class LabConsoleOutput(ConsoleOutput, LabOutput):
    """The product's console renderers and the lab's."""

    def setup_report(self, report: SetupReport) -> None:
        from splitaudit_lab.stack.results import mib

        table = Table(title=f"splitaudit setup → {report.stack_home}")
        for column in ("component", "version", "state", "seconds", "downloaded", "path"):
            table.add_column(column)
        for item in report.components:
            downloaded = mib(item.downloaded_bytes) if item.downloaded_bytes else "-"
            table.add_row(item.name, item.version, item.state, f"{item.seconds:.1f}", downloaded, item.path)
        self.console.print(table)
        for item in report.components:
            if item.reason is not None:
                self.console.print(f"{item.name} skipped: {item.reason}")

    def stack_status(self, status: StackStatus) -> None:
        table = Table(title=f"stack in {status.workdir}")
        for column in ("service", "state", "pid", "address", "detail"):
            table.add_column(column)
        for service in status.services:
            state = Text("up", "green") if service.alive else Text("down", "red")
            table.add_row(service.name, state, str(service.pid or "-"), service.address, service.detail)
        self.console.print(table)

    def smoke_report(self, report: SmokeReport) -> None:
        self.console.print(_steps_table(f"smoke scenario in {report.run_dir}", report.steps))
        self.console.print(f"savepoint: {report.savepoint_path}")
        self.console.print(f"restored job {report.restored_job_id} from it; run dir: {report.run_dir}")

    def users_job_report(self, report: UsersJobReport) -> None:
        from splitaudit_lab.scenario.users_job_results import runs_text, window_text

        lineage = ", lineage in Parquet" if report.lineage else ""
        offsets = f", group offsets {report.group_offsets}" if report.consumer == "group" else ""
        title = f"users' job, {report.variant}, consumer {report.consumer}{offsets}{lineage}: {report.jar}"
        self.console.print(_steps_table(title, report.steps))

        def phase(run: OffsetRange | None) -> str:
            return "-" if run is None else runs_text((run,))

        def counted(count: int, runs: tuple[OffsetRange, ...]) -> str:
            return f"{count}: {runs_text(runs)}"

        outputs = (
            ("output topic", report.output_topic),
            ("text", report.text_dir),
            ("Parquet", report.parquet_dir),
        )
        for index, (name, where) in enumerate(outputs):
            table = Table(title=f"{name} {where}, matched to {report.input_topic} by timestamp")
            columns = ["partition", "before", "down", "after", "rows", "read twice", "missing"]
            if index:
                columns += ["masked duplicates", "lost by rewrite"]
            for column in columns:
                table.add_column(column, justify="right")
            for p in report.partitions:
                truth = (p.topic, p.text, p.parquet)[index]
                files = [counted(truth.masked_count, truth.masked_duplicates),
                         counted(truth.lost_count, truth.lost_by_rewrite)] if index else []  # fmt: skip
                table.add_row(
                    str(p.partition), phase(p.before), phase(p.down), phase(p.after), str(truth.rows),
                    counted(truth.read_twice_count, truth.read_twice)
                    + (f" (more: {runs_text(truth.read_more)})" if truth.read_more else ""),
                    counted(truth.missing_count, truth.missing), *files,
                )  # fmt: skip
            self.console.print(table)
        for mid in report.mid_window:
            self.console.print(
                f"group offset of partition {mid.partition} set to {mid.offset}, in window {window_text(mid.window)} "
                f"(offsets {runs_text((mid.window_offsets,))})"
            )
        for sink in report.file_sinks:
            self.console.print(
                f"{sink.name}: {sink.files_before} files after the first job, {sink.files_after} at the end, "
                f"{len(sink.replaced)} replaced ({report.window_seconds} s windows)"
            )
            if sink.replaced:
                table = Table(title=f"{sink.name} files the restored job replaced")
                for column in ("file", "window", "rows before", "rows after"):
                    table.add_column(column, justify="left" if column in ("file", "window") else "right")
                for file in sink.replaced:
                    window = "-" if file.window is None else window_text(file.window)
                    table.add_row(file.name, window, str(file.rows_before), str(file.rows_after))
                self.console.print(table)
            for temp in sink.temp_files:
                self.console.print(f"  never finalized: {temp.path} ({temp.size} bytes)")
        self.console.print(f"before the restore: {report.guard.line}")
        for twin in report.guard.twins:
            self.console.print(f"  {twin.topic}/{twin.partition}: {twin.sentence()}")
        topic, text, parquet = report.unmatched_rows
        if topic or text or parquet:
            self.console.print(
                f"records matching no input record: {topic} in the topic, {text} in text, {parquet} in Parquet"
            )
        verdict = (
            "every offset once in every output, no file replaced"
            if report.clean
            else "offsets read twice or missing, or files replaced"
        )
        self.console.print(f"{'clean' if report.clean else 'NOT CLEAN'}: {verdict}")
        self.console.print(f"savepoints: {report.savepoint_before}, {report.savepoint_after}")

    def scenario_report(self, report: ScenarioReport) -> None:
        continuous = ", records produced continuously" if report.continuous else ""
        title = f"{report.restart} scenario{continuous}, {report.variant}, {_parallelism(report)}: {report.jar}"
        self.console.print(_steps_table(title, report.steps))
        several = len(report.topics) > 1
        sink = Table(title=f"sink {report.sink_path} ({_topics_title(report)})")
        if several:
            sink.add_column("topic")
        for column in (
            "partition",
            "expected",
            "rows",
            "dup rows",
            "missing",
            "two readers, one generation",
            "replayed",
        ):
            sink.add_column(column, justify="right")
        for p in report.partitions:
            sink.add_row(
                *([_topic_label(report, p.topic)] if several else []),
                *(
                    str(n)
                    for n in (
                        p.partition,
                        p.expected_records,
                        p.sink_rows,
                        p.duplicate_rows,
                        p.missing_offsets,
                        p.double_read_offsets,
                        p.replayed_offsets,
                    )
                ),
            )
        self.console.print(sink)
        restarted = {
            "savepoint": "savepoint before the restore",
            "broker-restart": "last checkpoint before the broker stopped",
            "jobmanager-kill": "resubmitted from retained checkpoint",
        }.get(report.restart, "restarted from checkpoint")
        self.console.print(f"{restarted}: {report.savepoint_before}")
        self.console.print(f"savepoint at the end: {report.savepoint_after}")
        self.console.print(f"{report.records_per_second:.0f} records/s after the restart; run dir {report.run_dir}")
        self.console.print(f"auditor: {_verdict(report)}")

    def demo_report(self, report: DemoReport) -> None:
        from splitaudit.home import UPSTREAM_FIX_VERSION

        sides = report.sides
        if report.added_partitions:
            title = (
                f"{report.added_partitions} partitions added while the job was down: stock Beam 2.62.0 vs Beam "
                f"{UPSTREAM_FIX_VERSION} (upstream fix) vs patched"
            )
            claim = (
                f"stock Beam reads the old partitions twice, Beam {UPSTREAM_FIX_VERSION} never reads the new ones, "
                "the patched build reads every offset exactly once"
            )
        else:
            title = "beam#31313: restore from a savepoint, stock Beam 2.62.0 vs patched"
            claim = "stock Beam double-assigns on restore, the patched build does not"
        table = Table(title=f"{title}, {_parallelism(report.stock)} ({report.run_dir})")
        several = len(report.stock.topics) > 1
        if several:
            table.add_column("topic")
        table.add_column("partition", justify="right")
        table.add_column("expected", justify="right")
        # One column per build (three fit an 80-column terminal): sink rows / duplicate rows / missing offsets.
        for side in sides:
            table.add_column(f"{side.variant}\nrows/dup/missing", justify="right", min_width=len("rows/dup/missing"))
        for row in zip(*(side.partitions for side in sides), strict=True):
            first = row[0]
            table.add_row(
                *([_topic_label(report.stock, first.topic)] if several else []),
                str(first.partition),
                str(first.expected_records),
                *(f"{p.sink_rows} / {p.duplicate_rows} / {p.missing_offsets}" for p in row),
            )
        self.console.print(table)
        for scenario in sides:
            self.console.print(Text.assemble((scenario.variant, "bold"), ", the auditor says: ", _verdict(scenario)))
            self.console.print(
                f"  {scenario.records_per_second:.0f} records/s after the restore; savepoints "
                f"{scenario.savepoint_before} (before), {scenario.savepoint_after} (after); sink {scenario.sink_path}",
                soft_wrap=True,
            )
        self.console.print(Text.assemble(_outcome(report.as_expected), f": {claim}"))
        self.console.print(f"demo wall time {report.seconds:.0f} s")

    def matrix_report(self, report: MatrixReport) -> None:
        table = Table(title=f"beam#31313 on a real cluster, every reachable Beam release ({report.run_dir})")
        for column in ("Beam", "Flink", "jar", "partition", "expected", "rows", "two readers", "replayed", "missing"):
            table.add_column(column, justify="right")
        table.add_column("as expected")
        for run in report.runs:
            for index, p in enumerate(run.report.partitions):
                first = index == 0
                table.add_row(
                    run.beam_version if first else "",
                    run.flink_version if first else "",
                    run.variant if first else "",
                    str(p.partition)
                    if len(run.report.topics) == 1
                    else f"{_topic_label(run.report, p.topic)}/{p.partition}",
                    *(
                        str(n)
                        for n in (
                            p.expected_records,
                            p.sink_rows,
                            p.double_read_offsets,
                            p.replayed_offsets,
                            p.missing_offsets,
                        )
                    ),
                    (Text("yes", "green") if run.as_expected else Text("NO", "red")) if first else "",
                    end_section=index == len(run.report.partitions) - 1,
                )
        self.console.print(table)
        for run in report.runs:
            self.console.print(
                Text.assemble(f"Beam {run.beam_version} {run.variant}, the auditor says: ", _verdict(run.report))
            )
        self.console.print(
            Text.assemble(
                _outcome(report.as_expected), ": affected stock jars double-assign on restore, patched and fixed do not"
            )
        )
        self.console.print(f"matrix wall time {report.seconds:.0f} s")

    def guarded_restore(self, result: GuardedRestore) -> None:
        self.guard_report(result.guard)
        if result.restore is None:
            self.console.print(
                Text(f"{result.variant}: the guard refused the restore (--force restores anyway)", "red")
            )
            return
        restore = result.restore
        forced = " (forced past the guard)" if result.forced else ""
        self.console.print(
            f"{result.variant}{forced}: listed {restore.restore_seconds} s after the submission; the restored job "
            f"wrote "
            f"{restore.restored_rows} rows of {restore.restored_offsets} offsets ({restore.read_twice} read twice; "
            f"backlog {restore.backlog} per topic)",
            soft_wrap=True,
        )
        self.watch_report(restore.watch)


def _steps_table(title: str, steps: Sequence[TimedStep]) -> Table:
    """A scenario's steps: what each did, how long it took and what it found."""
    table = Table(title=title)
    for column in ("step", "seconds", "result"):
        table.add_column(column)
    for step in steps:
        table.add_row(step.name, f"{step.seconds:.1f}", step.result)
    return table


def _topics_title(report: ScenarioReport) -> str:
    """The topics of a scenario run, for a table's title; several are listed with the short labels the table's
    rows use."""
    if len(report.topics) == 1:
        return f"topic {report.topics[0]}"
    return "topics " + ", ".join(f"{_topic_label(report, topic)} = {topic}" for topic in report.topics)


def _topic_label(report: ScenarioReport, topic: str) -> str:
    """A short label for one of a scenario run's several topics (their names are long): t0, t1, …"""
    return f"t{report.topics.index(topic)}"


def _verdict(report: ScenarioReport) -> Text:
    """One line of the auditor's findings on a scenario run."""
    from splitaudit.audit.checks.findings import DOUBLE_ASSIGNMENT_KINDS, INFO, UNASSIGNED

    audit = report.audit
    if not audit.findings:
        return Text.assemble(("clean", "green"), ": every offset exactly once, every partition held once")
    if all(f.severity == INFO for f in audit.findings):
        kinds = ", ".join(sorted({f.kind for f in audit.findings}))
        return Text.assemble(("clean", "green"), f": every offset exactly once; for information: {kinds}")
    verdict = Text()
    if report.double_assigned:
        extra = sum(p.double_read_offsets for p in report.partitions)
        verdict.append("double assignment", "red")
        shown = _partitions_text(report, report.double_assigned)
        verdict.append(f" of partitions {shown} ({extra} records read twice)")
    unread = [(f.topic, f.partition) for f in audit.findings if f.kind == UNASSIGNED and f.topic is not None]
    if unread:
        lost = sum(p.missing_offsets for p in report.partitions if (p.topic, p.partition) in unread)
        verdict.append(("; " if verdict else "") + "partitions never read", "red")
        verdict.append(f" {_partitions_text(report, unread)} ({lost} records missing)")
    others = sorted({f.kind for f in audit.findings} - DOUBLE_ASSIGNMENT_KINDS - {UNASSIGNED})
    if others:
        verdict.append(("; " if verdict else "") + "also " + ", ".join(others))
    return verdict


def _partitions_text(report: ScenarioReport, partitions: Sequence[tuple[str | None, int | None]]) -> str:
    """Partitions of a scenario run for its verdict: "0, 1", or "topic/0, topic/1" when the job reads several."""
    if len(report.topics) > 1:
        return ", ".join(f"{topic}/{partition}" for topic, partition in partitions)
    return ", ".join(str(partition) for _, partition in partitions)


def _parallelism(report: ScenarioReport) -> str:
    """The job's parallelism, before and after the restore when they differ."""
    if report.parallelism == report.restore_parallelism:
        return f"parallelism {report.parallelism}"
    return f"parallelism {report.parallelism} → {report.restore_parallelism} on restore"


def _outcome(as_expected: bool) -> Text:
    return Text("as expected", "green") if as_expected else Text("NOT as expected", "red")
