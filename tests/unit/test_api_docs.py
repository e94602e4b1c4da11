"""The API reference (docs/api/) agrees with the code it describes by hand, and builds without pyspark.

The generated parts come from the docstrings; the data source's column tables and the findings' kind table are
written in the pages, so they are checked here against `SCHEMAS` and the module's kind constants. The build reads
the source with griffe (static analysis): it must not import pyspark, which a docs-only environment may lack and
whose import is slow.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from splitaudit.audit.checks import findings
from splitaudit.audit.checks.tables import SCHEMAS

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api"
ROW = re.compile(r"^\| `([a-z_]+)` \| ([^|]+?) \|(.*)$")
# the Spark SQL types `from_arrow_schema` gives the Arrow types of SCHEMAS
SPARK_TYPES = {pa.string(): "string", pa.int32(): "int", pa.int64(): "bigint", pa.bool_(): "boolean"}


def _tables(page: str) -> dict[str, list[tuple[str, str, str]]]:
    """The page's `### `name`` sections and the (column, type, null) rows of the table in each."""
    tables: dict[str, list[tuple[str, str, str]]] = {}
    section = None
    for line in (API / page).read_text().splitlines():
        if heading := re.fullmatch(r"### `([a-z_]+)`", line):
            section = tables.setdefault(heading.group(1), [])
        elif line.startswith("## "):
            section = None
        elif section is not None and (row := ROW.match(line)):
            section.append((row.group(1), row.group(2).strip(), row.group(3).split("|")[0].strip()))
    return tables


def test_the_data_source_page_lists_every_column_of_every_table() -> None:
    expected = {
        table: [(f.name, SPARK_TYPES[f.type], "" if f.nullable else "not null") for f in schema]
        for table, schema in SCHEMAS.items()
    }
    assert _tables("data-source.md") == expected


def test_the_findings_page_lists_every_kind() -> None:
    not_kinds = {findings.ERROR, findings.WARNING, findings.INFO, findings.BY_LINEAGE, findings.INFERRED}
    constants = {
        (value, name)
        for name, value in vars(findings).items()
        if name.isupper() and isinstance(value, str) and value not in not_kinds
    }
    rows = re.findall(r"^\| `([a-z_]+)` \| `([A-Z_]+)` \|", (API / "findings.md").read_text(), re.MULTILINE)
    assert len(rows) == len(set(rows)) == 31
    assert set(rows) == constants
    assert all(getattr(findings, name) == kind for kind, name in rows)


def test_the_docs_build_strict_without_importing_pyspark(tmp_path: Path) -> None:
    # A pyspark that records its import and fails: griffe reads the modules' source, so the build never gets there.
    shim = tmp_path / "shim" / "pyspark"
    shim.mkdir(parents=True)
    marker = tmp_path / "pyspark-imported"
    (shim / "__init__.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nraise ImportError('pyspark is not importable in this test')\n"
    )
    env = os.environ | {"PYTHONPATH": str(shim.parent), "NO_MKDOCS_2_WARNING": "1"}
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.is_file():
        pytest.fail(f"{mkdocs} is missing: the dev extra installs mkdocs")
    built = subprocess.run(
        [str(mkdocs), "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    assert not marker.exists()
    page = (tmp_path / "site" / "api" / "savepoint-view" / "index.html").read_text()
    assert 'id="splitaudit.savepoint_view.read_keyed_state"' in page  # the reference was generated
    assert "def test_read_keyed_state() -&gt; None:" in re.sub(r"<[^>]+>", "", page)  # and the example included
