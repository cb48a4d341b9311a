"""BoundModelLoops: give an unbounded ``while`` loop that calls a model a turn limit, without
changing what the function returns.

``while True:`` becomes ``for _gk_turns in range(N):``; any other ``while cond:`` gets a
``_gk_turns`` counter checked at the top of its body. Running out of turns ends the loop as a
``break`` would in a function that returns nothing, and raises ``RuntimeError`` in one that
returns a value (a ``for ... else: raise`` for the ``while True`` form), so a caller never gets
``None`` where it expected the loop's result.
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from ..parsing import parse_module
from .base import FindingCodemod

__all__ = ["BoundModelLoops"]

_COUNTER = re.compile(r"\b_gk_turns(?:_(\d+))?\b")
_STOP = 'raise RuntimeError("agent loop stopped after {limit} turns (guardkit fix)")\n'


def _returns_value(func: cst.FunctionDef | None) -> bool:
    """Whether the function returns something other than ``None`` (nested scopes skipped)."""
    if func is None:
        return False
    source = cst.Module(body=[func.with_changes(decorators=())]).code
    node = parse_module(source).body[0]
    stack: list[ast.AST] = list(ast.iter_child_nodes(node))
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(item, (ast.Yield, ast.YieldFrom)):
            return False
        value = item.value if isinstance(item, ast.Return) else None
        if value is not None and not (isinstance(value, ast.Constant) and value.value is None):
            return True
        stack.extend(ast.iter_child_nodes(item))
    return False


class BoundModelLoops(FindingCodemod):
    DESCRIPTION = "Bound unbounded model loops at max-turns without changing return values."

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        taken = [int(m.group(1) or 1) for m in _COUNTER.finditer(tree.code)]
        self._next = max(taken, default=0) + 1
        self._functions: list[cst.FunctionDef] = []
        return super().transform_module_impl(tree)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(node)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._functions.pop()
        return updated_node

    def _fresh(self) -> str:
        number, self._next = self._next, self._next + 1
        return "_gk_turns" if number == 1 else f"_gk_turns_{number}"

    def leave_While(
        self, original_node: cst.While, updated_node: cst.While
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        if not self.is_target(original_node):
            return updated_node
        name = self._fresh()
        limit = self.config.max_turns
        value = _returns_value(self._functions[-1] if self._functions else None)
        stop = _STOP.format(limit=limit) if value else "break\n"
        body = updated_node.body
        if isinstance(body, cst.SimpleStatementSuite):
            body = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=body.body)])
        test = updated_node.test
        if isinstance(test, cst.Name) and test.value == "True" and updated_node.orelse is None:
            loop = cst.parse_statement(f"for {name} in range({limit}):\n    pass\n")
            assert isinstance(loop, cst.For)
            orelse = None
            if value:
                orelse = cst.Else(body=cst.IndentedBlock(body=[cst.parse_statement(stop)]))
            return loop.with_changes(
                body=body, orelse=orelse, leading_lines=updated_node.leading_lines
            )
        init = cst.parse_statement(f"{name} = 0\n")
        step = cst.parse_statement(f"{name} += 1\n")
        check = cst.parse_statement(f"if {name} > {limit}:  # guardkit: turn limit\n    {stop}")
        new_body = body.with_changes(body=[step, check, *body.body])
        init = init.with_changes(leading_lines=updated_node.leading_lines)
        loop = updated_node.with_changes(body=new_body, leading_lines=())
        return cst.FlattenSentinel([init, loop])
