"""Retry wrappers around model calls: where a gate would be charged once per attempt.

A function decorated by a retry library (tenacity, backoff, stamina, retrying) runs again on an
error, so a gate inside it charges a turn per attempt and retries a denial; its callers are the
turn. A hand-written retry loop (a loop around a ``try`` whose handler swallows the error and
goes round again) is gated as a whole.
"""

from __future__ import annotations

import ast

from .imports import ImportMap
from .tree import FUNCTION_NODES, LOOP_NODES, Tree, dotted

__all__ = ["RETRY_DECORATORS", "retried", "retry_loop"]

Def = ast.FunctionDef | ast.AsyncFunctionDef
#: decorators that call the function again when it raises
RETRY_DECORATORS = frozenset(
    {
        "tenacity.retry",
        "backoff.on_exception",
        "backoff.on_predicate",
        "stamina.retry",
        "retrying.retry",
        "retry.retry",
        "async_retrying.retry",
    }
)


def retried(func: ast.AST, imports: ImportMap, tree: Tree | None = None) -> bool:
    """Whether a function is wrapped by a retry decorator: a retry library's, or (given the
    module's ``tree``) one of the module's own decorators that wraps it in one."""
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for decorator in func.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if imports.resolve(dotted(target)) in RETRY_DECORATORS:
            return True
        if tree is not None and isinstance(target, ast.Name) and _retries(tree, target.id, imports):
            return True
    return False


def _retries(tree: Tree, name: str, imports: ImportMap) -> bool:
    """The module's decorator ``name`` runs what it wraps under a retry decorator
    (``@retry(...)`` on an inner function that calls it, as a conditional retry does)."""
    for node in tree.module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            inner = (n for n in ast.walk(node) if n is not node)
            return any(retried(n, imports) for n in inner)
    return False


def _swallows(handler: ast.ExceptHandler) -> bool:
    """The handler lets the loop go round again (it does not end by raising)."""
    return not (handler.body and isinstance(handler.body[-1], ast.Raise))


def retry_loop(tree: Tree, node: ast.AST) -> ast.For | ast.AsyncFor | ast.While | None:
    """The hand-written retry loop around ``node``, if any (the outermost one in its function)."""
    found = None
    in_try = False
    for parent, child in tree.ancestors(node):
        if isinstance(parent, FUNCTION_NODES):
            break
        if isinstance(parent, ast.Try) and any(child is s for s in parent.body):
            in_try = in_try or any(_swallows(h) for h in parent.handlers)
        elif isinstance(parent, LOOP_NODES) and in_try:
            found = parent
            in_try = False
    return found
