"""Place the ``import guardkit`` a fix adds where the host's isort or ruff would put it.

``ImportStyle.load(root)`` reads ``[tool.ruff.lint.isort]`` (or ``[tool.ruff.isort]``, ruff's
``ruff.toml``/``.ruff.toml``) or ``[tool.isort]``: ``known-first-party``, ``known-third-party``,
``force-sort-within-sections``, ``from-first``; modules under the project root or ``src/`` are
first-party, as ruff's default ``src`` setting makes them. ``place_guardkit_import`` then moves
the import into the third-party section, in sorted position, or opens that section between the
standard-library and first-party ones, so the host's own ``ruff check --select I`` passes.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ImportStyle", "place_guardkit_import"]

_LINE = "import guardkit\n"
_FUTURE, _STDLIB, _THIRD, _FIRST, _LOCAL = range(5)


def _table(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        data = data.get(key, {}) if isinstance(data, dict) else {}
    return data if isinstance(data, dict) else {}


def _names(raw: Any) -> frozenset[str]:
    return frozenset(str(v) for v in raw) if isinstance(raw, list) else frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportStyle:
    """The host's import-sorting settings that decide where ``import guardkit`` goes."""

    first_party: frozenset[str] = frozenset()
    third_party: frozenset[str] = frozenset()
    force_sort_within_sections: bool = False
    from_first: bool = False

    @classmethod
    def load(cls, root: Path) -> ImportStyle:
        """Settings of the project at ``root`` (defaults where it configures nothing)."""
        data: dict[str, Any] = {}
        for name in ("pyproject.toml", "ruff.toml", ".ruff.toml"):
            try:
                with (root / name).open("rb") as fh:
                    loaded = tomllib.load(fh)
            except (OSError, tomllib.TOMLDecodeError):
                continue
            ruff = _table(loaded, "tool", "ruff") if name == "pyproject.toml" else loaded
            data = _table(ruff, "lint", "isort") or _table(ruff, "isort")
            data = data or (_table(loaded, "tool", "isort") if name == "pyproject.toml" else {})
            if data:
                break
        local = {p.stem for base in (root, root / "src") if base.is_dir() for p in base.iterdir()}
        local = {n for n in local if n.isidentifier() and n not in sys.stdlib_module_names}

        def get(key: str) -> Any:
            return data.get(key, data.get(key.replace("-", "_")))

        return cls(
            first_party=_names(get("known-first-party")) | frozenset(local),
            third_party=_names(get("known-third-party")),
            force_sort_within_sections=bool(get("force-sort-within-sections")),
            from_first=bool(get("from-first")),
        )

    def section(self, node: ast.Import | ast.ImportFrom) -> int:
        if isinstance(node, ast.ImportFrom) and node.level:
            return _LOCAL
        name = (node.module or "") if isinstance(node, ast.ImportFrom) else node.names[0].name
        top = name.partition(".")[0]
        if top == "__future__":
            return _FUTURE
        if top in self.third_party:
            return _THIRD
        if top in self.first_party:
            return _FIRST
        return _STDLIB if top in sys.stdlib_module_names else _THIRD


def _module(node: ast.Import | ast.ImportFrom) -> str:
    name = node.module or "" if isinstance(node, ast.ImportFrom) else node.names[0].name
    return name.lower()


def _before(style: ImportStyle, node: ast.Import | ast.ImportFrom) -> bool:
    """Whether ``import guardkit`` sorts before ``node`` in the same section."""
    if style.force_sort_within_sections:
        return _module(node) > "guardkit"
    if style.from_first:
        return isinstance(node, ast.Import) and _module(node) > "guardkit"
    return isinstance(node, ast.ImportFrom) or _module(node) > "guardkit"


def place_guardkit_import(code: str, style: ImportStyle) -> str:
    """Move a top-level ``import guardkit`` line into the host's third-party section."""
    lines = code.splitlines(keepends=True)
    if _LINE not in lines:
        return code
    del lines[lines.index(_LINE)]
    module = ast.parse("".join(lines))
    block: list[ast.Import | ast.ImportFrom] = []
    for stmt in module.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            block.append(stmt)
        elif block or not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            break
    third = [n for n in block if style.section(n) == _THIRD]
    earlier = [n for n in block if style.section(n) < _THIRD]
    later = [n for n in block if style.section(n) > _THIRD]
    at = None
    if third:
        at = next((n for n in third if _before(style, n)), None)
        row = at.lineno - 1 if at else third[-1].end_lineno or third[-1].lineno
        text = [_LINE]
    elif earlier:
        row = earlier[-1].end_lineno or earlier[-1].lineno
        text = ["\n", _LINE]
    elif later:
        row = later[0].lineno - 1
        text = [_LINE, "\n"]
    else:
        docstring = module.body[0] if module.body and isinstance(module.body[0], ast.Expr) else None
        row = (docstring.end_lineno or 0) if docstring else 0
        text = ["\n", _LINE] if docstring else [_LINE]
    lines[row:row] = text
    if not (later or (third and at)):
        _space_after(lines, row + len(text))
    return "".join(lines)


def _space_after(lines: list[str], row: int) -> None:
    """The blank lines isort/ruff want after an import block: two before a ``def``, ``class``
    or decorator, one before other code."""
    end = row
    while end < len(lines) and not lines[end].strip():
        end += 1
    if end == len(lines):
        return
    following = lines[end].lstrip()
    wanted = 2 if following.startswith(("def ", "class ", "async def ", "@")) else 1
    lines[row:end] = ["\n"] * wanted
