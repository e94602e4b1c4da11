"""The HTML report of real audits, rendered by headless Chromium: a screenshot that is not blank, and the exact
table values in the DOM Chromium builds from the page.

Two pages: `splitaudit audit --html` on the real sink of the stock restore scenario (coverage bars and findings,
no savepoint), and a page whose assignment matrix holds the real splits of the stock savepoint after the restore.
Chromium is Debian's package; `make chromium` installs it (`make test` and `make integration` do it first).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, cast

import pytest
from PIL import Image

from splitaudit.audit.checks.findings import (
    DOUBLE_ASSIGNMENT,
    ERROR,
)
from splitaudit.report.html import COVERED_COLOUR, MISSING_ROW_COLOUR, SEGMENT_COLOURS
from tests.htmldom import Element, elements, find, one

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
STOCK_SINK = FIXTURES / "beam_sink" / "restore_stock_small"
STOCK_SAVEPOINT = FIXTURES / "beam_flink_source" / "restore_stock_after"
CHROMIUM = Path("/usr/bin/chromium")
WINDOW = (1280, 1000)


def _chromium(page: Path, tmp_path: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on the page's file:// URL with a fresh profile, and nothing that calls out."""
    assert CHROMIUM.exists(), "Debian's chromium is not installed: run `make chromium`"
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=tmp_path)
    flags = "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
    flags += " --disable-component-update --disable-sync"
    done = subprocess.run(
        [str(CHROMIUM), *flags.split(), f"--user-data-dir={profile}", *mode, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def _dom(page: Path, tmp_path: Path) -> list[Element]:
    return elements(_chromium(page, tmp_path, "--dump-dom").stdout)


def _screenshot_colours(page: Path, tmp_path: Path) -> dict[tuple[int, int, int], int]:
    """Pixel count of each colour of a screenshot of the page."""
    shot = tmp_path / f"{page.stem}.png"
    _chromium(page, tmp_path, f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}")
    with Image.open(shot) as image:
        assert image.size == WINDOW
        colours = image.convert("RGB").getcolors(WINDOW[0] * WINDOW[1])
    assert colours is not None
    return {cast(tuple[int, int, int], colour): count for count, colour in colours}  # RGB: 3-tuples


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16)


def _assert_not_blank(colours: dict[tuple[int, int, int], int]) -> None:
    assert len(colours) > 50, f"only {len(colours)} colours"
    assert WINDOW[0] * WINDOW[1] - colours.get((255, 255, 255), 0) > 50_000, "almost all white"


def _audit(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m splitaudit …` in a fresh process, as a user runs it; it must find something (exit 1)."""
    audit = subprocess.run(
        [sys.executable, "-m", "splitaudit", *args], capture_output=True, text=True, timeout=600, check=False
    )
    assert audit.returncode == 1, audit.stderr
    return audit


def test_cli_writes_the_sink_audit_page(tmp_path: Path) -> None:
    expected = json.loads((STOCK_SINK / "expected.json").read_text())
    topic, counts = expected["topic"], expected["partitions"]
    page = tmp_path / "stock-sink.html"
    args = ["--json", "audit", "--sink", str(STOCK_SINK / "sink"), "--sink-format", "json", "--master", "local[2]"]
    audit = _audit(*args, "--html", str(page))
    assert json.loads(audit.stdout)["summary"]["duplicate_records"] == 200  # the normal output is still there

    dom = _dom(page, tmp_path)
    summary = {e.attrs["data-summary"]: one(e, "td").text for e in find(dom, "tr", data_summary="*")}
    assert summary == {
        "duplicate_records": str(sum(c["duplicate_rows"] for c in counts.values())),
        "missing_records": str(sum(c["missing_offsets"] for c in counts.values())),
        "double_assigned_partitions": "4",
        "missing_partitions": "0",
        "rewound_partitions": "0",
    }
    coverage = one(dom, "table", id="coverage")
    for partition, c in counts.items():
        row = one(coverage, "tr", data_topic=topic, data_partition=partition)
        numbers = {cell.attrs["data-field"]: cell.text for cell in find(row, "td", data_field="*")}
        assert numbers == {
            "rows": str(c["sink_rows"]),
            "distinct": str(c["expected_records"]),
            "missing": str(c["missing_offsets"]),
            "duplicates": str(c["duplicate_rows"]),
        }
        assert one(row, "span", class_="span").text == "0 … 99"
        double = one(row, "rect", data_kind=DOUBLE_ASSIGNMENT)
        assert (double.attrs["data-from"], double.attrs["data-to"], double.attrs["x"]) == ("50", "99", "500.00")
    findings = [[cell.text for cell in find(row, "td")] for row in find(one(dom, "table", id="findings"), "tr")[1:]]
    assert [row[:6] for row in findings] == [
        [DOUBLE_ASSIGNMENT, ERROR, topic, partition, str(c["double_read_offsets"]), "50..99"]
        for partition, c in counts.items()
    ]
    assert one(dom, "p", id="no-assignment")

    colours = _screenshot_colours(page, tmp_path)
    _assert_not_blank(colours)
    assert colours.get(_rgb(SEGMENT_COLOURS[DOUBLE_ASSIGNMENT]), 0) > 4 * 1_000  # four half bars
    assert colours.get(_rgb(COVERED_COLOUR), 0) > 4 * 1_000

    again = subprocess.run(
        [sys.executable, "-m", "splitaudit", *args[1:], "--html", str(page)],  # without --json: one line on stderr
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 2
    assert f"{page}: already exists" in again.stderr
    assert 'data-summary="duplicate_records"' in page.read_text(encoding="utf-8")


def test_assignment_matrix_of_a_real_savepoint(tmp_path: Path) -> None:
    expected: dict[str, Any] = json.loads((STOCK_SAVEPOINT / "expected.json").read_text())
    topic = expected["topic"]
    # The savepoint's source holds partitions 0..3; the topic is declared to have two more, added while the job
    # was down (one of the ways a partition goes missing, docs/audit.md).
    page = tmp_path / "stock-savepoint.html"
    args = ["--json", "audit", "--savepoint", str(STOCK_SAVEPOINT), "--partitions", "6", "--master", "local[1]"]
    audit = _audit(*args, "--html", str(page))
    assert json.loads(audit.stdout)["summary"]["missing_partitions"] == 2

    dom = _dom(page, tmp_path)
    table = one(dom, "table", class_="assignment")
    assert one(dom, "span", class_="partitions-from").text == f"--partitions 6 (topic {topic})"
    held = {}
    for split in expected["source"]["reader_splits"]:
        for mark in split["split"]["checkpoint"]["partitions"]:
            held[mark["partition"]] = (
                split["subtask"],
                f"split {split['split']['split_index']}, next {mark['next_offset']}",
            )
    assert sorted(held) == [0, 1, 2, 3]
    for partition in range(6):
        row = one(table, "tr", data_topic=topic, data_partition=str(partition))
        cells = {c.attrs["data-subtask"]: c.text for c in find(row, "td", data_subtask="*")}
        if partition in held:
            subtask, text = held[partition]
            assert row.attrs["data-status"] == "ok"
            assert cells == {"0": "", "1": "", "pending": ""} | {str(subtask): text}
        else:
            assert row.attrs["data-status"] == "missing"
            assert one(row, "td", class_="status").text == "missing: held by nobody"
            assert cells == {"0": "", "1": "", "pending": ""}
    assert "next 10000" in one(table, "tr", data_partition="0").text

    colours = _screenshot_colours(page, tmp_path)
    _assert_not_blank(colours)
    assert colours.get(_rgb(MISSING_ROW_COLOUR), 0) > 2 * 1_000  # the two missing rows


def test_the_console_at_80_columns_shows_each_findings_detail_as_whole_lines(tmp_path: Path) -> None:
    # The same audit on the console of a CI log or a pipe (COLUMNS=80): one block per finding, its detail as whole
    # words on lines of at most 80 columns below its head line, never a table column of word fragments.
    args = ["audit", "--sink", str(STOCK_SINK / "sink"), "--sink-format", "json", "--master", "local[2]"]
    log = ["--log", str(tmp_path / "libraries.log")]
    found = json.loads(_audit("--json", *args, *log).stdout)["findings"]
    expected = [f["detail"] + (f"; evidence: {f['evidence']}" if f.get("evidence") else "") for f in found]
    shown = subprocess.run(
        [sys.executable, "-m", "splitaudit", *args, *log],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert shown.returncode == 1, shown.stderr
    lines = shown.stdout.splitlines()
    blocks = lines[lines.index("findings") + 1 :]
    heads = [i for i, line in enumerate(blocks) if line.startswith(("error  ", "warning  ", "info  "))]
    assert len(heads) == len(expected) == 4  # a double assignment per partition
    details = []
    for start in heads:
        below = list(itertools.takewhile(lambda line: line[:4] == "    " and line[4:5] != " ", blocks[start + 1 :]))
        assert max(map(len, [blocks[start], *below])) <= 80
        details.append(" ".join(line.strip() for line in below))
    assert details == expected
