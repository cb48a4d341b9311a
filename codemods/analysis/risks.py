"""Two risky patterns around the guard: costs read from model-supplied arguments (GK301), and
denials raised out of an agent loop instead of returned to the model as a tool error (GK302)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .calls import CallIndex
from .guards import Guards
from .tree import FUNCTION_NODES, Tree, dotted

__all__ = ["denial_escapes", "model_supplied_costs"]

_MODEL_ARGS = {
    "args",
    "arguments",
    "kwargs",
    "tool_args",
    "tool_input",
    "function_args",
    "fn_args",
    "params",
    "parameters",
    "input",
    "inputs",
}
_DENIAL_WORDS = {"denied", "allowed", "pending_approval", "decision"}
_CATCHERS = {"ActionDenied", "ToolDenied", "GuardError", "Exception", "BaseException"}


def _reads_model_args(base: ast.expr) -> bool:
    name = dotted(base)
    if name is not None:
        return name.rpartition(".")[2] in _MODEL_ARGS
    if isinstance(base, ast.Call):
        return any(_reads_model_args(a) or isinstance(a, ast.Attribute) for a in base.args)
    return False


def _model_args(expr: ast.expr, params: set[str]) -> bool:
    """``args["cost"]``, ``args.get("cost")``, ``json.loads(...)[...]``, or a bare parameter."""
    if isinstance(expr, ast.Name) and expr.id in params:
        return True
    for node in ast.walk(expr):
        if isinstance(node, ast.Subscript) and _reads_model_args(node.value):
            return True
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Attribute) and func.attr == "get" and _reads_model_args(func.value):
            return True
    return False


def _cost_expr(call: ast.Call) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "cost":
            return keyword.value
    if (
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "authorize"
        and len(call.args) > 2
    ):
        return call.args[2]
    return None


def model_supplied_costs(tree: Tree, guards: Guards, calls: CallIndex) -> Iterator[ast.expr]:
    """Cost arguments of guard calls that read the model's tool arguments."""
    sites = [*calls.guard_requests]
    sites += [n for n in tree.nodes(ast.Call) if guards.is_guard(n, n)]
    for call in sites:
        cost = _cost_expr(call)
        if cost is None or isinstance(cost, ast.Lambda):
            continue
        func = tree.function_of(call)
        params = set()
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = {a.arg for a in (*func.args.args, *func.args.kwonlyargs)} - {"self", "cls"}
        if _model_args(cost, params):
            yield cost


def _caught(tree: Tree, node: ast.AST, loop: ast.AST) -> bool:
    for parent, child in tree.ancestors(node):
        if parent is loop or isinstance(parent, FUNCTION_NODES):
            return False
        if isinstance(parent, ast.Try) and any(child is s for s in parent.body):
            for handler in parent.handlers:
                names = [dotted(handler.type)] if handler.type is not None else [None]
                if isinstance(handler.type, ast.Tuple):
                    names = [dotted(e) for e in handler.type.elts]
                if any(n is None or n.rpartition(".")[2] in _CATCHERS for n in names):
                    return True
    return False


def _denial_test(test: ast.expr) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.Constant) and node.value in _DENIAL_WORDS:
            return True
        if isinstance(node, ast.Attribute) and node.attr == "decision":
            return True
    return False


def denial_escapes(
    tree: Tree, guards: Guards, calls: CallIndex, raising: list[ast.Call]
) -> Iterator[ast.AST]:
    """Raises on a denial, and uncaught ``authorize``/guarded-tool calls (direct, or through a
    dispatch table in ``raising``), inside agent loops."""
    loops = {ctx.loop for call in calls.model for ctx in call.loops if ctx.in_body}
    gate_ids = {id(g) for g in calls.gates}
    raising_ids = {id(c) for c in raising}
    for loop in loops:
        for node in ast.walk(loop):
            if isinstance(node, ast.If) and _denial_test(node.test):
                for stmt in ast.walk(node):
                    if isinstance(stmt, ast.Raise) and not _caught(tree, stmt, loop):
                        yield stmt
            elif (
                isinstance(node, ast.Call)
                and id(node) not in gate_ids
                and (id(node) in raising_ids or _escaping_call(guards, node))
                and not _caught(tree, node, loop)
            ):
                yield node


def _escaping_call(guards: Guards, call: ast.Call) -> bool:
    if isinstance(call.func, ast.Attribute) and call.func.attr == "authorize":
        return call in guards.calls.guard_requests
    if isinstance(call.func, ast.Name):
        func = guards.values.functions.get(call.func.id)
        return func is not None and any(guards.is_guard(d, func) for d in func.decorator_list)
    return False
