"""Agent loops written as recursion: a function that calls a model and then calls itself.

``get_completion`` asks the model, runs the tool calls it got and calls ``get_completion`` again
with the results: a loop in all but syntax, and nothing stops it unless a depth is enforced. A
recursion is bounded when the function is gated by ``llm_turn`` or calls a function that raises
on a limit, passes a parameter on stepped (``depth + 1``) and compares it, or compares a limit
(``max_*``, ``*limit*``) or a counter attribute it steps (``self.turns += 1``); a limit with an
infinite value, or one compared only when it is set, is no bound.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from .calls import ModelCall
from .loops import compares_counter, stepped
from .tree import FUNCTION_NODES, Tree, dotted

__all__ = ["unbounded_recursions"]

Def = ast.FunctionDef | ast.AsyncFunctionDef


def _self_calls(tree: Tree, func: Def) -> list[ast.Call]:
    """Calls inside ``func`` that run ``func`` again (``f(...)``, ``self.f(...)``)."""
    method = isinstance(tree.parent(func), ast.ClassDef)
    found = []
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        target = node.func
        if method and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            if target.value.id in {"self", "cls"} and target.attr == func.name:
                found.append(node)
        elif not method and isinstance(target, ast.Name) and target.id == func.name:
            found.append(node)
    return found


def _inside(tree: Tree, node: ast.AST, func: Def) -> bool:
    return any(parent is func for parent, _ in tree.ancestors(node))


def _stepped_parameters(func: Def, again: list[ast.Call]) -> set[str]:
    """Parameters the recursive calls pass on changed by a constant (``depth + 1``)."""
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    if params[:1] in (["self"], ["cls"]):
        params = params[1:]
    named = {*params, *(a.arg for a in func.args.kwonlyargs)}  # ``*, retry: int = 0`` too
    found: set[str] = set()
    for call in again:
        passed = [*zip(params, call.args, strict=False)]
        passed += [(k.arg, k.value) for k in call.keywords if k.arg]
        for name, value in passed:
            if (
                isinstance(value, ast.BinOp)
                and isinstance(value.op, (ast.Add, ast.Sub))
                and dotted(value.left) in named
            ):
                found.add(name)
    return found


def _bounded(
    tree: Tree, func: Def, again: list[ast.Call], stops: Sequence[ast.AST], infinite: frozenset[str]
) -> bool:
    if any(_inside(tree, node, func) for node in stops):
        return True
    counters = {c for c in stepped(func.body) if "." in c} | _stepped_parameters(func, again)
    tests = [
        node.test
        for node in ast.walk(func)
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert))
    ]
    return any(compares_counter(test, counters, infinite) for test in tests)


def unbounded_recursions(
    tree: Tree,
    calls: Sequence[ModelCall],
    stops: Sequence[ast.AST],
    infinite: frozenset[str],
) -> list[tuple[Def, tuple[ModelCall, ...]]]:
    """Functions that reach a model (``calls``: model calls and calls of helpers that reach
    one) and call themselves with no bound (``stops``: gates and calls that raise on a limit)."""
    found: list[tuple[Def, tuple[ModelCall, ...]]] = []
    defs: list[Def] = [*tree.nodes(ast.FunctionDef), *tree.nodes(ast.AsyncFunctionDef)]
    for func in defs:
        reached = tuple(
            c for c in calls if c.function is func or _nested_in(tree, c.function, func)
        )
        if not reached:
            continue
        again = _self_calls(tree, func)
        if again and not _bounded(tree, func, again, stops, infinite):
            found.append((func, reached))
    return found


def _nested_in(tree: Tree, inner: ast.AST, func: Def) -> bool:
    """``inner`` is a lambda or comprehension scope inside ``func`` (not a nested ``def``,
    which runs only when something calls it)."""
    return (
        isinstance(inner, FUNCTION_NODES)
        and not isinstance(inner, Def)
        and _inside(tree, inner, func)
    )
