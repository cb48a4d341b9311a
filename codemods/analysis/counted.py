"""Counters behind an object's methods: a loop bounded through the methods of a step object.

``steps.increment()`` steps ``steps.number`` when ``increment`` is ``self.number += 1``, and
``steps.is_last()`` compares it when ``is_last`` returns ``self.number >= self.max_steps``: a
loop that calls the first on every turn that goes round and leaves when the second holds is
bounded, as one that writes ``steps.number += 1`` and ``if steps.number >= limit: break``
itself. The methods are the project's (their facts travel in the summary, so the class may live
in another module); the counter is the receiver's attribute, so both calls must be made on the
same object.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping

from .loops import Counted, is_infinite
from .tree import dotted, scope_nodes

__all__ = ["checks_of", "counter_calls", "steps_of"]

Def = ast.FunctionDef | ast.AsyncFunctionDef
_ORDERINGS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


def _own(node: ast.expr) -> str | None:
    """``number`` of ``self.number``, ``a.b`` of ``self.a.b``."""
    name = dotted(node)
    return name[len("self.") :] if name and name.startswith("self.") else None


def steps_of(func: Def) -> list[str]:
    """The attributes a method steps on every call (``self.number += 1`` in its own body, not
    under a test)."""
    found: set[str] = set()
    for stmt in func.body:
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, (ast.Add, ast.Sub)):
            name = _own(stmt.target) if isinstance(stmt.target, ast.Attribute) else None
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            value = stmt.value
            name = _own(stmt.targets[0])
            if not (isinstance(value, ast.BinOp) and name and _own(value.left) == name):
                name = None
        else:
            name = None
        if name:
            found.add(name)
    return sorted(found)


def checks_of(func: Def, infinite: frozenset[str]) -> list[str]:
    """The attributes a method returns a comparison of, by order or equality against a number
    or a limit (``return self.number >= self.max_steps - 1``); none against a limit set to an
    infinite value in its module (``infinite``) or a text (``self.state == "done"``)."""
    found: set[str] = set()
    for node in scope_nodes(func.body):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        for compare in (n for n in ast.walk(node.value) if isinstance(n, ast.Compare)):
            sides = [compare.left, *compare.comparators]
            if not all(isinstance(op, _ORDERINGS) for op in compare.ops) or any(
                _no_limit(side, infinite) for side in sides
            ):
                continue
            found.update(name for name in map(_own, sides) if name)
    return sorted(found)


def _no_limit(side: ast.expr, infinite: frozenset[str]) -> bool:
    """A side no count passes: a text or ``None``, or an infinite value (also in arithmetic:
    ``self.allowed - 1``)."""
    if isinstance(side, ast.Constant) and not isinstance(side.value, (int, float)):
        return True
    for node in ast.walk(side):
        if not isinstance(node, ast.expr):
            continue
        name = dotted(node)
        if is_infinite(node) or (name and name.rpartition(".")[2] in infinite):
            return True
    return False


def counter_calls(
    calls: Iterable[tuple[ast.Call, str]], counting: Mapping[str, Iterable[tuple[str, str]]]
) -> Counted:
    """For the calls of methods that step or compare a counter attribute (``counting``: ref ->
    ``("steps" | "checks", attribute)``), the counters each steps and each compares, named on
    the receiver (``self.steps.number`` for ``self.steps.increment()``), by the call's id."""
    steps: dict[int, frozenset[str]] = {}
    checks: dict[int, frozenset[str]] = {}
    for call, ref in calls:
        receiver = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
        if receiver is None or ref not in counting:
            continue
        for kind, attribute in counting[ref]:
            table = steps if kind == "steps" else checks
            table[id(call)] = table.get(id(call), frozenset()) | {f"{receiver}.{attribute}"}
    return Counted(steps, checks)
