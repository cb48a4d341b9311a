"""Find functions exposed to a model as tools: framework decorators, ``Tool(func=...)``
objects, tool classes (``smolagents.Tool.forward``, ``BaseTool._run``) and whatever the project
index found handed to a model or an agent in ``tools=``/``functions=`` (in any module).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .catalog import (
    MODULE_TOOL_SPECS,
    SOURCE_CHECKED,
    TOOL_BASES,
    TOOL_CONSTRUCTORS,
    TOOL_SPEC_BASES,
)
from .guards import Guards
from .handed import made_tools
from .tree import dotted

__all__ = ["Dispatch", "ToolSite", "find_tools"]

Def = ast.FunctionDef | ast.AsyncFunctionDef
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSite:
    """A tool: ``node`` is where it is reported (its ``def`` when it is defined here)."""

    name: str
    node: ast.AST
    how: str
    gated: bool
    fixable: bool
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Dispatch:
    """A place that runs a model-chosen tool (a dispatch-table call, an ``if name ==`` branch)."""

    node: ast.AST
    symbol: str
    guarded: bool
    fixable: bool
    #: refs of the methods the dispatch runs, when the looked-up value has a known type
    runs: tuple[str, ...] = ()


def find_tools(
    guards: Guards, flowed: frozenset[str] = frozenset(), nested: Sequence[Def] = ()
) -> tuple[list[ToolSite], list[Dispatch]]:
    """Tools exposed by decorators, constructors and classes, and the module's definitions in
    ``flowed`` (qualified names the project index saw handed to a model); MCP ``call_tool``
    dispatchers."""
    tools: list[ToolSite] = []
    dispatches: list[Dispatch] = []
    tree = guards.tree
    prefix = f"{guards.values.module}." if guards.values.module else ""
    functions: list[Def] = [*tree.nodes(ast.FunctionDef), *tree.nodes(ast.AsyncFunctionDef)]
    for func in functions:
        if func.decorator_list:
            _decorated(guards, func, tools, dispatches)
        owner = tree.parent(func)
        name = f"{owner.name}.{func.name}" if isinstance(owner, ast.ClassDef) else func.name
        if prefix + name in flowed and (owner is tree.module or isinstance(owner, ast.ClassDef)):
            gated = guards.function_gated(func)
            how = "tool class" if isinstance(owner, ast.ClassDef) else "tool list or spec"
            tools.append(ToolSite(name=name, node=func, how=how, gated=gated, fixable=True))
    for func in nested:
        gated = guards.function_gated(func)
        site = ToolSite(name=func.name, node=func, how="tool list", gated=gated, fixable=True)
        tools.append(site)
    for call in tree.nodes(ast.Call):
        tools.extend(_constructed(guards, call))
    for cls in tree.nodes(ast.ClassDef):
        tools.extend(_class_tools(guards, cls))
    tools.extend(_module_tool(guards))
    return tools, dispatches


def _module_tool(guards: Guards) -> Iterator[ToolSite]:
    """A module that is a tool of a framework (see ``MODULE_TOOL_SPECS``): the function its
    spec names."""
    roots = {q.partition(".")[0] for q in guards.imports.names.values()}
    specs = {MODULE_TOOL_SPECS[r] for r in roots if r in MODULE_TOOL_SPECS}
    tree = guards.tree
    for node in tree.module.body if specs else ():
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)):
            continue
        if not any(isinstance(t, ast.Name) and t.id in specs for t in node.targets):
            continue
        named = [
            v.value
            for k, v in zip(node.value.keys, node.value.values, strict=True)
            if isinstance(k, ast.Constant) and k.value == "name" and isinstance(v, ast.Constant)
        ]
        func = guards.values.functions.get(str(named[0])) if named else None
        if func is not None:
            gated = guards.function_gated(func)
            yield ToolSite(
                name=func.name, node=func, how="module tool spec", gated=gated, fixable=True
            )


def _decorated(guards: Guards, func: Def, tools: list[ToolSite], out: list[Dispatch]) -> None:
    kinds = [guards.tool_decorator(d, func) for d in func.decorator_list]
    if "dispatcher" in kinds:
        guarded = guards.self_guarded(func) or guards.integration_gated(func)
        out.append(Dispatch(node=func, symbol=func.name, guarded=guarded, fixable=False))
        return
    if "tool" not in kinds:
        return
    last_tool = max(i for i, k in enumerate(kinds) if k == "tool")
    guard_at = [i for i, d in enumerate(func.decorator_list) if guards.is_guard(d, func)]
    above = bool(guard_at) and max(guard_at) < last_tool
    gated = (not above and bool(guard_at)) or func.name in guards.wrapped
    gated = gated or guards.self_guarded(func) or guards.integration_gated(func)
    note = " (the guard decorator sits above the framework decorator)" if above else ""
    checked = any(_source_checked(guards, d) for d in func.decorator_list)
    note = _CHECKED_NOTE if checked else note
    tools.append(
        ToolSite(
            name=func.name,
            node=func,
            how="decorator",
            gated=gated,
            fixable=not above and not checked,
            note=note,
        )
    )


_CHECKED_NOTE = (
    " (its framework checks the tool's source: gate it with the framework's guardkit integration)"
)


def _source_checked(guards: Guards, expr: ast.expr) -> bool:
    target = expr.func if isinstance(expr, ast.Call) else expr
    return guards.imports.resolve(dotted(target)) in SOURCE_CHECKED


def _constructed(guards: Guards, call: ast.Call) -> Iterator[ToolSite]:
    """The function a framework makes a tool of: ``Tool(name, func)``,
    ``FunctionTool.from_defaults(async_fn=f)``, a tool decorator called on it (``tool(f)``,
    ``function_tool(f)``, ``tool("search")(f)``)."""
    for value in made_tools(call, guards.values):
        if isinstance(value, ast.Call) and guards.is_guard(value.func, call):
            continue
        if not isinstance(value, ast.Name):
            continue
        func = guards.values.functions.get(value.id) or _nested_def(guards, value.id, call)
        if func is None and guards.values.qualify(value.id):
            continue  # imported: handed to the project index, reported where it is defined
        if func is None and not _constructor(guards, call):
            continue  # ``tool(t)`` over whatever a loop is given: no function to name
        if func is None:
            gated = value.id in guards.wrapped
            yield ToolSite(name=value.id, node=call, how="Tool(...)", gated=gated, fixable=False)
        else:
            gated = guards.function_gated(func)
            yield ToolSite(name=func.name, node=func, how="Tool(...)", gated=gated, fixable=True)


def _constructor(guards: Guards, call: ast.Call) -> bool:
    """``Tool(name, func)``, not a tool decorator applied by hand."""
    return (guards.imports.resolve(dotted(call.func)) or "") in TOOL_CONSTRUCTORS


def _nested_def(guards: Guards, name: str, at: ast.AST) -> Def | None:
    """The ``def name`` nested in a function around ``at`` (``async def tool_func`` then
    ``Tool(tool_func)``)."""
    tree = guards.tree
    for scope in guards.values.scope_chain(at):
        if scope is tree.module:
            return None
        for node in ast.walk(scope):
            if isinstance(node, _DEFS) and node.name == name and tree.function_of(node) is scope:
                return node
    return None


def _spec_functions(cls: ast.ClassDef) -> tuple[str, ...]:
    """``spec_functions = ["get_price", ("buy", "abuy")]`` in a class body: the names listed."""
    found: list[str] = []
    for item in cls.body:
        target = item.targets[0] if isinstance(item, ast.Assign) and item.targets else None
        target = item.target if isinstance(item, ast.AnnAssign) else target
        value = item.value if isinstance(item, (ast.Assign, ast.AnnAssign)) else None
        if not (isinstance(target, ast.Name) and target.id == "spec_functions"):
            continue
        for node in ast.walk(value) if value is not None else ():
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.append(node.value)
    return tuple(found)


def _class_tools(guards: Guards, cls: ast.ClassDef) -> Iterator[ToolSite]:
    methods: tuple[str, ...] = ()
    for base in cls.bases:
        resolved = guards.imports.resolve(dotted(base)) or ""
        methods += TOOL_BASES.get(resolved, ())
        if resolved in TOOL_SPEC_BASES:
            methods += _spec_functions(cls)
    checked = any(_source_checked(guards, base) for base in cls.bases)
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in methods:
            gated = any(guards.is_guard(d, item) for d in item.decorator_list)
            gated = gated or guards.self_guarded(item)
            yield ToolSite(
                name=f"{cls.name}.{item.name}",
                node=item,
                how="tool class",
                gated=gated,
                fixable=not checked,
                note=_CHECKED_NOTE if checked else "",
            )
