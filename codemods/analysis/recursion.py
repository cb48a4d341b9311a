"""Agent loops written as recursion: a function that calls a model and then calls itself.

``get_completion`` asks the model, runs the tool calls it got and calls ``get_completion`` again
with the results: a loop in all but syntax, and nothing stops it unless a depth is enforced. A
recursion is bounded when the function is gated by ``llm_turn`` or calls a function that raises
on a limit, passes a parameter on stepped (``depth + 1``) and compares it, or compares a limit
(``max_*``, ``*limit*``) or a counter attribute it steps (``self.turns += 1``); a limit with an
infinite value, or one compared only when it is set, is no bound. A recursion that passes a
parameter a constant (``resumed=True``) and calls itself only where that parameter is not that
constant (under ``if ... and not resumed:``, after ``if resumed: return ...``) is one call
deep at most.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Sequence

from .calls import ModelCall
from .loops import compares_counter, stepped
from .tree import FUNCTION_NODES, Tree, dotted, scope_nodes

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


def _positional(func: Def) -> list[str]:
    """The parameters a call of ``func`` passes by position (``self``/``cls`` left out)."""
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    return params[1:] if params[:1] in (["self"], ["cls"]) else params


def _passed(func: Def, call: ast.Call) -> list[tuple[str, ast.expr]]:
    """What ``call`` passes each parameter of ``func`` it names, by position or keyword."""
    given = [*itertools.takewhile(lambda a: not isinstance(a, ast.Starred), call.args)]
    passed = [*zip(_positional(func), given, strict=False)]
    return passed + [(k.arg, k.value) for k in call.keywords if k.arg]


def _stepped_parameters(func: Def, again: list[ast.Call]) -> set[str]:
    """Parameters the recursive calls pass on changed by a constant (``depth + 1``)."""
    # ``*, retry: int = 0`` too
    named = {*_positional(func), *(a.arg for a in func.args.kwonlyargs)}
    found: set[str] = set()
    for call in again:
        for name, value in _passed(func, call):
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
    return any(compares_counter(test, counters, infinite) for test in tests) or _flag_bounded(
        tree, func, again
    )


def _flag_bounded(tree: Tree, func: Def, again: list[ast.Call]) -> bool:
    """Whether the recursive calls all pass one parameter the same constant (``resumed=True``)
    and run only where the parameter is known not to be it (``if ... and not resumed:``, after
    ``if resumed: return ...``): the nested call goes no deeper."""
    passed = [dict(_passed(func, call)) for call in again]
    constants = [
        (name, value.value)
        for name, value in passed[0].items()
        if isinstance(value, ast.Constant) and not _assigned(func, name)
    ]
    return any(
        all(_same(args.get(name), constant) for args in passed)
        and all(_excluded(tree, call, func, name, constant) for call in again)
        for name, constant in constants
    )


def _same(value: ast.expr | None, constant: object) -> bool:
    return isinstance(value, ast.Constant) and _equal(value.value, constant)


def _equal(one: object, other: object) -> bool:
    """Equal constants of one type (``True`` is not ``1``)."""
    return type(one) is type(other) and one == other


def _assigned(func: Def, name: str) -> bool:
    """Whether ``func`` assigns the name anywhere (a parameter it changes tells nothing of what
    the caller passed)."""
    return any(
        isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load)
        for node in scope_nodes(func.body)
    )


def _excluded(tree: Tree, call: ast.Call, func: Def, name: str, constant: object) -> bool:
    """Whether ``call`` runs only where parameter ``name`` is not ``constant``: under a test
    (or after an ``if`` that leaves) that says so."""
    for parent, child in tree.ancestors(call):
        if parent is func:
            return _left_before(func.body, child, name, constant)
        if isinstance(parent, FUNCTION_NODES):
            return False
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test:
            # the body runs where the test holds, ``else`` where it fails
            inside = child is parent.body or any(child is s for s in _block(parent.body))
            if _rules_out(parent.test, inside, name, constant):
                return True
        elif isinstance(parent, ast.BoolOp):  # ``not resumed and f(resumed=True)``
            before = parent.values[: next(i for i, v in enumerate(parent.values) if v is child)]
            holds = isinstance(parent.op, ast.And)
            if any(_rules_out(v, holds, name, constant) for v in before):
                return True
        block = next((b for b in _blocks(parent) if any(child is s for s in b)), None)
        if block is not None and _left_before(block, child, name, constant):
            return True
    return False


def _block(body: ast.expr | list[ast.stmt]) -> list[ast.stmt]:
    return body if isinstance(body, list) else []


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    """The statement blocks of a compound statement."""
    fields = ("body", "orelse", "finalbody")
    return [b for b in (getattr(node, f, None) for f in fields) if type(b) is list]


def _left_before(block: list[ast.stmt], child: ast.AST, name: str, constant: object) -> bool:
    """Whether an ``if`` before ``child`` in ``block`` leaves it (``return``, ``raise``...)
    whenever the parameter is ``constant``: ``if resumed: return text``."""
    for stmt in block:
        if stmt is child:
            return False
        if isinstance(stmt, ast.If):
            if _leaves(stmt.body) and _rules_out(stmt.test, False, name, constant):
                return True
            if _leaves(stmt.orelse) and _rules_out(stmt.test, True, name, constant):
                return True
    return False


def _leaves(block: list[ast.stmt]) -> bool:
    return bool(block) and isinstance(block[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _rules_out(test: ast.expr, holds: bool, name: str, constant: object) -> bool:
    """Whether ``test`` being ``holds`` means parameter ``name`` is not ``constant``
    (``not resumed`` holding rules out ``True``; ``mode == "draft"`` holding, ``"final"``)."""
    if isinstance(test, ast.Name):
        return test.id == name and holds != bool(constant)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _rules_out(test.operand, not holds, name, constant)
    if isinstance(test, ast.BoolOp):
        parts = [_rules_out(v, holds, name, constant) for v in test.values]
        # ``a and not resumed`` holding: one part rules it out; failing: every part must
        return any(parts) if holds == isinstance(test.op, ast.And) else all(parts)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        other = test.comparators[0]
        if dotted(test.left) != name or not isinstance(other, ast.Constant):
            return False
        if isinstance(test.ops[0], (ast.IsNot, ast.NotEq)):
            holds = not holds
        elif not isinstance(test.ops[0], (ast.Is, ast.Eq)):
            return False
        same = _equal(other.value, constant)
        return not same if holds else same
    return False


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
