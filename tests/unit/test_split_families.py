"""A split family describes itself: no code outside `splitaudit/splits/` asks which family a state is.

The audit reaches split state only through the `SplitState` / `EnumeratorState` protocols, so adding a
connector is one module and one registry entry. This fails on an `isinstance`/`issubclass` call or a `match`
class pattern outside `splits/` that names a class defined in `splits/`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import splitaudit

PACKAGE = Path(splitaudit.__file__).parent
SPLITS = PACKAGE / "splits"


def _split_classes() -> set[str]:
    return {
        node.name
        for path in SPLITS.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
    }


def _names(node: ast.expr) -> set[str]:
    """The class names an isinstance target or a pattern's class mentions (`A`, `m.A`, `(A, B)`, `A | B`)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _family_checks(path: Path, classes: set[str]) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        named: set[str] = set()
        if not isinstance(node, ast.Call | ast.MatchClass):
            continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
        ):
            named = _names(node.args[1]) & classes
        elif isinstance(node, ast.MatchClass):
            named = _names(node.cls) & classes
        if named:
            found.append(f"{path}:{node.lineno} checks {', '.join(sorted(named))}")
    return found


def test_no_family_dispatch_outside_splits() -> None:
    classes = _split_classes()
    assert {"KafkaPartitionSplit", "FlinkSourceSplit", "NumberSequenceSplit", "UnknownState"} <= classes
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if SPLITS not in p.parents]
    assert [bad for path in outside for bad in _family_checks(path, classes)] == []


def test_the_check_sees_a_dispatch(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f(state, beam):\n"
        "    if isinstance(state, KafkaPartitionSplit | beam.FlinkSourceSplit):\n"
        "        return 1\n"
        "    match state:\n"
        "        case NumberSequenceSplit():\n"
        "            return 2\n"
        "    return isinstance(state, dict)\n"
    )
    classes = _split_classes()
    found = [line.rpartition(" checks ")[2] for line in _family_checks(sample, classes)]
    assert sorted(found) == ["FlinkSourceSplit, KafkaPartitionSplit", "NumberSequenceSplit"]
