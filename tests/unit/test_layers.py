"""The package's import rule: every import points down the layers docs/architecture.md lists.

A module may import from its own package or from a package of a lower layer, never from its own layer's other
packages or from above. Function-level imports count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import splitaudit

PACKAGE = Path(splitaudit.__file__).parent

# Lowest first. Each entry is a package (folder) or a top-level module of splitaudit.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "progress", "home", "logs"}),
    frozenset({"polling"}),
    frozenset({"primitives", "clients"}),
    frozenset({"savepoint", "splits", "patch"}),
    frozenset({"savepoint_view"}),
    frozenset({"audit", "stack"}),
    frozenset({"guard"}),
    frozenset({"scenario"}),
    frozenset({"report"}),
    frozenset({"cli", "pytest_plugin", "__init__"}),
    frozenset({"__main__"}),
)
LAYER_OF = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def _unit(module: str) -> str:
    """The layer unit of a dotted `splitaudit.…` module name: its first component below `splitaudit`."""
    parts = module.split(".")
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
        unit = relative.parts[0].removesuffix(".py")
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
    assert units == set(LAYER_OF)


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


# The lab (the embedded stack, its scenarios and runs) and the command modules that serve only it: the product's
# commands reach none of them; the lab adds its commands through the `splitaudit.commands` entry point group.
LAB = ("splitaudit.scenario", "splitaudit.stack")
LAB_COMMANDS = ("stack", "restore_scenarios", "job_scenarios", "restore_runs", "scenario_options")


def test_the_product_commands_import_nothing_of_the_lab() -> None:
    from importlib.metadata import entry_points

    from splitaudit.cli.group import COMMANDS, ENTRY_POINT_GROUP

    product = {target.partition(":")[0] for target in COMMANDS.values()}
    assert not {module.rpartition(".")[2] for module in product} & set(LAB_COMMANDS)
    lab = {ep.value.partition(":")[0] for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert {module.rpartition(".")[2] for module in lab} <= set(LAB_COMMANDS)
    uses = [
        f"{module}:{line} imports {target}"
        for module in sorted(product | {"splitaudit.cli.group", "splitaudit.cli.context", "splitaudit.cli.options"})
        for line, target in _imports(PACKAGE.parent / f"{module.replace('.', '/')}.py")
        if target.startswith(LAB) or target.rpartition(".")[2] in LAB_COMMANDS
    ]
    assert uses == []
