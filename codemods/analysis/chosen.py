"""Is a value a tool name the model chose? The test that tells dispatch from other lookups.

A model-chosen name is read from a tool call (``call.function.name``, ``block.name``,
``tool_call["function"]["name"]``), or is a variable assigned from one, or the ``name``/
``tool_name`` parameter of a dispatch helper. Not chosen by the model: constants, the names of
types (``type(exc).__name__``), event kinds, keys read from configuration or typed by a user.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from functools import lru_cache

from .tree import Tree, dotted

__all__ = [
    "INPUT_FIELDS",
    "NAME_FIELDS",
    "may_choose",
    "model_chosen",
    "reads_tool_name",
    "takes_tool_input",
]

#: fields and parameters that hold the name of the tool the model picked
NAME_FIELDS = frozenset({"name", "tool_name", "function_name", "fn_name", "tool"})
#: fields and variables that hold the arguments the model wrote for a tool call
INPUT_FIELDS = frozenset(
    {"args", "arguments", "kwargs", "tool_args", "tool_input", "input", "inputs", "params"}
)


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
def may_choose(tree: Tree) -> bool:
    """Whether the module reads a tool name anywhere (``x.name``, ``x["name"]``, a ``name``
    parameter): without one, no lookup in it can be model-chosen (a cheap test first)."""
    if any(a.attr in NAME_FIELDS for a in tree.nodes(ast.Attribute)):
        return True
    if any(a.arg in NAME_FIELDS for a in tree.nodes(ast.arg)):
        return True
    return any(
        isinstance(s.slice, ast.Constant) and s.slice.value in NAME_FIELDS
        for s in tree.nodes(ast.Subscript)
    )


@lru_cache(maxsize=1)
def _assigned_names(tree: Tree) -> frozenset[tuple[ast.AST, str]]:
    """``(function, variable)`` pairs assigned a tool name: ``name = call.function.name``."""
    found: set[tuple[ast.AST, str]] = set()
    for assign in tree.nodes(ast.Assign):
        if reads_tool_name(assign.value):
            func = tree.function_of(assign)
            found.update((func, t.id) for t in assign.targets if isinstance(t, ast.Name))
    return frozenset(found)


def model_chosen(expr: ast.expr, tree: Tree, chosen: Collection[tuple[ast.AST, str]] = ()) -> bool:
    """Whether ``expr`` is (or holds) a tool name the model chose; ``chosen`` adds
    ``(function, parameter)`` pairs known to hold one (an MCP ``call_tool`` handler's name, a
    tool's own parameters)."""
    if reads_tool_name(expr):
        return True
    if not isinstance(expr, ast.Name):
        return False
    func = tree.function_of(expr)
    if (func, expr.id) in chosen:
        return True
    if expr.id in NAME_FIELDS and isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        params = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
        if any(p.arg == expr.id for p in params):
            return True
    return (func, expr.id) in _assigned_names(tree)


def takes_tool_input(
    call: ast.Call, tree: Tree, chosen: Collection[tuple[ast.AST, str]] = ()
) -> bool:
    """The call is handed the tool call's input (``**args``, ``block.input``,
    ``json.loads(call.function.arguments)``, ``args["path"]``, a tool's own parameter), not the
    whole object a parser or an event printer would take."""
    if any(k.arg is None for k in call.keywords):
        return True  # ``**arguments``
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        for node in ast.walk(arg):
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                field = node.slice.value
            elif isinstance(node, (ast.Name, ast.Attribute)):
                field = (dotted(node) or "").rpartition(".")[2]
                if isinstance(node, ast.Name) and (tree.function_of(node), node.id) in chosen:
                    return True
            else:
                continue
            if field in INPUT_FIELDS:
                return True
    return False
