"""Recognise guard wrappers (``@guardkit.tool()``, ``@agent.tool``) and tool decorators."""

from __future__ import annotations

import ast

from .calls import CallIndex
from .catalog import TOOL_DECORATOR_METHODS
from .imports import ImportMap
from .tree import Tree, dotted
from .values import CLASS, GUARDKIT, Values

__all__ = ["Guards"]

Def = ast.FunctionDef | ast.AsyncFunctionDef
_TOOL_SERVER_ATTRS = {"fastmcp": {"tool"}, "pydantic_ai": {"tool", "tool_plain"}}


class Guards:
    """Which expressions guard a tool, which expose one, and which functions are wrapped."""

    def __init__(
        self,
        tree: Tree,
        values: Values,
        imports: ImportMap,
        calls: CallIndex,
        integrated: frozenset[str] = frozenset(),
    ) -> None:
        self.tree = tree
        self.values = values
        self.imports = imports
        self.calls = calls
        #: qualified names of functions handed over only through a guardkit integration
        self.integrated = integrated
        self.aliases: set[str] = set()
        self.wrapped: set[str] = set()
        #: tool servers a guardkit integration wraps (``guard_server(mcp)``)
        self.servers: set[str] = set()
        #: ``(function, parameter)`` pairs that hold a model-chosen tool name (an MCP
        #: ``call_tool`` handler's name); filled as tools are found
        self.chosen: set[tuple[ast.AST, str]] = set()
        #: ``(function, variable)`` pairs a model-chosen tool name flows into (``flow.py``):
        #: they select a callee, they are not the tool's input
        self.named: set[tuple[ast.AST, str]] = set()
        #: parameters handed the tool call's input beside a chosen name (``flow.py``)
        self.inputs: set[tuple[ast.AST, str]] = set()
        #: ``(tool function, parameter)``: what the model wrote for a tool found in the module
        self.tool_params: set[tuple[ast.AST, str]] = set()
        for assign in tree.nodes(ast.Assign):
            if self.is_guard(assign.value, assign):
                self.aliases.update(t.id for t in assign.targets if isinstance(t, ast.Name))
        for node in tree.nodes(ast.Call):
            if self.is_guard(node.func, node):
                self.wrapped.update(a.id for a in node.args if isinstance(a, ast.Name))
            elif values.qualify(dotted(node.func)) in values.catalog.gates or values.has_gate(node):
                receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
                named = [dotted(a) for a in (*node.args, receiver) if a is not None]
                self.servers.update(n for n in named if n)

    def is_guard(self, expr: ast.expr, at: ast.AST) -> bool:
        """``guardkit.tool``, ``guardkit.tool(...)``, ``agent.tool(...)``, or an alias of one."""
        if isinstance(expr, ast.Call):
            expr = expr.func
        if isinstance(expr, ast.Name) and expr.id in self.aliases:
            return True
        if not isinstance(expr, ast.Attribute) or expr.attr != "tool":
            return False
        qualname = self.imports.resolve(dotted(expr))
        if qualname and qualname.startswith("guardkit."):
            return True
        kind = self.values.kind(expr.value, at)
        if kind is not None:
            return kind == GUARDKIT
        name = (dotted(expr.value) or "").rpartition(".")[2].lower()
        return "guard" in name or "agent" in name

    def tool_decorator(self, expr: ast.expr, at: ast.AST) -> str | None:
        """``"tool"`` for a framework tool decorator, ``"dispatcher"`` for MCP ``call_tool``."""
        if isinstance(expr, ast.Call):
            expr = expr.func
        if self.imports.resolve(dotted(expr)) in self.values.catalog.tool_decorators:
            return "tool"
        if isinstance(expr, ast.Attribute):
            if expr.attr in TOOL_DECORATOR_METHODS:
                return "tool"
            kind = self.values.kind(expr.value, at)
            if kind and expr.attr in _TOOL_SERVER_ATTRS.get(kind, ()):
                return "tool"
            if kind == "mcp_lowlevel" and expr.attr == "call_tool":
                return "dispatcher"
        return "tool" if self._named_tool_decorator(expr, at) else None

    def _named_tool_decorator(self, expr: ast.expr, at: ast.AST) -> bool:
        """A decorator named for what it does, outside the catalog: ``@app.tool()``,
        ``@server.async_tool``, ``@register_tool`` (the last word of its name is ``tool``), of a
        library or of the project (a framework may be the project: its app's ``tool`` method
        registers with itself); never guardkit's own."""
        name = dotted(expr)
        if name is None or name.rpartition(".")[2].lower().rpartition("_")[2] != "tool":
            return False  # ``tool``, ``async_tool``, ``register_tool``; not ``tool_options``
        qualname = self.imports.resolve(name) or ""
        if qualname.startswith("guardkit.") or self.is_guard(expr, at):
            return False
        # on an object the catalog knows (an agent an integration gates...), it has spoken
        kind = self.values.kind(expr.value, at) if isinstance(expr, ast.Attribute) else None
        return kind is None or kind.startswith(CLASS)

    def self_guarded(self, func: ast.AST) -> bool:
        """Whether the function asks the guard itself (``guard.authorize(...)`` in its body)."""
        return any(self.tree.function_of(r) is func for r in self.calls.guard_requests)

    def integration_gated(self, func: Def) -> bool:
        """Registered on a server a guardkit integration wraps, or handed to a model only
        through an integration (anywhere in the project)."""
        for decorator in func.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(target, ast.Attribute) and dotted(target.value) in self.servers:
                return True
        owner = self.tree.parent(func)
        name = f"{owner.name}.{func.name}" if isinstance(owner, ast.ClassDef) else func.name
        module = self.values.module
        return (f"{module}.{name}" if module else name) in self.integrated

    def function_gated(self, func: Def) -> bool:
        """Wrapped by a guard decorator, by ``guardkit.tool()(f)`` elsewhere, self-guarding, or
        gated by a guardkit integration."""
        decorated = any(self.is_guard(d, func) for d in func.decorator_list)
        gated = decorated or func.name in self.wrapped or self.self_guarded(func)
        return gated or self.integration_gated(func)

    def request_before(self, node: ast.AST, tools: frozenset[str] = frozenset()) -> bool:
        """Whether a guard request for one of ``tools`` precedes ``node`` in the same function.

        A request naming its tool by a variable (``guard.authorize(block.name, ...)``) counts for
        any tool; one naming a different tool by a literal does not.
        """
        func = self.tree.function_of(node)
        pos = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        return any(
            (r.lineno, r.col_offset) < pos
            and self.tree.function_of(r) is func
            and _names_one_of(r, tools)
            for r in self.calls.guard_requests
        )


def _names_one_of(request: ast.Call, tools: frozenset[str]) -> bool:
    first = request.args[0] if request.args else None
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)) or not tools:
        return True
    return first.value in tools
