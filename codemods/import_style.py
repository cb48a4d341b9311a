"""Place the guardkit imports a fix adds where the host's isort or ruff would put it.

``ImportStyle.load(root)`` reads ``[tool.ruff.lint.isort]`` (or ``[tool.ruff.isort]``, ruff's
``ruff.toml``/``.ruff.toml``) or ``[tool.isort]``: ``known-first-party``, ``known-third-party``,
``force-sort-within-sections``, ``from-first``, ``extra-standard-library`` (isort's
``known_standard_library`` too), ``length-sort``, ``length-sort-straight``; modules under the
project root or ``src/`` are first-party, as ruff's default ``src`` setting makes them. It also
reads the line length the host's formatter or linter enforces (ruff, black, flake8).
``place_guardkit_imports`` then moves
each added ``import guardkit`` / ``from guardkit... import ...`` line into the third-party
section, in sorted position, or opens that section between the standard-library and
first-party ones, so the host's own ``ruff check --select I`` passes.
"""

from __future__ import annotations

import ast
import configparser
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .parsing import parse_module

__all__ = ["ImportStyle", "place_guardkit_imports"]

_FUTURE, _STDLIB, _THIRD, _FIRST, _LOCAL = range(5)


def _table(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        data = data.get(key, {}) if isinstance(data, dict) else {}
    return data if isinstance(data, dict) else {}


def _names(raw: Any) -> frozenset[str]:
    return frozenset(str(v) for v in raw) if isinstance(raw, list) else frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportStyle:
    """The host's import-sorting settings that decide where guardkit's imports go, and the
    line length its formatter or linter enforces (``layout.fit`` splits longer new lines)."""

    first_party: frozenset[str] = frozenset()
    third_party: frozenset[str] = frozenset()
    #: modules the host counts as standard library beyond Python's own (``typing_extensions``)
    standard_library: frozenset[str] = frozenset()
    force_sort_within_sections: bool = False
    from_first: bool = False
    #: imports sorted by the length of their module name, then by name (``length-sort``), or
    #: only the ``import x`` ones (``length-sort-straight``)
    length_sort: bool = False
    length_sort_straight: bool = False
    line_length: int = 88

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
            standard_library=_names(get("extra-standard-library"))
            | _names(get("known-standard-library")),
            force_sort_within_sections=bool(get("force-sort-within-sections")),
            from_first=bool(get("from-first")),
            length_sort=bool(get("length-sort")),
            length_sort_straight=bool(get("length-sort-straight")),
            line_length=_line_length(root),
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
        if top in self.standard_library:
            return _STDLIB
        return _STDLIB if top in sys.stdlib_module_names else _THIRD

    def sort_key(self, node: ast.Import | ast.ImportFrom) -> tuple[int, str]:
        """Where an import sorts among the ones of its kind in its section: by its module's
        lowercased name, after its length where the host sorts by length."""
        name = _module(node)
        by_length = self.length_sort or (self.length_sort_straight and isinstance(node, ast.Import))
        return (len(name) if by_length else 0, name)


#: where a line length is configured: file, table path (TOML) or section (INI), key
_LENGTHS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("pyproject.toml", ("tool", "ruff"), "line-length"),
    ("ruff.toml", (), "line-length"),
    (".ruff.toml", (), "line-length"),
    ("pyproject.toml", ("tool", "black"), "line-length"),
    ("setup.cfg", ("flake8",), "max-line-length"),
    ("tox.ini", ("flake8",), "max-line-length"),
    (".flake8", ("flake8",), "max-line-length"),
)


def _line_length(root: Path) -> int:
    """The shortest line length the host configures for ruff, black or flake8 (88, their
    formatters' default, when none is set): every one of them must pass on the fix."""
    found: list[int] = []
    for name, where, key in _LENGTHS:
        path = root / name
        if not path.is_file():
            continue
        try:
            if name.endswith(".toml"):
                with path.open("rb") as fh:
                    value = _table(tomllib.load(fh), *where).get(key)
            else:
                parser = configparser.ConfigParser()
                parser.read(path, encoding="utf-8")
                value = parser.get(where[0], key, fallback=None)
            if value is not None:
                found.append(int(value))
        except (OSError, ValueError, tomllib.TOMLDecodeError, configparser.Error):
            continue
    return min((n for n in found if n > 0), default=88)


def _module(node: ast.Import | ast.ImportFrom) -> str:
    name = node.module or "" if isinstance(node, ast.ImportFrom) else node.names[0].name
    return name.lower()


def _before(style: ImportStyle, node: ast.Import | ast.ImportFrom, added: ast.stmt) -> bool:
    """Whether the ``added`` guardkit import sorts before ``node`` in the same section."""
    assert isinstance(added, (ast.Import, ast.ImportFrom))
    mine, is_from = style.sort_key(added), isinstance(added, ast.ImportFrom)
    theirs = style.sort_key(node)
    if style.force_sort_within_sections:
        return theirs > mine
    if isinstance(node, ast.ImportFrom) == is_from:
        return theirs > mine
    # isort's default puts ``import x`` lines before ``from x import y`` lines; from-first flips it
    return is_from == style.from_first


def _is_guardkit_import(line: str) -> bool:
    return line.startswith(("import guardkit", "from guardkit")) and line.endswith("\n")


def place_guardkit_imports(code: str, style: ImportStyle, original: str = "") -> str:
    """Move each top-level guardkit import line of ``code`` that ``original`` lacks into the
    host's third-party section."""
    known = set(original.splitlines(keepends=True))
    for line in code.splitlines(keepends=True):
        if _is_guardkit_import(line) and line not in known:
            code = _place(code, line, style)
    return code


def _place(code: str, line: str, style: ImportStyle) -> str:
    lines = code.splitlines(keepends=True)
    del lines[lines.index(line)]
    added = ast.parse(line).body[0]
    module = parse_module("".join(lines))
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
        at = next((n for n in third if _before(style, n, added)), None)
        row = at.lineno - 1 if at else third[-1].end_lineno or third[-1].lineno
        text = [line]
    elif earlier:
        row = earlier[-1].end_lineno or earlier[-1].lineno
        text = ["\n", line]
    elif later:
        row = later[0].lineno - 1
        text = [line, "\n"]
    else:
        docstring = module.body[0] if module.body and isinstance(module.body[0], ast.Expr) else None
        row = (docstring.end_lineno or 0) if docstring else 0
        text = ["\n", line] if docstring else [line]
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
