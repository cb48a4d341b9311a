"""GateModelCalls: ask the guard for an ``llm_turn`` before each ungated model call.

Inserted before the statement holding the call::

    _gk_turn = guardkit.current_agent().request("llm_turn", {})
    if _gk_turn["decision"] != "allowed":
        break          # inside a loop: stop the agent loop
        # outside a loop: raise guardkit.ActionDenied(_gk_turn["action_id"], _gk_turn["reason"])
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor

from .base import FindingCodemod

__all__ = ["GateModelCalls"]

_REQUEST = '_gk_turn = guardkit.current_agent().request("llm_turn", {})\n'
_STOP_LOOP = 'if _gk_turn["decision"] != "allowed":\n    break\n'
_STOP_CALL = (
    'if _gk_turn["decision"] != "allowed":\n'
    '    raise guardkit.ActionDenied(_gk_turn["action_id"], _gk_turn["reason"])\n'
)
_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)
_BARRIERS = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_LOOPS = (cst.For, cst.While)


@dataclass(slots=True)
class _Frame:
    in_loop: bool
    gate: bool = False


class GateModelCalls(FindingCodemod):
    DESCRIPTION = "Gate model calls with guardkit.current_agent().request('llm_turn', {})."

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self._frames: list[_Frame] = []
        self._loops: list[bool] = []
        return super().transform_module_impl(tree)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _STATEMENTS):
            self._frames.append(_Frame(in_loop=bool(self._loops) and self._loops[-1]))
        if isinstance(node, _BARRIERS):
            self._loops.append(False)
        elif isinstance(node, _LOOPS):
            self._loops.append(True)
        if isinstance(node, cst.Call) and self._frames and self.is_target(node):
            self._frames[-1].gate = True
        return super().on_visit(node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if isinstance(node, _LOOPS) and attribute == "orelse":
            self._loops.append(False)
        super().on_visit_attribute(node, attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        if isinstance(original_node, _LOOPS) and attribute == "orelse":
            self._loops.pop()
        super().on_leave_attribute(original_node, attribute)

    # libcst's matcher base declares on_leave without FlattenSentinel, CSTTransformer with it.
    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNodeT, updated_node: cst.CSTNodeT
    ) -> cst.CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNodeT]:
        result = super().on_leave(original_node, updated_node)
        if isinstance(original_node, (*_BARRIERS, *_LOOPS)):
            self._loops.pop()
        if not isinstance(original_node, _STATEMENTS):
            return result
        frame = self._frames.pop()
        if not (frame.gate and isinstance(result, _STATEMENTS)):
            return result
        AddImportsVisitor.add_needed_import(self.context, "guardkit")
        request = cst.parse_statement(_REQUEST).with_changes(leading_lines=result.leading_lines)
        stop = cst.parse_statement(_STOP_LOOP if frame.in_loop else _STOP_CALL)
        gated = [request, stop, result.with_changes(leading_lines=())]
        return cst.FlattenSentinel(gated)  # type: ignore[arg-type]  # statements replace a statement
