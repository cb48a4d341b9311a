"""GateModelCalls: run each ungated model call inside ``guardkit.model_turn()``.

The statement holding the call (or the hand-written retry loop around it, so a retried attempt
is not charged twice) is wrapped (a ``with`` statement takes the gate as its first item)::

    with guardkit.model_turn():          # async with ... in a coroutine
        reply = client.messages.create(...)

``guardkit.model_turn()`` asks the current agent's guard for an ``llm_turn`` and raises
``guardkit.TurnDenied`` when it is denied, so a denial stops the agent loop without changing
what any function returns. A call inside a function a retry decorator wraps is gated at its
callers instead (the analysis reports the callers' calls as the turn).
"""

from __future__ import annotations

import libcst as cst
from libcst.codemod import SkipFile
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import PositionProvider

from ..analysis.facts import analyze
from ..parsing import parse_module
from .base import FindingCodemod

__all__ = ["GateModelCalls"]

_GATE = "guardkit.model_turn()"


def _is_gate(expr: cst.BaseExpression) -> bool:
    """``guardkit.model_turn(...)`` (the gate this codemod writes)."""
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "model_turn"
        and isinstance(expr.func.value, cst.Name)
        and expr.func.value.value == "guardkit"
    )


class GateModelCalls(FindingCodemod):
    DESCRIPTION = "Run ungated model calls inside `with guardkit.model_turn():`."

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        calls = self.finding_targets(tree.code)
        facts = analyze(
            parse_module(tree.code),
            self.config.catalog,
            name=self.module_name,
            is_package=self.is_package,
            env=self.env,
        )
        self.wraps = {
            (c.wrap.lineno, c.wrap.col_offset)
            for c in facts.model_calls
            if c.wrap is not None and (c.node.lineno, c.node.col_offset) in calls
        }
        if not self.wraps:
            raise SkipFile("nothing to fix")
        self._async: list[bool] = []
        return tree.visit(self)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._async.append(node.asynchronous is not None)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._async.pop()
        return updated_node

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNodeT, updated_node: cst.CSTNodeT
    ) -> cst.CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNodeT]:
        result = super().on_leave(original_node, updated_node)
        if not isinstance(original_node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return result
        start = self.get_metadata(PositionProvider, original_node).start
        if (start.line, start.column) not in self.wraps or not isinstance(
            result, (cst.SimpleStatementLine, cst.BaseCompoundStatement)
        ):
            return result
        if isinstance(result, cst.With) and any(_is_gate(i.item) for i in result.items):
            return result  # already gated: a gate is never wrapped in another one
        AddImportsVisitor.add_needed_import(self.context, "guardkit")
        is_async = bool(self._async) and self._async[-1]
        if isinstance(result, cst.With) and (result.asynchronous is not None) == is_async:
            # ``with client.messages.stream(...) as s:`` takes the gate as its first item:
            # no block is re-indented
            first = cst.WithItem(
                item=cst.parse_expression(_GATE),
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
            )
            return result.with_changes(items=[first, *result.items])
        gate = cst.With(
            items=[cst.WithItem(item=cst.parse_expression(_GATE))],
            body=cst.IndentedBlock(body=[result.with_changes(leading_lines=())]),
            asynchronous=cst.Asynchronous() if is_async else None,
            leading_lines=result.leading_lines,
        )
        return gate  # type: ignore[return-value]  # a statement replaces a statement
