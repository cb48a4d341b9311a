"""Dispatch through tables the analysis cannot list: a callee looked up by a name the model
chose, then called with the tool call's input.

``self.tool_map.get(name)`` ... ``await tool(**tool_input)``, ``get_function(name)(**args)``,
``getattr(self, name)(**arguments)``: the functions behind them are not known here (built by a
comprehension, loaded from a folder), so the site is reported without a fix.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .chosen import model_chosen
from .guards import Guards
from .project import TOOL_METHODS
from .tools import Dispatch
from .tree import Tree, dotted

__all__ = ["dynamic_dispatch"]

_INPUT_WORDS = frozenset(
    {"args", "arguments", "kwargs", "tool_args", "tool_input", "input", "inputs", "params"}
)


def _chosen_lookup(expr: ast.expr, tree: Tree) -> bool:
    """``T[name]``, ``T.get(name)``, ``getattr(x, name)``, ``get_tool(name)`` with a model-chosen
    name."""
    if isinstance(expr, ast.Await):
        expr = expr.value
    if isinstance(expr, ast.Subscript):
        return model_chosen(expr.slice, tree)
    if isinstance(expr, ast.Call):
        return any(model_chosen(a, tree) for a in expr.args[:2])
    return False


def _takes_input(call: ast.Call) -> bool:
    for arg in [*call.args, *call.keywords]:
        value = arg.value if isinstance(arg, (ast.keyword, ast.Starred)) else arg
        if isinstance(arg, ast.keyword) and arg.arg is None:
            return True  # **arguments
        name = dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
        if name and name.rpartition(".")[2] in _INPUT_WORDS:
            return True
    return False


def dynamic_dispatch(guards: Guards, known: set[int]) -> Iterator[Dispatch]:
    """Dispatch sites through unknown tables (``known``: ids of calls already reported)."""
    tree = guards.tree
    aliases: dict[tuple[ast.AST, str], ast.expr] = {}
    for assign in tree.nodes(ast.Assign):
        target = assign.targets[0] if len(assign.targets) == 1 else None
        if isinstance(target, ast.Name) and _chosen_lookup(assign.value, tree):
            aliases[(tree.function_of(assign), target.id)] = assign.value
    for call in tree.nodes(ast.Call):
        if id(call) in known or not _takes_input(call):
            continue
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in TOOL_METHODS:
            func = func.value  # ``tool.execute(**args)`` on the looked-up tool
        lookup: ast.expr | None = func if _chosen_lookup(func, tree) else None
        if lookup is None and isinstance(func, ast.Name):
            lookup = aliases.get((tree.function_of(call), func.id))
        if lookup is None:
            continue
        symbol = ast.unparse(lookup.value if isinstance(lookup, ast.Await) else lookup)
        yield Dispatch(node=call, symbol=symbol, guarded=guards.request_before(call), fixable=False)
