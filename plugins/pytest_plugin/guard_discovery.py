"""Which tools the sources hold: the static pass of ``guardkit scan``, with its verdicts.

The coverage table lists exactly what ``guardkit scan`` analyses: the same files (test code and
the ``[tool.guardkit]`` ``exclude`` patterns left out, the same ``tool-decorators``), the same
tools, the same gated verdict. This module is the plugin's one seam to ``guardkit.codemods``.

The static pass is to export that answer for a whole project as one call,
``guardkit.codemods.project_tools(paths, root=root)`` (see ``StaticTool`` for what it returns).
Until it does, ``project_tools`` below builds it from the per-module analysis the scan rules read
(``guardkit.codemods.analysis.facts.analyze``) and mirrors the scan's file walk and its rule for
test code (``guardkit.codemods.is_test_path`` on the static pass's side); the rest of the plugin
only sees ``StaticTool``.
"""

from __future__ import annotations

import ast
import fnmatch
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["StaticTool", "is_test_path", "project_tools"]

#: Folders whose contents are test code, and folders no project's own code lives in.
_TEST_DIRS = frozenset({"tests", "test"})
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})
#: Keywords of tool decorators and constructors that set the name a model calls the tool by.
_NAME_KEYWORDS = frozenset({"name", "name_override"})


@dataclass(frozen=True, slots=True, kw_only=True)
class StaticTool:
    """One tool: where it is reported, how it reaches a model, whether it is gated."""

    name: str
    #: Absolute path of the file it is reported in.
    path: str
    line: int
    #: ``co_firstlineno`` of its ``def`` (the first decorator's line); 0 when it has none there.
    def_line: int
    how: str
    gated: bool
    #: Other names a model calls it by: ``@tool("web_search")``, ``name=``, table keys.
    keys: tuple[str, ...]


def is_test_path(path: str, root: str) -> bool:
    """A ``conftest.py``, a ``test_*.py`` / ``*_test.py`` file, or a file under a ``tests`` or
    ``test`` folder below ``root``."""
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    folder, _, name = relative.rpartition("/")
    if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"):
        return True
    return any(part in _TEST_DIRS for part in folder.split("/"))


def _files(paths: Sequence[Path], exclude: tuple[str, ...], root: str) -> Iterator[str]:
    """Python files under ``paths``; a file named explicitly is always kept."""
    found: set[str] = set()
    for base in paths:
        if base.is_file():
            found.add(os.path.abspath(base))
            continue
        for folder, dirs, files in os.walk(base):
            dirs[:] = [
                d
                for d in dirs
                if not d.startswith(".")
                and d not in _SKIP_DIRS
                and d not in _TEST_DIRS
                and not os.path.isfile(os.path.join(folder, d, "pyvenv.cfg"))  # a virtualenv
            ]
            for name in files:
                path = os.path.abspath(os.path.join(folder, name))
                if name.endswith(".py") and not is_test_path(path, str(base)):
                    found.add(path)
    for path in sorted(found):
        shown = os.path.relpath(path, root).replace(os.sep, "/")
        if not any(
            fnmatch.fnmatch(candidate, pattern)
            for pattern in exclude
            for candidate in (shown, path, os.path.basename(path))
        ):
            yield path


def _def_line(node: ast.AST) -> int:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return min([d.lineno for d in node.decorator_list] + [node.lineno])
    return 0


def _decorator_names(node: ast.AST) -> set[str]:
    """``@tool("web_search")``, ``@server.tool(name="rm")``, ``@function_tool(name_override=)``."""
    names: set[str] = set()
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return names
    for decorator in node.decorator_list:
        if not isinstance(decorator, ast.Call):
            continue
        values = [k.value for k in decorator.keywords if k.arg in _NAME_KEYWORDS]
        for value in [*decorator.args[:1], *values]:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                names.add(value.value)
    return names


def _table_keys(module: ast.Module) -> dict[str, set[str]]:
    """``{"search": do_search}`` literals: function name -> the string keys that name it."""
    keys: dict[str, set[str]] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                text = key.value if isinstance(key, ast.Constant) else None
                if isinstance(text, str) and isinstance(value, ast.Name):
                    keys.setdefault(value.id, set()).add(text)
    return keys


def project_tools(paths: Sequence[Path], *, root: Path) -> list[StaticTool]:
    """Every tool under ``paths`` with whether it is gated, sorted by place.

    ``[tool.guardkit]`` comes from the nearest ``pyproject.toml`` at or above ``root``; raises
    ``ValueError`` for a malformed table.
    """
    from guardkit.codemods.analysis.facts import analyze  # type: ignore[import-not-found,unused-ignore]
    from guardkit.codemods.analysis.prefilter import might_match  # type: ignore[import-not-found,unused-ignore]
    from guardkit.codemods.config import find_pyproject, load_config  # type: ignore[import-not-found,unused-ignore]

    config = load_config(find_pyproject(root))
    found: list[StaticTool] = []
    for path in _files(paths, config.exclude, str(root)):
        data = Path(path).read_bytes()
        if not might_match(data, config.catalog):
            continue
        try:
            module = ast.parse(data, filename=path)
        except (SyntaxError, ValueError):
            continue
        tables = _table_keys(module)
        for site in analyze(module, config.catalog).tools:
            short = site.name.rpartition(".")[2]
            keys = tables.get(short, set()) | _decorator_names(site.node)
            found.append(
                StaticTool(
                    name=site.name,
                    path=path,
                    line=getattr(site.node, "lineno", 0),
                    def_line=_def_line(site.node),
                    how=site.how,
                    gated=site.gated,
                    keys=tuple(sorted(keys - {short})),
                )
            )
    return sorted(found, key=lambda t: (t.path, t.line, t.name))
