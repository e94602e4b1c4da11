"""The package's import rule: every import points down the layers docs/architecture.md lists.

A module may import from its own package or from a package of a lower layer, never from its own layer's other
packages or from above. Function-level imports count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import splitaudit
import splitaudit_lab

PACKAGE = Path(splitaudit.__file__).parent

# Lowest first. Each entry is a package (folder) or a top-level module of splitaudit; the audit's pure checks
# (`audit/checks/`) are a unit of their own, below both the audit's Spark passes and the guard, which share a layer
# and so never import each other.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "progress", "home", "logs"}),
    frozenset({"polling"}),
    frozenset({"primitives", "clients"}),
    frozenset({"savepoint", "splits", "patch"}),
    frozenset({"savepoint_view"}),
    frozenset({"audit.checks"}),
    frozenset({"audit", "guard"}),
    frozenset({"report"}),
    frozenset({"cli", "pytest_plugin", "__init__"}),
    frozenset({"__main__"}),
)
LAYER_OF = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def _unit(module: str) -> str:
    """The layer unit of a dotted `splitaudit.…` module name: its first component below `splitaudit`
    (`audit.checks` for the audit's pure checks)."""
    parts = module.split(".")
    if parts[1:3] == ["audit", "checks"]:
        return "audit.checks"
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module `path` imports by absolute name, with its line (`from splitaudit import x`: splitaudit.x)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] if node.module != "splitaudit" else [f"splitaudit.{a.name}" for a in node.names]
            found += [(node.lineno, name) for name in names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return found


def _violations() -> list[str]:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        unit = _unit(".".join(("splitaudit", *relative.with_suffix("").parts)))
        for line, target in _imports(path):
            if not target.startswith("splitaudit."):
                continue
            target_unit = _unit(target)
            if target_unit == unit:
                continue
            if LAYER_OF[target_unit] >= LAYER_OF[unit]:
                bad.append(f"splitaudit/{relative}:{line} imports {target} ({unit} may not use {target_unit})")
    return bad


def test_every_package_has_a_layer() -> None:
    units = {p.name.removesuffix(".py") for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert units | {"audit.checks"} == set(LAYER_OF)


def test_the_audits_checks_run_without_spark() -> None:
    # The guard and the watch stand on them, on a machine that may have no Spark: not even a lazy import.
    uses = [
        f"splitaudit/{path.relative_to(PACKAGE)}:{line} imports {module}"
        for path in sorted((PACKAGE / "audit" / "checks").rglob("*.py"))
        for line, module in _imports(path)
        if module.partition(".")[0] == "pyspark"
    ]
    assert uses == []


def test_imports_point_down_the_layers() -> None:
    assert _violations() == []


def test_only_the_cli_uses_click() -> None:
    # The layers below raise splitaudit.errors' errors (a UsageError for a bad request: exit 2); the CLI's `run`
    # shows them through the Output. click's own errors would bypass it, and tie a library caller to click.
    users = [
        f"splitaudit/{path.relative_to(PACKAGE)}:{line} imports {module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "cli"
        for line, module in _imports(path)
        if module.partition(".")[0] == "click"
    ]
    assert users == []


# The lab (`splitaudit_lab`, a distribution of its own): above the whole product, which never imports it. Its own
# layers, lowest first, as the product's: a module may import from its own package or a lower one.
LAB = Path(splitaudit_lab.__file__).parent
LAB_LAYERS = {"stack": 0, "scenario": 1, "report": 2, "cli": 3, "__init__": 4}


def test_the_product_never_imports_the_lab() -> None:
    sources = [*sorted(PACKAGE.rglob("*.py")), PACKAGE.parent / "pyspark_flink_savepoint.py"]
    uses = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
        for path in sources
        for line, target in _imports(path)
        if target.partition(".")[0] == "splitaudit_lab"
    ]
    assert uses == []


def test_the_lab_points_down_its_layers_and_uses_no_private_name_of_the_product() -> None:
    bad = []
    for path in sorted(LAB.rglob("*.py")):
        relative = path.relative_to(LAB)
        unit = relative.parts[0].removesuffix(".py")
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("splitaudit."):
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private or any(part.startswith("_") for part in node.module.split(".")):
                    bad.append(f"{relative}:{node.lineno} imports {node.module}: {private or 'a private module'}")
        for line, target in _imports(path):
            if target.partition(".")[0] != "splitaudit_lab" or unit == "__init__":
                continue
            target_unit = target.split(".")[1] if "." in target else "__init__"
            if target_unit != unit and LAB_LAYERS[target_unit] >= LAB_LAYERS[unit]:
                bad.append(f"{relative}:{line} imports {target} ({unit} may not use {target_unit})")
    assert bad == []


def test_the_lab_adds_its_commands_through_the_entry_points_and_the_product_runs_none() -> None:
    from importlib.metadata import entry_points

    from splitaudit.cli.group import COMMANDS, ENTRY_POINT_GROUP, LAB_COMMANDS

    assert all(target.startswith("splitaudit.cli.") for target in COMMANDS.values())
    lab = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert set(lab) == LAB_COMMANDS
    assert all(target.startswith("splitaudit_lab.cli.") for target in lab.values())


MAX_PARAMETERS = 8  # beyond this a function's arguments are a settings object or a case of their own


def test_no_function_takes_more_than_eight_parameters() -> None:
    # A frozen dataclass (a request, a settings group, a case) carries what belongs together; `self` and `cls` do
    # not count. The product and the lab alike.
    sources = [*PACKAGE.rglob("*.py"), *LAB.rglob("*.py"), PACKAGE.parent / "pyspark_flink_savepoint.py"]
    wide = []
    for path in sorted(sources):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                names = [a.arg for a in arguments if a.arg not in ("self", "cls")]
                if len(names) > MAX_PARAMETERS:
                    wide.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}: {len(names)}")
    assert wide == []
