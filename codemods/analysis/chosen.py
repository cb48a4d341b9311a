"""Is a value a tool name the model chose? The test that tells dispatch from other lookups.

A model-chosen name is read from a tool call (``call.function.name``, ``block.name``,
``tool_call["function"]["name"]``), or is a variable assigned from one, or the ``name``/
``tool_name`` parameter of a dispatch helper. Not chosen by the model: constants, the names of
types (``type(exc).__name__``), event kinds, keys read from configuration or typed by a user.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from .tree import Tree, dotted

__all__ = ["NAME_FIELDS", "model_chosen", "reads_tool_name"]

#: fields and parameters that hold the name of the tool the model picked
NAME_FIELDS = frozenset({"name", "tool_name", "function_name", "fn_name", "tool"})


def _base(expr: ast.expr) -> ast.expr:
    return expr.value if isinstance(expr, (ast.Attribute, ast.Subscript)) else expr


def reads_tool_name(expr: ast.expr) -> bool:
    """``x.name``, ``x["name"]``, ``x.function.name``... on something that is not a type."""
    if isinstance(expr, ast.Subscript):
        field = expr.slice.value if isinstance(expr.slice, ast.Constant) else None
    elif isinstance(expr, ast.Attribute):
        field = expr.attr
    else:
        return False
    if field not in NAME_FIELDS:
        return False
    base = _base(expr)
    if isinstance(base, ast.Call) and dotted(base.func) == "type":
        return False
    return not (isinstance(base, ast.Attribute) and base.attr == "__class__")


@lru_cache(maxsize=1)
def _assigned_names(tree: Tree) -> frozenset[tuple[ast.AST, str]]:
    """``(function, variable)`` pairs assigned a tool name: ``name = call.function.name``."""
    found: set[tuple[ast.AST, str]] = set()
    for assign in tree.nodes(ast.Assign):
        if reads_tool_name(assign.value):
            func = tree.function_of(assign)
            found.update((func, t.id) for t in assign.targets if isinstance(t, ast.Name))
    return frozenset(found)


def model_chosen(expr: ast.expr, tree: Tree) -> bool:
    """Whether ``expr`` is (or holds) a tool name the model chose."""
    if reads_tool_name(expr):
        return True
    if not isinstance(expr, ast.Name):
        return False
    func = tree.function_of(expr)
    if expr.id in NAME_FIELDS and isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        params = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
        if any(p.arg == expr.id for p in params):
            return True
    return (func, expr.id) in _assigned_names(tree)
