"""BoundModelLoops: give an unbounded ``while`` loop that calls a model a turn counter."""

from __future__ import annotations

import re

import libcst as cst

from .base import FindingCodemod

__all__ = ["BoundModelLoops"]

_COUNTER = re.compile(r"\b_gk_turns(?:_(\d+))?\b")


class BoundModelLoops(FindingCodemod):
    DESCRIPTION = "Bound unbounded model loops with a _gk_turns counter that breaks at max-turns."

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        taken = [int(m.group(1) or 1) for m in _COUNTER.finditer(tree.code)]
        self._next = max(taken, default=0) + 1
        return super().transform_module_impl(tree)

    def _fresh(self) -> str:
        number, self._next = self._next, self._next + 1
        return "_gk_turns" if number == 1 else f"_gk_turns_{number}"

    def leave_While(
        self, original_node: cst.While, updated_node: cst.While
    ) -> cst.While | cst.FlattenSentinel[cst.BaseStatement]:
        if not self.is_target(original_node):
            return updated_node
        name = self._fresh()
        limit = self.config.max_turns
        init = cst.parse_statement(f"{name} = 0\n")
        step = cst.parse_statement(f"{name} += 1\n")
        check = cst.parse_statement(f"if {name} > {limit}:  # guardkit: turn limit\n    break\n")
        body = updated_node.body
        if isinstance(body, cst.SimpleStatementSuite):
            body = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=body.body)])
        new_body = body.with_changes(body=[step, check, *body.body])
        init = init.with_changes(leading_lines=updated_node.leading_lines)
        loop = updated_node.with_changes(body=new_body, leading_lines=())
        return cst.FlattenSentinel([init, loop])
