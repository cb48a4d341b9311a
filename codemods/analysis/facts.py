"""Everything the rules need to know about one module, computed once from a stdlib ``ast`` tree."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .calls import ModelCall, classify_calls
from .catalog import DEFAULT_CATALOG, Catalog
from .dispatch import find_dispatch
from .guards import Guards
from .imports import ImportMap
from .loops import is_bounded
from .risks import denial_escapes, model_supplied_costs
from .tools import Dispatch, ToolSite, find_tools
from .tree import Tree

__all__ = ["ModuleFacts", "analyze"]

Loop = ast.For | ast.AsyncFor | ast.While
_AGENT_WORDS = {"input_schema", "tool_use", "tool_calls", "function_call", "tool_result"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ModuleFacts:
    """Model calls, unbounded loops, tools, dispatch sites and risky guard usage of one module."""

    model_calls: tuple[ModelCall, ...]
    unbounded_loops: tuple[tuple[Loop, tuple[ModelCall, ...]], ...]
    tools: tuple[ToolSite, ...]
    dispatches: tuple[Dispatch, ...]
    costs: tuple[ast.expr, ...]
    escapes: tuple[ast.AST, ...]


def _agentic(tree: Tree, has_model_calls: bool) -> bool:
    if has_model_calls or any(k.arg == "tools" for k in tree.nodes(ast.keyword)):
        return True
    return any(
        isinstance(c.value, str) and c.value in _AGENT_WORDS for c in tree.nodes(ast.Constant)
    )


def _unbounded(
    tree: Tree, imports: ImportMap, calls: list[ModelCall], gates: list[ast.Call]
) -> list[tuple[Loop, tuple[ModelCall, ...]]]:
    by_loop: dict[Loop, list[ModelCall]] = {}
    for call in calls:
        for ctx in call.loops:
            by_loop.setdefault(ctx.loop, []).append(call)
    return [
        (loop, tuple(found))
        for loop, found in by_loop.items()
        if not is_bounded(loop, tree, imports, gates)
    ]


def _unique_tools(tools: list[ToolSite]) -> list[ToolSite]:
    """One entry per reported node; an entry that is gated by any route wins."""
    best: dict[int, ToolSite] = {}
    for site in tools:
        seen = best.get(id(site.node))
        if seen is None or (site.gated and not seen.gated):
            best[id(site.node)] = site
    return list(best.values())


def analyze(module: ast.Module, catalog: Catalog = DEFAULT_CATALOG) -> ModuleFacts:
    """Analyse a parsed module."""
    from .values import Values

    tree = Tree(module)
    imports = ImportMap(tree.nodes(ast.Import, ast.ImportFrom))
    values = Values(tree, imports, catalog)
    calls = classify_calls(tree, values, imports)
    guards = Guards(tree, values, imports, calls)
    tools, dispatches = find_tools(guards)
    more_tools, more_dispatches, raising = find_dispatch(guards, _agentic(tree, bool(calls.model)))
    escapes = {id(n): n for n in denial_escapes(tree, guards, calls, raising)}
    return ModuleFacts(
        model_calls=tuple(calls.model),
        unbounded_loops=tuple(_unbounded(tree, imports, calls.model, calls.gates)),
        tools=tuple(_unique_tools(tools + more_tools)),
        dispatches=tuple(dispatches + more_dispatches),
        costs=tuple(model_supplied_costs(tree, guards, calls)),
        escapes=tuple(escapes.values()),
    )
