"""AddToolGuard: put ``@guardkit.tool()`` on unguarded tools, below any framework decorator."""

from __future__ import annotations

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor

from .base import FindingCodemod

__all__ = ["AddToolGuard"]


class AddToolGuard(FindingCodemod):
    DESCRIPTION = "Add @guardkit.tool() below framework decorators of unguarded tool functions."

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if not self.is_target(original_node):
            return updated_node
        AddImportsVisitor.add_needed_import(self.context, "guardkit")
        guard = cst.Decorator(decorator=cst.parse_expression("guardkit.tool()"))
        return updated_node.with_changes(decorators=[*updated_node.decorators, guard])
