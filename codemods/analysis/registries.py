"""Dispatch helpers: functions that run one entry of a name->function table picked by a
parameter.

``StripeAPI.run(self, method, ...)`` looks ``method`` up in ``self._dispatch = {"create_refund":
create_refund, ...}`` and calls what it finds. Whether that is tool dispatch depends on who
calls it: the project index makes the table's functions tools when a tool calls the helper
(a ``BaseTool._run`` that forwards to it). A table indexed by configuration or by a command a
user typed, whose helper no tool calls, stays what it is.
"""

from __future__ import annotations

import ast

from .tree import Tree, dotted
from .values import Values

__all__ = ["dispatch_helpers"]

Def = ast.FunctionDef | ast.AsyncFunctionDef
#: a table is ``(class or None, name)``: ``self.<name>`` of a class, or a plain name
TableKey = tuple[ast.ClassDef | None, str]


def _functions(table: ast.Dict, values: Values) -> list[str] | None:
    """Qualified names of the functions a ``{"name": function, ...}`` literal maps to."""
    if len(table.values) < 2:
        return None
    found: list[str] = []
    for key, value in zip(table.keys, table.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        name = values.qualify(dotted(value)) if isinstance(value, ast.Name) else None
        if name is None or name.rpartition(".")[2][:1].isupper():
            return None
        found.append(name)
    return found


def _key(target: ast.expr, tree: Tree, at: ast.AST) -> TableKey | None:
    if isinstance(target, ast.Name):
        return None, target.id
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    ):
        cls = tree.class_of(at)
        return (cls, target.attr) if cls is not None else None
    return None


def _tables(tree: Tree, values: Values) -> dict[TableKey, list[str]]:
    tables: dict[TableKey, list[str]] = {}
    for assign in tree.nodes(ast.Assign):
        if not isinstance(assign.value, ast.Dict) or len(assign.targets) != 1:
            continue
        functions = _functions(assign.value, values)
        key = _key(assign.targets[0], tree, assign) if functions else None
        if key is not None and functions:
            tables[key] = functions
    return tables


def _lookup(expr: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    """``(table, key)`` of ``T[key]`` or ``T.get(key)``."""
    if isinstance(expr, ast.Subscript):
        return expr.value, expr.slice
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "get"
        and expr.args
    ):
        return expr.func.value, expr.args[0]
    return None


def _parameters(func: ast.AST) -> set[str]:
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    return {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}


def _called(tree: Tree, lookup: ast.expr) -> bool:
    """The looked-up value is called: ``T[k](...)``, or ``f = T[k]`` ... ``f(...)``."""
    parent = tree.parent(lookup)
    if isinstance(parent, ast.Call) and parent.func is lookup:
        return True
    if isinstance(parent, ast.Assign) and isinstance(parent.targets[0], ast.Name):
        name, scope = parent.targets[0].id, tree.function_of(parent)
        return any(
            isinstance(c.func, ast.Name) and c.func.id == name and tree.function_of(c) is scope
            for c in tree.nodes(ast.Call)
        )
    return False


def dispatch_helpers(tree: Tree, values: Values) -> dict[str, list[str]]:
    """``helper qualname -> the functions of the table it dispatches over`` (module- and
    class-level functions whose parameter picks the entry that is called)."""
    tables = _tables(tree, values)
    if not tables:
        return {}
    found: dict[str, list[str]] = {}
    for node in [*tree.nodes(ast.Subscript), *tree.nodes(ast.Call)]:
        pair = _lookup(node)
        if pair is None or not isinstance(pair[1], ast.Name):
            continue
        func = tree.function_of(node)
        key = _key(pair[0], tree, node)
        if key is None or key not in tables or pair[1].id not in _parameters(func):
            continue
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _called(tree, node):
            continue
        owner = tree.parent(func)
        name = f"{owner.name}.{func.name}" if isinstance(owner, ast.ClassDef) else func.name
        found[values.local_name(name)] = tables[key]
    return found
