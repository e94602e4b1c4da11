"""What people read of real results at 80 and 120 columns: the findings of the demo's stock run as `audit`, `diff`
and `guard` show them, exact. At those widths the findings table does not fit, so each finding is a block (its
head line, its detail as whole words below, a blank line between two); in a terminal wide enough the table stays.

The results come from the stock run of the restore scenario (`fixtures/generate_restore.py`, what `make demo`
runs): `diff` and `guard` read its savepoints here, `audit` of its sink needs Spark, so its findings are written
down as that audit gave them (`tests/integration/test_html_report.py` runs it, and checks the console at 80
columns too).
"""

from __future__ import annotations

import io
import itertools
import json

import pytest
from click.testing import CliRunner
from rich.console import Console

from splitaudit.audit.checks.findings import BY_LINEAGE, DOUBLE_ASSIGNMENT, ERROR, Finding, Findings, Summary
from splitaudit.audit.checks.savepoint_tables import tables_of
from splitaudit.audit.request import DiffRequest
from splitaudit.audit.run import run_diff
from splitaudit.cli import main
from splitaudit.guard.predict import Restore, judge, kafka_specs, source_facts, source_twins
from splitaudit.guard.results import GuardReport
from splitaudit.patch.jar import JarFacts
from splitaudit.progress import Progress
from splitaudit.report.console import ConsoleOutput
from splitaudit.savepoint_view import inspect_savepoint
from tests.unit.conftest import FIXTURES

BEAM = FIXTURES / "beam_flink_source"
STOCK_BEFORE, STOCK_AFTER = str(BEAM / "restore_stock_before"), str(BEAM / "restore_stock_after")

# `splitaudit --json audit --sink fixtures/beam_sink/restore_stock_small/sink --sink-format json`: the twin reader
# of each partition wrote offsets 50..99 a second time (fixtures/beam_sink/restore_stock_small/expected.json).
SINK_TOPIC = "restore-stock-c35abac0"
DOUBLE_DETAIL = (
    "emitted by two or more readers within one generation, one (job_id, attempt): the partition was assigned twice"
)
SINK_NOTES = (
    "gaps are judged between each partition's lowest and highest sink offset, assuming dense offsets (no access to "
    "the source topic): transaction markers or compaction would show up as missing",
    "duplicates are classified by generation, one per (job_id, attempt): two readers of an offset in one generation "
    "are double assignment, one reader in each of several generations is replay",
)
# The stock Beam 2.62.0 pipeline jar as `guard` recognises it (the facts read_jar_facts gives; no jar needed here).
STOCK_JAR = JarFacts("job.jar", "2.62.0", "beam-runners-flink-1.19", True, False, False, False, True)


def _console(width: int) -> ConsoleOutput:
    output = ConsoleOutput()
    output.console = Console(file=io.StringIO(), width=width, markup=False, emoji=False, highlight=False)
    return output


def _text(output: ConsoleOutput) -> str:
    """What was printed, each line without the spaces rich pads it with."""
    text = output.console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(text, str)
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def _findings_part(width: int, findings: Findings) -> str:
    """`audit`'s or `diff`'s console from the findings on (the summary table above them left out)."""
    output = _console(width)
    output.findings(findings)
    lines = _text(output).splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "findings")
    return "\n".join([lines[start].strip(), *lines[start + 1 :]]) + "\n"


def _stock_sink_findings() -> Findings:
    findings = tuple(
        Finding(
            DOUBLE_ASSIGNMENT, ERROR, SINK_TOPIC, p, 50, ((50, 99),), detail=DOUBLE_DETAIL, classified_by=BY_LINEAGE
        )
        for p in range(4)
    )
    return Findings(Summary(duplicate_records=200, double_assigned_partitions=4), findings, notes=SINK_NOTES)


def _stock_guard() -> GuardReport:
    """`guard` of the stock run's first savepoint with the stock jar: every partition gets a twin reader."""
    view = inspect_savepoint(STOCK_BEFORE)
    tables = tables_of(view)
    sources = source_facts(tables, kafka_specs(view))
    twins = source_twins(STOCK_JAR, sources, {})
    findings = judge(Restore(STOCK_JAR, sources), (), (), {}, twins=twins)
    return GuardReport(tables.path, STOCK_JAR, None, None, sources, findings, ())


def test_audit_of_the_stock_sink_at_80_columns() -> None:
    assert _findings_part(80, _stock_sink_findings()) == (
        "findings\n"
        "error  double_assignment  restore-stock-c35abac0/0  count 50  offsets 50..99\n"
        "    emitted by two or more readers within one generation, one (job_id, attempt):\n"
        "    the partition was assigned twice\n"
        "\n"
        "error  double_assignment  restore-stock-c35abac0/1  count 50  offsets 50..99\n"
        "    emitted by two or more readers within one generation, one (job_id, attempt):\n"
        "    the partition was assigned twice\n"
        "\n"
        "error  double_assignment  restore-stock-c35abac0/2  count 50  offsets 50..99\n"
        "    emitted by two or more readers within one generation, one (job_id, attempt):\n"
        "    the partition was assigned twice\n"
        "\n"
        "error  double_assignment  restore-stock-c35abac0/3  count 50  offsets 50..99\n"
        "    emitted by two or more readers within one generation, one (job_id, attempt):\n"
        "    the partition was assigned twice\n"
        "\n"
        # A note is one line whatever the width (a CI step greps it).
        f"note: {SINK_NOTES[0]}\n"
        f"note: {SINK_NOTES[1]}\n"
    )


def test_audit_of_the_stock_sink_at_120_columns() -> None:
    detail = f"    {DOUBLE_DETAIL}\n"
    assert _findings_part(120, _stock_sink_findings()) == (
        "findings\n"
        f"error  double_assignment  restore-stock-c35abac0/0  count 50  offsets 50..99\n{detail}\n"
        f"error  double_assignment  restore-stock-c35abac0/1  count 50  offsets 50..99\n{detail}\n"
        f"error  double_assignment  restore-stock-c35abac0/2  count 50  offsets 50..99\n{detail}\n"
        f"error  double_assignment  restore-stock-c35abac0/3  count 50  offsets 50..99\n{detail}\n"
        f"note: {SINK_NOTES[0]}\n"
        f"note: {SINK_NOTES[1]}\n"
    )


def test_audit_of_the_stock_sink_in_a_terminal_the_table_fits() -> None:
    # Its table needs 199 columns: every cell on one line.
    assert _findings_part(198, _stock_sink_findings()).splitlines()[1].startswith("error  double_assignment")
    head, rule = "━" * 10, "─" * 10
    rows = "".join(
        f"│ error    │ double_assignment │ restore-stock-c35abac0 │ {p}         │ 50    │ 50..99  │ {DOUBLE_DETAIL} │\n"
        for p in range(4)
    )
    assert _findings_part(199, _stock_sink_findings()) == (
        "findings\n"
        f"┏{head}┳{'━' * 19}┳{'━' * 24}┳{'━' * 11}┳━━━━━━━┳━━━━━━━━━┳{'━' * 111}┓\n"
        f"┃ severity ┃ kind              ┃ topic                  ┃ partition ┃ count ┃ offsets ┃ detail{' ' * 104}┃\n"
        f"┡{head}╇{'━' * 19}╇{'━' * 24}╇{'━' * 11}╇━━━━━━━╇━━━━━━━━━╇{'━' * 111}┩\n"
        f"{rows}"
        f"└{rule}┴{'─' * 19}┴{'─' * 24}┴{'─' * 11}┴───────┴─────────┴{'─' * 111}┘\n"
        f"note: {SINK_NOTES[0]}\n"
        f"note: {SINK_NOTES[1]}\n"
    )


def _rewinds() -> Findings:
    """`diff` of the stock run's savepoints given in the wrong order: SP1 is the earlier, so every partition's next
    offset went back from 10000 to 5000."""
    return run_diff(DiffRequest(STOCK_AFTER, STOCK_BEFORE), Progress())


REWIND = "error  rewind  restore-stock-3b5fcb84/{p}  count 5000  offsets 5000..9999\n"


def test_diff_at_80_columns() -> None:
    block = (
        REWIND + "    source badafca9cf4780dedc3db9bfa19c38b8: next offset 10000 in checkpoint 28,\n"
        "    5000 in checkpoint 14: offsets 5000..9999 are read again\n"
    )
    assert _findings_part(80, _rewinds()) == "findings\n" + "".join(block.format(p=p) + "\n" for p in range(4))


def test_diff_at_120_columns() -> None:
    block = (
        REWIND + "    source badafca9cf4780dedc3db9bfa19c38b8: next offset 10000 in checkpoint 28, "
        "5000 in checkpoint 14: offsets\n"
        "    5000..9999 are read again\n"
    )
    assert _findings_part(120, _rewinds()) == "findings\n" + "".join(block.format(p=p) + "\n" for p in range(4))


GUARD_HEAD = (
    "job jar job.jar: Beam 2.62.0 with beam-runners-flink-1.19, unpatched\n"
    "source badafca9cf4780dedc3db9bfa19c38b8: parallelism 2, beam_flink_source; "
    + ", ".join(f"restore-stock-3b5fcb84:{p}@5000" for p in range(4))
    + "\n"
    "  KafkaIO.Read: group.id=restore-stock-3b5fcb84, auto.offset.reset=earliest, enable.auto.commit=False, "
    "commitOffsetsInFinalize=True\n"
    "findings\n"
)
REREADS = "error  restore_rereads_partition  restore-stock-3b5fcb84/{p}  count 0\n"


def _guard_shown(width: int) -> str:
    output = _console(width)
    report = _stock_guard()
    output.guard_report(report)
    text = _text(output)
    line = "splitaudit-guard: UNSAFE errors=4 kinds=restore_rereads_partition"
    line += f" savepoint={report.savepoint} jar=job.jar\n"
    assert text.endswith(line)
    return text.removesuffix(line)


def test_guard_at_80_columns() -> None:
    block = (
        REREADS + "    source badafca9cf4780dedc3db9bfa19c38b8: Beam 2.62.0 with\n"
        "    beam-runners-flink-1.19, unpatched re-initialises the restored FlinkSource\n"
        "    splits (beam#31313): besides the restored reader at 5000, a second reader\n"
        "    starts at the group's committed offset (group.id restore-stock-3b5fcb84,\n"
        "    whose offsets the job commits; --bootstrap reads them): every record\n"
        "    produced after the restore is read twice; run `splitaudit patch-jar JAR\n"
        "    --out PATCHED.jar` and restore with PATCHED.jar\n"
    )
    assert _guard_shown(80) == GUARD_HEAD + "".join(block.format(p=p) + "\n" for p in range(4))


def test_guard_at_120_columns() -> None:
    block = (
        REREADS + "    source badafca9cf4780dedc3db9bfa19c38b8: Beam 2.62.0 with beam-runners-flink-1.19, unpatched "
        "re-initialises the\n"
        "    restored FlinkSource splits (beam#31313): besides the restored reader at 5000, a second reader starts at "
        "the group's\n"
        "    committed offset (group.id restore-stock-3b5fcb84, whose offsets the job commits; --bootstrap reads "
        "them): every\n"
        "    record produced after the restore is read twice; run `splitaudit patch-jar JAR --out PATCHED.jar` and "
        "restore with\n"
        "    PATCHED.jar\n"
    )
    assert _guard_shown(120) == GUARD_HEAD + "".join(block.format(p=p) + "\n" for p in range(4))


@pytest.mark.parametrize(
    "command",
    [
        # The stock run's savepoints in the wrong order (four rewinds) and a topic grown to 6 partitions while the
        # job was down (4 and 5 held by nobody): the audit of savepoints alone, no Spark.
        ["audit", "--savepoint", STOCK_BEFORE, "--before", STOCK_AFTER, "--partitions", "6"],
        ["diff", STOCK_AFTER, STOCK_BEFORE],
    ],
    ids=["audit", "diff"],
)
def test_at_80_columns_the_cli_shows_each_detail_as_whole_lines(command: list[str]) -> None:
    found = CliRunner().invoke(main, ["--json", *command])
    assert found.exit_code == 1, found.output
    details = [f["detail"] for f in json.loads(found.stdout)["findings"]]
    shown = CliRunner().invoke(main, command, env={"COLUMNS": "80"})
    assert shown.exit_code == 1, shown.output
    lines = shown.stdout.splitlines()
    blocks = lines[lines.index("findings") + 1 :]
    heads = [i for i, line in enumerate(blocks) if line.startswith("error  ")]
    assert len(heads) == len(details) == (6 if command[0] == "audit" else 4)
    for head, detail in zip(heads, details, strict=True):
        assert blocks[head - 1 : head] in ([], [""])  # a blank line between two findings
        below = list(itertools.takewhile(lambda line: line.startswith("    "), blocks[head + 1 :]))
        # Whole words on lines of at most 80 columns, indented, that read back as the detail.
        assert all(line.startswith("    ") and len(line) <= 80 for line in below)
        assert " ".join(line.strip() for line in below) == detail
