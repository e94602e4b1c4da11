"""Every document or repository path a comment or docstring of the project's Python cites exists in the repository.

A cited path is a token such as `splitaudit/savepoint/FORMAT.md`, `fixtures/kafka/` or `splits/model.py`:
anything ending in `.md`, or whose first component is a top-level entry of the repository, a package of
splitaudit/ or one of the document folders a citation might reach for (`notes/`, `docs/`). It must exist,
relative to the repository root or to splitaudit/. "notes §4.1" (a section of notes the comment does not
name by path) fails too; a named public specification ("PKWARE APPNOTE 6.3 §4.3") is not a repository path.
Build output (`target/`) and hidden folders (`.stack/`, `.venv/`) are not citations. Paths of other projects
(`flink-core/.../NumberSequenceSource.java`) start nowhere here and are left alone.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import splitaudit

PACKAGE = Path(splitaudit.__file__).parent
ROOT = PACKAGE.parent
DOCUMENT_FOLDERS = frozenset({"notes", "docs"})
UNNAMED_NOTES = re.compile(r"\bnotes\b[^.\n/]{0,20}§")
PATH = re.compile(r"(?<![\w./:-])([\w*<>.-]+(?:/[\w*<>.-]*)+|[\w.-]+\.md)")
PLACEHOLDER = re.compile(r"<[^>/]*>")  # `restore_<variant>_<phase>/` names every folder of that shape
OUTPUT_FOLDERS = frozenset({"target", "out"})  # build and benchmark output, made by running things
# The project's Python: the package, its tests, the benchmarks and the fixture generators.
SOURCES = ("splitaudit", "tests", "benchmarks", "fixtures")


def _comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    source = path.read_text()
    texts = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                texts.append((node.body[0].lineno, docstring))
    return texts


def _is_citation(token: str) -> bool:
    first = token.split("/", 1)[0]
    if first.startswith(".") or OUTPUT_FOLDERS & set(token.split("/")):
        return False
    if token.endswith(".md") or first in DOCUMENT_FOLDERS or (ROOT / first).exists():
        return True
    # `savepoint/checkpoint` is a phrase; `splits/model.py` and `splits/` are modules and packages.
    last = token.rstrip("/").rsplit("/", 1)[-1]
    return (PACKAGE / first).exists() and (token.endswith("/") or "." in last)


def _exists(token: str) -> bool:
    token = PLACEHOLDER.sub("*", token)
    for base in (ROOT, PACKAGE):
        if "*" in token:
            if any(base.glob(token.rstrip("/"))):
                return True
        elif (base / token).exists():
            return True
    return False


def broken_citations(path: Path, shown_as: str) -> list[str]:
    """`shown_as:line: citation` for each path the comments and docstrings of `path` cite that does not exist."""
    bad = []
    for line, text in sorted(_comments_and_docstrings(path)):
        if UNNAMED_NOTES.search(text):
            bad.append(f"{shown_as}:{line}: a section of unnamed notes")
        for match in PATH.finditer(text):
            token = match.group(1).rstrip(".,:;")
            if _is_citation(token) and not _exists(token):
                bad.append(f"{shown_as}:{line}: {token}")
    return bad


def _modules() -> list[Path]:
    """Every module of SOURCES but this one, whose docstring and tests cite missing paths on purpose."""
    here = Path(__file__).resolve()
    return [p for folder in SOURCES for p in sorted((ROOT / folder).rglob("*.py")) if p.resolve() != here]


def test_every_module_cites_only_what_exists() -> None:
    assert [bad for path in _modules() for bad in broken_citations(path, str(path.relative_to(ROOT)))] == []


def test_a_missing_document_is_caught(tmp_path: Path) -> None:
    sample = PACKAGE / "splits" / "model.py"
    assert broken_citations(sample, "model.py") == []
    fake = tmp_path / "fake.py"
    fake.write_text(
        '"""Layouts: notes/flink-savepoint-format.md §1, DESIGN.md; splitaudit/splits/FORMAT.md is real."""\n'
        "# see splits/nosuch.py and fixtures/kafka/, flink-core/.../NumberSequenceSource.java\n"
        "# (notes §4.1); a public spec: PKWARE APPNOTE 6.3 §4.3\n"
    )
    found = [line.split(": ", 1)[1] for line in broken_citations(fake, "fake.py")]
    assert found == ["notes/flink-savepoint-format.md", "DESIGN.md", "splits/nosuch.py", "a section of unnamed notes"]
