"""Which tools the sources hold: the static pass of ``guardkit scan``, with its verdicts.

The coverage table lists exactly what ``guardkit scan`` analyses: the same files (its file walk
and its rule for test code, ``guardkit.codemods.is_test_path``, the ``[tool.guardkit]``
``exclude`` patterns and ``tool-decorators``), the same whole-project analysis (tools handed to
a model in another module, guardkit integrations as gates), the same gated verdict. This module
is the plugin's one seam to ``guardkit.codemods``; the rest of the plugin only sees
``StaticTool``.

``guardkit.codemods`` has no public call for "every tool in these sources, with whether it is
gated" yet: ``project_tools`` below is that call, built from the scan's own steps (``discover``,
``project_envs``, then each module's ``analyze`` in its project environment). It is meant to
become ``guardkit.codemods.project_tools(paths, root=...)``, returning these fields.
"""

from __future__ import annotations

import ast
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["StaticTool", "project_tools"]

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


def _in_virtualenv(path: str, roots: Sequence[Path]) -> bool:
    """Under a virtualenv (a folder with ``pyvenv.cfg``) or ``site-packages`` below a source."""
    folder = os.path.dirname(path)
    tops = {os.path.abspath(r) for r in roots}
    while folder not in tops and os.path.dirname(folder) != folder:
        name = os.path.basename(folder)
        if name == "site-packages" or os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
            return True
        folder = os.path.dirname(folder)
    return False


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
    from guardkit.codemods.config import find_pyproject, load_config  # type: ignore[import-not-found,unused-ignore]
    from guardkit.codemods.runner import discover, project_envs  # type: ignore[import-not-found,unused-ignore]

    config = load_config(find_pyproject(root))
    files = discover([str(p) for p in paths], config.exclude)
    # The scan walks a virtualenv that is not a hidden folder; a test session must not.
    files = [f for f in files if not _in_virtualenv(f, paths)]
    found: list[StaticTool] = []
    for path, (name, env) in sorted(project_envs(files, config, jobs=1).items()):
        with warnings.catch_warnings():  # the scan ignores them too (the host's own code)
            warnings.simplefilter("ignore")
            module = ast.parse(Path(path).read_bytes(), filename=path)
        package = path.endswith("__init__.py")
        tables = _table_keys(module)
        for site in analyze(module, config.catalog, name=name, is_package=package, env=env).tools:
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
