"""GuardDispatch: run the model's tool choice through ``guardkit.call_tool`` where it is dispatched.

At a dispatch site (GK202) and at a dispatch of guarded tools whose denial would escape the
agent loop (GK302), the call ``F(**X)`` becomes ``guardkit.call_tool(KEY, X, F)``
(``await guardkit.acall_tool(...)`` where it was awaited), ``KEY`` being the name the model chose::

    TOOL_HANDLERS.get(block.name)(**block.input)
    guardkit.call_tool(block.name, block.input, TOOL_HANDLERS.get(block.name))

    fn = function_map[name]             # the lookup stays where it was
    guardkit.call_tool(name, args, fn)  # was fn(**args)

    await guardkit.acall_tool(name, tool_input, self.tools[name].execute)

In an MCP low-level ``@server.call_tool()`` handler (reported as a whole), each lookup it
calls that way is rewritten, with ``on_refusal`` returning a list of ``TextContent`` blocks:
the handler's own result shape.

The key is read from the lookup (``T[key]``, ``T.get(key)``, ``getattr(obj, key)``,
``get_tool(key)``, a method or entry of one), through the variables that hold it, or from the
branch (``if block.name == "search":``, ``case "search":``). The call returns what the tool
returns, or the denial's sentence as the tool's result, so a denial never raises out of the
loop. The lookup is evaluated as before (an unknown name fails as it did). A site whose key is
not a plain name or attribute path, or whose call is not ``F(**X)``, is left as a follow-up.
"""

from __future__ import annotations

from typing import ClassVar

import libcst as cst
import libcst.matchers as m
from libcst.codemod import SkipFile
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import ParentNodeProvider, PositionProvider

from ..config import Config
from ..scanner import analyse_source
from .base import FindingCodemod

__all__ = ["GuardDispatch"]

_DISPATCH_CALLS = frozenset({"call_tool", "acall_tool"})
_ALIAS_DEPTH = 4


def _pure(expr: cst.BaseExpression) -> bool:
    """A string, a name, an attribute path or a subscript by a constant or a name: safe to read
    again."""
    while True:
        if isinstance(expr, (cst.Name, cst.SimpleString)):
            return True
        if isinstance(expr, cst.Attribute):
            expr = expr.value
            continue
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
            index = expr.slice[0].slice
            if not isinstance(index, cst.Index) or not isinstance(
                index.value, (cst.SimpleString, cst.Integer, cst.Name)
            ):
                return False
            expr = expr.value
            continue
        return False


def _string(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _star_input(call: cst.Call) -> cst.BaseExpression | None:
    """``X`` of ``F(**X)``, the only form ``call_tool`` reproduces exactly; the model's text
    ``S`` of ``F(**json.loads(S))`` (``call_tool`` parses it, and bad JSON is the model's
    mistake, handed back as the result)."""
    if len(call.args) != 1 or call.args[0].star != "**":
        return None
    value = call.args[0].value
    if (
        isinstance(value, cst.Call)
        and m.matches(value.func, m.Attribute(value=m.Name("json"), attr=m.Name("loads")))
        and len(value.args) == 1
        and not value.args[0].star
        and value.args[0].keyword is None
    ):
        return value.args[0].value
    return value


def _is_dispatch_call(call: cst.Call) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value in _DISPATCH_CALLS and isinstance(func.value, cst.Name)
    return isinstance(func, cst.Name) and func.value in _DISPATCH_CALLS


class GuardDispatch(FindingCodemod):
    DESCRIPTION = "Run model-chosen tool calls through guardkit.call_tool at dispatch sites."
    RULES = ("GK202",)
    #: the rules whose findings it mends where it recognises the site, fixable or not
    MENDS: ClassVar[tuple[str, ...]] = ("GK202", "GK302")
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    def finding_targets(self, code: str) -> set[tuple[int, int]]:
        path = self.context.filename or "<module>"
        config = Config(
            select=self.MENDS, max_turns=self.config.max_turns, catalog=self.config.catalog
        )
        result, _, _ = analyse_source(
            code.encode(), path, config, name=self.module_name, env=self.env, force=True
        )
        return {(f.line, f.column) for f in result.findings}

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.targets = self.finding_targets(tree.code)
        if not self.targets:
            raise SkipFile("nothing to fix")
        #: per enclosing function: is it an MCP ``call_tool`` handler reported as the dispatch
        self._handlers: list[bool] = []
        self._content = _content_block(tree)
        self._tables = _tables(tree)
        return tree.visit(self)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._handlers.append(node.asynchronous is not None and self.is_target(node))

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._handlers.pop()
        return updated_node

    # -- the rewrite ----------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if isinstance(self.get_metadata(ParentNodeProvider, original_node), cst.Await):
            return updated_node  # rewritten with its ``await`` (leave_Await)
        return self._rewrite(original_node, updated_node, awaited=False) or updated_node

    def leave_Await(self, original_node: cst.Await, updated_node: cst.Await) -> cst.BaseExpression:
        inner, updated = original_node.expression, updated_node.expression
        if not isinstance(inner, cst.Call) or not isinstance(updated, cst.Call):
            return updated_node
        call = self._rewrite(inner, updated, awaited=True)
        return updated_node if call is None else updated_node.with_changes(expression=call)

    def _rewrite(self, original: cst.Call, updated: cst.Call, *, awaited: bool) -> cst.Call | None:
        # in an MCP ``call_tool`` handler (reported as a whole), its lookups are the dispatch
        handler = bool(self._handlers) and self._handlers[-1]
        if not (handler or self.is_target(original)) or self._inside_dispatch_call(original):
            return None
        tool_input = _star_input(updated)
        key = self._key(original, branches=not handler)
        if tool_input is None or key is None:
            return None
        AddImportsVisitor.add_needed_import(self.context, "guardkit")
        self.gated |= self._names(original.func, key)
        name = "acall_tool" if awaited else "call_tool"
        args = [cst.Arg(key.deep_clone()), cst.Arg(tool_input), cst.Arg(updated.func)]
        if handler:  # keep the handler's result shape: a list of content blocks
            module, block = self._content
            if module is not None:
                AddImportsVisitor.add_needed_import(self.context, module, block)
            shape = f'lambda refusal: [{block}(type="text", text=refusal.text)]'
            tight = cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""),
                whitespace_after=cst.SimpleWhitespace(""),
            )
            value = cst.parse_expression(shape)
            args.append(cst.Arg(value, keyword=cst.Name("on_refusal"), equal=tight))
        return cst.Call(func=cst.parse_expression(f"guardkit.{name}"), args=args)

    def _names(self, func: cst.BaseExpression, key: cst.BaseExpression) -> set[str]:
        """The tool names a site can run: its branch's label, or the keys of the module-level
        ``{"name": ...}`` table it looks up."""
        label = _string(key)
        if label is not None:
            return {label}
        lookup = func
        while isinstance(lookup, cst.Attribute):
            lookup = lookup.value
        table = None
        if isinstance(lookup, cst.Subscript):
            table = lookup.value
        elif isinstance(lookup, cst.Call) and isinstance(lookup.func, cst.Attribute):
            table = lookup.func.value
        elif isinstance(lookup, cst.Name):
            value = self._assigned(lookup.value, func)
            return set() if value is None or value is func else self._names(value, key)
        return set(self._tables.get(table.value, ())) if isinstance(table, cst.Name) else set()

    def _inside_dispatch_call(self, node: cst.CSTNode) -> bool:
        """Already handed to ``guardkit.call_tool`` (a second run changes nothing)."""
        current: cst.CSTNode | None = node
        while current is not None and not isinstance(current, cst.FunctionDef):
            if isinstance(current, cst.Call) and current is not node and _is_dispatch_call(current):
                return True
            current = self.get_metadata(ParentNodeProvider, current, None)
        return False

    # -- the name the model chose ---------------------------------------------------------------

    def _key(self, call: cst.Call, *, branches: bool = True) -> cst.BaseExpression | None:
        key = self._key_of(call.func, call, _ALIAS_DEPTH)
        if key is None and branches and isinstance(call.func, cst.Name):
            key = self._branch_label(call)
        return key if key is not None and _pure(key) else None

    def _key_of(
        self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int
    ) -> cst.BaseExpression | None:
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
            index = expr.slice[0].slice
            if not isinstance(index, cst.Index):
                return None
            if isinstance(index.value, cst.SimpleString):  # ``entry["callable"]``
                return self._key_of(expr.value, at, depth)
            return index.value
        if isinstance(expr, cst.Call):
            return _lookup_key(expr)
        if isinstance(expr, cst.Attribute):  # a method of the looked-up tool
            return self._key_of(expr.value, at, depth)
        if isinstance(expr, cst.Name) and depth > 0:
            value = self._assigned(expr.value, at)
            return None if value is None else self._key_of(value, value, depth - 1)
        return None

    def _assigned(self, name: str, at: cst.CSTNode) -> cst.BaseExpression | None:
        """The value last assigned to ``name`` before ``at`` in the same function."""
        scope = self._function_of(at)
        if scope is None:
            return None
        where = self.get_metadata(PositionProvider, at).start
        found: list[cst.BaseExpression] = []

        class Assignments(cst.CSTVisitor):
            def __init__(self, outer: GuardDispatch) -> None:
                self.outer = outer

            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is scope

            def visit_Assign(self, node: cst.Assign) -> None:
                target = node.targets[0].target if len(node.targets) == 1 else None
                start = self.outer.get_metadata(PositionProvider, node).start
                if (
                    isinstance(target, cst.Name)
                    and target.value == name
                    and (start.line, start.column) < (where.line, where.column)
                ):
                    found.append(node.value)

        scope.visit(Assignments(self))
        return found[-1] if found else None

    def _function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        current = self.get_metadata(ParentNodeProvider, node, None)
        while current is not None and not isinstance(current, cst.FunctionDef):
            current = self.get_metadata(ParentNodeProvider, current, None)
        return current

    def _branch_label(self, call: cst.Call) -> cst.BaseExpression | None:
        """``"search"`` for a call under ``if <name> == "search":`` or ``case "search":``."""
        current = self.get_metadata(ParentNodeProvider, call, None)
        while current is not None and not isinstance(current, cst.FunctionDef):
            if isinstance(current, cst.If) and isinstance(current.test, cst.Comparison):
                test = current.test
                if len(test.comparisons) == 1 and isinstance(
                    test.comparisons[0].operator, cst.Equal
                ):
                    for side in (test.left, test.comparisons[0].comparator):
                        if _string(side) is not None:
                            return side
            pattern = current.pattern if isinstance(current, cst.MatchCase) else None
            if isinstance(pattern, cst.MatchValue) and _string(pattern.value) is not None:
                return pattern.value
            current = self.get_metadata(ParentNodeProvider, current, None)
        return None


def _lookup_key(lookup: cst.Call) -> cst.BaseExpression | None:
    """The key of ``T.get(key[, default])``, ``getattr(obj, key)``, ``get_tool(key)``."""
    args = lookup.args
    if any(a.star or a.keyword for a in args) or not args:
        return None
    func = lookup.func
    if isinstance(func, cst.Attribute) and func.attr.value == "get" and len(args) <= 2:
        return args[0].value
    if isinstance(func, cst.Name) and func.value == "getattr" and len(args) >= 2:
        return args[1].value
    return args[0].value if len(args) == 1 else None


def _content_block(tree: cst.Module) -> tuple[str | None, str]:
    """How the module names MCP's ``TextContent`` (``TextContent``, ``types.TextContent``), and
    the module to import it from when it does not (``(None, name)`` when it does)."""
    for stmt in tree.body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
                continue
            module = cst.Module([]).code_for_node(small.module) if small.module else ""
            for alias in small.names:
                local = alias.asname.name if alias.asname else alias.name
                if not isinstance(local, cst.Name):
                    continue
                imported = cst.Module([]).code_for_node(alias.name)
                if module == "mcp.types" and imported == "TextContent":
                    return None, local.value
                if module == "mcp" and imported == "types":
                    return None, f"{local.value}.TextContent"
    return "mcp.types", "TextContent"


def _tables(tree: cst.Module) -> dict[str, tuple[str, ...]]:
    """Module-level ``NAME = {"tool": ..., ...}`` tables: their string keys."""
    found: dict[str, tuple[str, ...]] = {}
    for stmt in tree.body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if not isinstance(small, cst.Assign) or not isinstance(small.value, cst.Dict):
                continue
            keys = [_string(e.key) for e in small.value.elements if isinstance(e, cst.DictElement)]
            names = tuple(k for k in keys if k is not None)
            for target in small.targets:
                if isinstance(target.target, cst.Name) and names:
                    found[target.target.value] = names
    return found
