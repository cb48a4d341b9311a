"""Decide whether a loop that calls a model is bounded.

Bounded: a ``for`` over anything but ``itertools.count()``/``iter(f, sentinel)``; a ``while`` whose
condition compares a counter the loop updates, or names a ``max_*``/limit; a ``while`` whose body
breaks/returns/raises when such a counter passes a limit; any loop gated by ``llm_turn`` (the
guard's turn budget bounds it). Everything else (``while True``, ``while not done``, ``while
response.stop_reason == "tool_use"``) is unbounded.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .imports import ImportMap
from .tree import SCOPE_NODES, Tree, dotted

__all__ = ["is_bounded"]

_LIMIT_WORDS = ("max", "limit", "budget")
_EXITS = (ast.Break, ast.Return, ast.Raise)


def _walk_same_scope(nodes: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under ``nodes`` that is not inside a nested function or class."""
    stack: list[ast.AST] = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, SCOPE_NODES):
            stack.extend(ast.iter_child_nodes(node))


def _counters(loop: ast.While) -> set[str]:
    """Names the loop body steps: ``n += 1``, ``n -= 1``, ``n = n + 1``."""
    found: set[str] = set()
    for node in _walk_same_scope(loop.body):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            name = dotted(node.target) if isinstance(node.target, ast.expr) else None
            if name:
                found.add(name)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            name = dotted(node.targets[0])
            value = node.value
            if name and isinstance(value, ast.BinOp) and dotted(value.left) == name:
                found.add(name)
    return found


def _compares_counter(test: ast.expr, counters: set[str]) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                name = dotted(side)
                if name in counters or (name and _is_limit(name)):
                    return True
    return False


def _is_limit(name: str) -> bool:
    last = name.rpartition(".")[2].lower()
    return any(word in last for word in _LIMIT_WORDS)


def _exits_on_counter(loop: ast.While, counters: set[str]) -> bool:
    for node in _walk_same_scope(loop.body):
        if not (isinstance(node, ast.If) and _compares_counter(node.test, counters)):
            continue
        if any(isinstance(n, _EXITS) for n in _walk_same_scope(node.body)):
            return True
    return False


def _unbounded_iterable(loop: ast.For | ast.AsyncFor, imports: ImportMap) -> bool:
    it = loop.iter
    if not isinstance(it, ast.Call):
        return False
    name = imports.resolve(dotted(it.func))
    if name in {"itertools.count", "itertools.cycle", "itertools.repeat"}:
        return name != "itertools.repeat" or len(it.args) < 2
    return dotted(it.func) == "iter" and len(it.args) == 2


def is_bounded(
    loop: ast.For | ast.AsyncFor | ast.While,
    tree: Tree,
    imports: ImportMap,
    gates: list[ast.Call],
) -> bool:
    """Whether ``loop`` cannot repeat its model calls forever."""
    if any(ctx.loop is loop for gate in gates for ctx in tree.loops_of(gate)):
        return True
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        return not _unbounded_iterable(loop, imports)
    counters = _counters(loop)
    return _compares_counter(loop.test, counters) or _exits_on_counter(loop, counters)
