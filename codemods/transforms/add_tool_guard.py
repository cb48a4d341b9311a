"""AddToolGuard: put ``@guardkit.tool()`` on unguarded tools, below any framework decorator.

A tool that is a class's run method (``execute``, ``_run``, ``__call__``...) is named after its
class (the ``name = "..."`` the class gives, else the class's own name): every such method has
the same function name, and the guard, the policy and the ledger tell tools apart by name.
"""

from __future__ import annotations

import json

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor

from ..analysis.project import TOOL_METHODS
from .base import FindingCodemod

__all__ = ["AddToolGuard"]


class AddToolGuard(FindingCodemod):
    DESCRIPTION = "Add @guardkit.tool() below framework decorators of unguarded tool functions."

    _scopes: list[cst.CSTNode]

    def visit_Module(self, node: cst.Module) -> None:
        self._scopes = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.append(node)

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        self._scopes.pop()
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(node)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._scopes.pop()
        if not self.is_target(original_node):
            return updated_node
        AddImportsVisitor.add_needed_import(self.context, "guardkit")
        owner = self._scopes[-1] if self._scopes else None
        name = original_node.name.value
        if isinstance(owner, cst.ClassDef) and name in TOOL_METHODS:
            name = _given_name(owner) or owner.name.value
            call = f"guardkit.tool(name={json.dumps(name)})"
        else:
            call = "guardkit.tool()"
        self.gated.add(name)
        guard = cst.Decorator(decorator=cst.parse_expression(call))
        return updated_node.with_changes(decorators=[*updated_node.decorators, guard])


def _given_name(cls: cst.ClassDef) -> str | None:
    """A tool class's ``name = "x"`` (or ``name: str = "x"``)."""
    for line in cls.body.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target, value = small.targets[0].target, small.value
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                target, value = small.target, small.value
            else:
                continue
            if (
                isinstance(target, cst.Name)
                and target.value == "name"
                and isinstance(value, cst.SimpleString)
            ):
                text = value.evaluated_value
                return text if isinstance(text, str) else None
    return None
