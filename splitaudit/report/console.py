"""`ConsoleOutput`: results as rich tables for people, errors as one line on stderr."""

from __future__ import annotations

import textwrap
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from splitaudit.errors import EXIT_BAD_INPUT, SplitauditError, printable, printable_lines, summary
from splitaudit.report.output import Output

# A width no table reaches: a table measured in it takes the width it needs to print every cell on one line.
UNBOUNDED = 1 << 20
# How far a finding's detail is indented below its head line in the block layout.
DETAIL_INDENT = 4

# Each result's own helpers are imported where it is rendered: `inspect` on the console loads nothing of guard,
# the lab's scenarios or its stack.
if TYPE_CHECKING:
    from splitaudit.audit.checks.findings import AssignmentMatrix, Finding, Findings, SinkFile
    from splitaudit.guard.positions import PartitionPositions
    from splitaudit.guard.results import GuardReport, WatchReport
    from splitaudit.guard.tally import PartitionTally
    from splitaudit.patch.results import LineageKitReport, PatchReport
    from splitaudit.savepoint_view import SavepointView
    from splitaudit.splits.beam import KafkaIORead


class ConsoleOutput(Output):
    """Rich tables on stdout, errors on stderr."""

    def __init__(self, debug: bool = False) -> None:
        super().__init__(debug)
        # Nothing printed is ever read as markup or emoji: names, topics and paths come from files, and a
        # `[bold]` in an operator name is text. Styles are applied as `Text` spans only.
        self.console = Console(highlight=False, markup=False, emoji=False)
        self.errors = Console(stderr=True, highlight=False, markup=False, emoji=False)

    def _findings(self, findings: Sequence[Finding]) -> None:
        """The findings as a table when it fits the terminal, else as blocks: each finding's severity, kind, topic
        and partition, count and offsets on one line, its detail below as text wrapped at words, and a blank line
        after each, as a CI log or a pipe of 80 columns reads it (audit, diff, guard and watch)."""
        table = _findings_table(findings)
        if (
            Measurement.get(self.console, self.console.options.update_width(UNBOUNDED), table).maximum
            <= self.console.width
        ):
            self.console.print(table)
            return
        self.console.print(Text("findings", "bold"))
        for f in findings:
            self.console.print(_finding_line(f), soft_wrap=True)
            if f.explanation:
                detail = textwrap.fill(
                    printable(f.explanation),
                    self.console.width,
                    initial_indent=" " * DETAIL_INDENT,
                    subsequent_indent=" " * DETAIL_INDENT,
                    break_long_words=False,
                    break_on_hyphens=False,
                )
                self.console.print(Text(detail), soft_wrap=True)
            # A blank line ends each block: the next finding's head, or a table's centred title, never reads as
            # more of this detail.
            self.console.print()

    def exception(self, ex: BaseException, debug: bool) -> None:
        if debug:
            self.errors.print("".join(traceback.format_exception(ex)))
            detail = getattr(ex, "detail", None)
            if detail:
                self.errors.print(Text(printable_lines(detail)), soft_wrap=True)
        # One line whatever the terminal width (soft_wrap).
        if isinstance(ex, SplitauditError):
            # Bad input is one line: control characters of a file name are escaped. Errors of the environment
            # keep the lines of the tool they quote (Flink's, Maven's).
            text = printable(str(ex)) if ex.exit_code == EXIT_BAD_INPUT else str(ex)
            self.errors.print(Text.assemble(("error:", "red"), " ", text), soft_wrap=True)
        else:
            message = printable(f"{type(ex).__name__}: {summary(ex)} (run with --debug)")
            self.errors.print(Text.assemble(("internal error:", "red"), " ", message), soft_wrap=True)

    def patch_report(self, report: PatchReport) -> None:
        bundled = f", bundles Flink {report.bundled_flink}" if report.bundled_flink else ""
        self.console.print(f"{report.in_jar}: Beam {report.beam_version} with {report.flink_runner}{bundled}")
        packages = sorted({entry.name.rpartition("/")[0].replace("/", ".") for entry in report.replaced})
        table = Table(
            title=f"replaced {len(report.replaced)} of {report.entries_total} entries, in {', '.join(packages)}"
        )
        for column in ("class", "Beam's sha256", "patched sha256", "bytes"):
            table.add_column(column)
        for entry in report.replaced:
            table.add_row(
                entry.name.rpartition("/")[2].removesuffix(".class"),
                entry.original_sha256[:12],
                entry.patched_sha256[:12],
                f"{entry.original_size} → {entry.patched_size}",
            )
        self.console.print(table)
        if report.added:
            self.console.print(f"added {', '.join(name.removesuffix('.class') for name in report.added)}")
        self.console.print(f"patched classes from {report.patch_classes_from}")
        self.console.print(f"wrote {report.out_jar}; every other entry copied byte for byte")

    def lineage_kit_report(self, report: LineageKitReport) -> None:
        # The lines are to be copied: never folded, no markup read into the paths.
        for line in (
            f"wrote {report.jar} ({report.coordinates}, {report.size} bytes, sha256 {report.sha256[:12]})",
            f"Maven: install it, then depend on {report.coordinates}:",
            f"  {report.maven_install}",
            "Gradle:",
            f"  {report.gradle_dependency}",
        ):
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def guard_report(self, report: GuardReport) -> None:
        self.console.print(f"job jar {report.jar.path}: {report.jar.label}", soft_wrap=True)
        for source in report.sources:
            families = "/".join(source.families) or "no splits"
            held = ", ".join(f"{p.topic}:{p.partition}@{_offset(p.next_offset)}" for p in source.partitions)
            line = f"source {source.operator}: parallelism {source.parallelism}, {families}; {held or 'no partitions'}"
            self.console.print(line, soft_wrap=True)
            if source.spec is not None:
                self.console.print(Text(printable(_read_settings(source.spec))), soft_wrap=True)
        if report.findings:
            self._findings(report.findings)
        for note in report.notes:
            self.console.print(Text(f"note: {note}", "dim"), soft_wrap=True)
        self.console.print(Text(report.line, "green" if report.safe else "red"), soft_wrap=True)

    def watch_report(self, report: WatchReport) -> None:
        restored = f", restored from {report.restored_from}" if report.restored_from else ""
        self.console.print(f"job {report.job}{restored}: {report.polls} polls in {report.seconds:g} s", soft_wrap=True)
        if report.findings:
            self._findings(report.findings)
        if report.tally:
            self.console.print(_tally_table(report.tally))
        if report.positions:
            self.console.print(_positions_table(report.positions))
        for fault in report.rest_faults:
            times = f"{fault.times} time{'s' if fault.times > 1 else ''}"
            retried = printable(f"retried {fault.call} → {fault.answer} ({times})")
            self.console.print(Text(retried, "dim"), soft_wrap=True)
            if self.debug and fault.detail:
                self.console.print(Text(printable_lines(fault.detail), "dim"), soft_wrap=True)
        if report.savepoint:
            self.console.print(f"stopped with a savepoint: {report.savepoint}", soft_wrap=True)
        ended = f"job {report.end.phase} (Flink state {report.end.state})"
        if report.end.reason:
            ended += f": {report.end.reason}"
        self.console.print(Text(printable(ended)), soft_wrap=True)
        self.console.print(Text(report.line, "green" if report.exit_code == 0 else "red"), soft_wrap=True)

    def findings(self, findings: Findings) -> None:
        summary = Table(title="audit summary")
        counts = findings.summary.to_json()
        for name in counts:
            summary.add_column(name.replace("_", " "))
        summary.add_row(*(str(v) for v in counts.values()))
        self.console.print(summary)
        if findings.findings:
            self._findings(findings.findings)
        else:
            self.console.print(Text("no findings", "green"))
        for matrix in findings.assignment:
            self.console.print(_assignment_table(matrix))
        if findings.coverage:
            self.console.print(_coverage_table(findings))
        if findings.ledger:
            self.console.print(_ledger_table(findings))
        for note in findings.notes:
            self.console.print(Text(f"note: {note}", "dim"), soft_wrap=True)

    def savepoint_view(self, view: SavepointView) -> None:
        from splitaudit.audit.checks.savepoint_tables import tables_of

        kind = view.kind or "snapshot"
        if view.savepoint_format:
            kind += f" ({view.savepoint_format})"
        self.console.print(
            f"{view.path}: {kind}, checkpoint {view.checkpoint_id}, metadata version {view.format_version}, "
            f"{len(view.operators)} operators"
        )
        operators = Table(title="operators", caption="par.: parallelism; max: max parallelism")
        operators.add_column("id", no_wrap=True)
        for column in ("uid", "name"):
            operators.add_column(column, overflow="fold")
        operators.add_column("par.", justify="right")
        operators.add_column("max", justify="right")
        operators.add_column("source", overflow="fold")
        for op in view.operators:
            source = "-"
            if op.source is not None:
                types = sorted({split.state.type for split in op.source.reader_splits})
                if op.source.enumerator is not None:
                    types = sorted({*types, op.source.enumerator.state.type})
                source = f"{len(op.source.reader_splits)} splits ({', '.join(types) or 'none'})"
            operators.add_row(
                op.operator_id, _cell(op.uid), _cell(op.name), str(op.parallelism), str(op.max_parallelism), source
            )
        self.console.print(operators)
        tables = tables_of(view)
        for op in view.operators:
            if op.source is None:
                continue
            name = op.uid or op.operator_id
            rows = [r for r in tables.splits if r["operator_id"] == op.operator_id]
            self.console.print(_split_table(f"source {name}: reader splits", rows))
            enumerator = op.source.enumerator
            if enumerator is not None:
                pending = [r for r in tables.enumerator if r["operator_id"] == op.operator_id]
                title = (
                    f"source {name}: enumerator ({enumerator.state.type}, serializer version "
                    f"{enumerator.serializer_version})"
                )
                if pending:
                    self.console.print(_split_table(title, pending, status=True))
                else:
                    self.console.print(Text(printable(f"{title}: nothing pending")))
        if view.keyed is not None:
            self.console.print(_keyed_table(view))
        self.console.print(Text("every split's full state: splitaudit --json inspect", "dim"))


def _keyed_table(view: SavepointView) -> Table | Text:
    """`inspect --keyed`: per operator and state, what its entries gave."""
    if not view.keyed:
        return Text("keyed state: none")
    table = Table(title="keyed state", caption="raw: kept partly as bytes; unread: rows for entries not read")
    table.add_column("operator", overflow="fold")
    table.add_column("state", overflow="fold")
    for column in ("read", "raw", "unread"):
        table.add_column(column, justify="right")
    table.add_column("why", overflow="fold")
    for state in view.keyed:
        table.add_row(
            _cell(state.uid or state.operator_id),
            _cell(state.state or "(subtask)"),
            str(state.read),
            str(state.raw),
            str(state.unread),
            _cell("; ".join(state.reasons) or "-"),
        )
    return table


def _split_table(title: str, rows: Sequence[dict[str, Any]], status: bool = False) -> Table:
    """One row per (subtask, split, topic, partition): where each partition is read from, in plain columns that fit
    80 columns (a long topic name folds); names from the savepoint are shown as text, never as markup."""
    types = sorted({str(r["split_type"]) for r in rows})
    table = Table(title=Text(printable(f"{title}, {', '.join(types)} splits")), title_justify="left")
    table.add_column("subtask", justify="right")
    if status:
        table.add_column("status")
    if len(types) > 1:
        table.add_column("type", overflow="fold")
    # Flink's KafkaSource names a split `<topic>-<partition>`, its DynamicKafkaSource `<cluster>-<topic>-<partition>`
    # (shown in a cluster column): a column of it would say nothing more.
    clusters = any(r.get("cluster") is not None for r in rows)
    split_ids = any(r["split_id"] != _kafka_split_id(r) for r in rows)
    if clusters:
        table.add_column("cluster", overflow="fold")
    if split_ids:
        table.add_column("split", overflow="fold")
    table.add_column("topic", overflow="fold")
    table.add_column("part.", justify="right")
    table.add_column("next offset", justify="right")
    table.add_column("stop", justify="right")
    for r in rows:
        cells = [_cell(r["subtask"])]
        if status:
            cells.append(_cell(r["status"]))
        if len(types) > 1:
            cells.append(_cell(r["split_type"]))
        if clusters:
            cells.append(_cell(r.get("cluster")))
        if split_ids:
            cells.append(_cell(r["split_id"]))
        cells += [_cell(r[key]) for key in ("topic", "partition", "next_offset")]
        cells.append(_cell(r["stopping_offset"]))
        table.add_row(*cells)
    return table


def _kafka_split_id(row: dict[str, Any]) -> str:
    """The split id Flink's Kafka sources give the row's partition (with its cluster, when it has one)."""
    cluster = row.get("cluster")
    return ("" if cluster is None else f"{cluster}-") + f"{row['topic']}-{row['partition']}"


def _cell(value: object) -> Text:
    return Text("-" if value is None else printable(str(value)))


def _findings_table(findings: Sequence[Finding]) -> Table:
    """One row per finding: severity (coloured), kind, partition, count, offsets, detail."""
    table = Table(title="findings")
    for column in ("severity", "kind", "topic", "partition", "count", "offsets", "detail"):
        table.add_column(column)
    for f in findings:
        colour = {"error": "red", "warning": "yellow"}.get(f.severity, "white")
        partition = "-" if f.partition is None else str(f.partition)
        table.add_row(
            Text(f.severity, colour), f.kind, f.topic or "-", partition, str(f.count), f.ranges_text(6), f.explanation
        )
    return table


def _finding_line(f: Finding) -> Text:
    """A finding's head line in the block layout: severity (coloured), kind, topic/partition, count and offsets."""
    colour = {"error": "red", "warning": "yellow"}.get(f.severity, "white")
    where = printable(f.topic or "-") + ("" if f.partition is None else f"/{f.partition}")
    ranges = f.ranges_text(6)
    return Text.assemble(
        (f.severity, colour), f"  {f.kind}  {where}  count {f.count}", f"  offsets {ranges}" if ranges else ""
    )


def _tally_table(tallies: Sequence[PartitionTally]) -> Table:
    table = Table(title="final tally: records read twice since the restore")
    for column in ("topic", "partition", "read", "read twice", "figure"):
        table.add_column(column)
    for t in tallies:
        figure = "exact" if t.exact else f"lower bound: {t.why}"
        table.add_row(printable(t.topic), str(t.partition), str(t.read), str(t.read_twice), printable(figure))
    return table


def _positions_table(positions: Sequence[PartitionPositions]) -> Table:
    table = Table(title="final tally: positions per partition (KafkaSource)")
    for column in ("topic", "partition", "restored", "last read", "read", "expected", "verdict"):
        table.add_column(column)

    def text(value: int | tuple[int, int] | None) -> str:
        return "-" if value is None else f"{value[0]}..{value[1]}" if isinstance(value, tuple) else str(value)

    for p in positions:
        numbers = (p.restored, p.last_read, p.read, p.expected)
        table.add_row(printable(p.topic), str(p.partition), *map(text, numbers), p.verdict)
    return table


def _coverage_table(findings: Findings) -> Table:
    """Per (topic, partition): what the sink holds."""
    coverage = Table(title="sink coverage per partition")
    for column in ("topic", "partition", "rows", "distinct offsets", "first", "last", "duplicates", "missing"):
        coverage.add_column(column)
    for c in findings.coverage:
        numbers = (c.partition, c.rows, c.distinct, c.first_offset, c.last_offset, c.duplicates, c.missing)
        coverage.add_row(c.topic, *map(str, numbers))
    return coverage


def _ledger_table(findings: Findings) -> Table:
    """Per family of a file sink's files (directory, prefix, suffix): its windows and what was written again."""
    from splitaudit.audit.checks.beam_names import instant_text

    table = Table(title="file sink ledger (Beam's file names)")
    for column in ("files", "windows", "first window", "last window", "rows", "rewritten files"):
        table.add_column(column)
    families: dict[str, list[SinkFile]] = {}
    for f in findings.ledger:
        families.setdefault(f.family, []).append(f)
    for family, files in families.items():
        windows = sorted({f.window for f in files if f.window is not None})
        rows = [f.rows for f in files if f.rows is not None]
        rewritten = sum(f.rewritten for f in files)
        table.add_row(
            f"{printable(family)}: {len(files)}",
            str(len(windows)),
            instant_text(windows[0][0]) if windows else "global",
            instant_text(windows[-1][0]) if windows else "global",
            str(sum(rows)) if rows else "-",
            str(rewritten),
            style="red" if rewritten else None,
        )
    return table


def _assignment_table(matrix: AssignmentMatrix) -> Table:
    """Partition x subtask: the split (and next offset) each subtask holds; doubles red, missing yellow."""
    table = Table(title=f"assignment of source {matrix.operator} (partitions from {matrix.partitions_from})")
    clusters = any(row.cluster is not None for row in matrix.partitions)  # a DynamicKafkaSource's
    subtasks = (f"subtask {i}" for i in range(matrix.subtasks))
    for column in (*(("cluster",) if clusters else ()), "topic", "partition", *subtasks, "enumerator (pending)"):
        table.add_column(column)
    for index, row in enumerate(matrix.partitions):
        last_of_topic = index + 1 == len(matrix.partitions) or matrix.partitions[index + 1].topic != row.topic
        cells = []
        for subtask in [*range(matrix.subtasks), None]:
            held = [h for h in row.holders if h.subtask == subtask]
            cells.append(
                ", ".join(f"split {h.split_id} @ {'?' if h.next_offset is None else h.next_offset}" for h in held)
            )
        style = {"double": "red", "missing": "yellow"}.get(row.status)
        label = row.topic if row.status == "ok" else f"{row.topic} ({row.status})"
        where = (row.cluster or "-",) if clusters else ()
        table.add_row(*where, label, str(row.partition), *cells, style=style, end_section=last_of_topic)
    return table


def _offset(offset: int | None) -> str:
    return "?" if offset is None else str(offset)


def _read_settings(spec: KafkaIORead) -> str:
    """The consumer settings of a KafkaIO read that decide where a fresh reader starts, as the job wrote them."""
    from splitaudit.guard.twin import start_time_text

    shown = [
        f"{key}={spec.consumer_config.get(key)}" for key in ("group.id", "auto.offset.reset", "enable.auto.commit")
    ]
    shown += [f"commitOffsetsInFinalize={spec.commit_offsets_in_finalize_enabled}"]
    if spec.start_read_time is not None:
        shown.append(f"startReadTime={start_time_text(spec.start_read_time)}")
    return "  KafkaIO.Read: " + ", ".join(shown)
