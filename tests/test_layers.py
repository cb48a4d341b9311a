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
    "plugins": (),
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
