"""Import contracts for the folders import-linter can't see (they install under guardkit.*)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: What each top-level folder may not import (besides the bare folder names, always banned).
FORBIDDEN = {
    "codemods": (
        "guardkit.engine",
        "guardkit.store",
        "guardkit.local",
        "guardkit.server",
        "guardkit.tools",
        "guardkit.loop",
        "guardkit.plugins",
    ),
    # Integrations use the guard's public surface (Guard, LocalAgent, AgentClient, the tool
    # layer, the loop, the static pass for coverage): never the engine, a store or the server.
    "plugins": (
        "guardkit.engine",
        "guardkit.limits",
        "guardkit.store",
        "guardkit.server",
        "guardkit._agent_api",
        "guardkit._tokens",
    ),
}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_folder_respects_its_layer(folder: str) -> None:
    problems = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for name in _imports(path):
            top = name.split(".")[0]
            if top in ("codemods", "plugins"):
                problems.append(f"{path.relative_to(ROOT)}: bare import of {name}")
            if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN[folder]):
                problems.append(f"{path.relative_to(ROOT)}: imports {name}")
    assert problems == []


def test_the_import_graph_has_no_cycle() -> None:
    """Tarjan's strongly connected components over guardkit's module-level imports."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("guardkit")
    modules = sorted(m for m in graph.modules if m.startswith("guardkit"))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph.find_modules_directly_imported_by(module):
            if not target.startswith("guardkit"):
                continue
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    assert cycles == []


def _relative_imports(path: Path, folder: Path) -> set[str]:
    """Every module of ``folder`` that ``path`` imports anywhere (in a function, or only for
    type checking, too): the cycles grimp's module-level graph does not show."""
    package = path.relative_to(folder).with_suffix("").parts[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            module = ".".join((*base, *(node.module or "").split("."))).strip(".")
            names = [f"{module}.{a.name}".strip(".") for a in node.names]
            for name in (module, *names):
                if (folder / (name.replace(".", "/") + ".py")).is_file():
                    found.add(name)
    return found


def test_codemods_has_no_import_cycle_even_inside_functions() -> None:
    folder = ROOT / "codemods"
    graph = {
        ".".join(p.relative_to(folder).with_suffix("").parts): _relative_imports(p, folder)
        for p in folder.rglob("*.py")
    }
    cycles = sorted(
        (a, b) for a, targets in graph.items() for b in targets if a < b and a in graph.get(b, ())
    )
    assert cycles == []
