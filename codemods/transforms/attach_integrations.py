"""AttachIntegrations: give a framework agent or MCP server guardkit's integration for it.

Where an agent is built with a framework guardkit integrates (see ``integration_sites``), one
edit at the construction site gates every model turn and tool call of that agent, instead of a
decorator on each tool::

    agent = create_agent(model, tools=[search], middleware=[GuardMiddleware()])
    agent = Agent(model, capabilities=[GuardCapability()])                  # pydantic-ai
    ops = Agent(name="ops", tools=guard_tools([read_logs]))                # Agents SDK
    result = await Runner.run(ops, task, hooks=GuardHooks())
    builder.add_node("tools", guarded_tool_node([search]))                 # LangGraph
    server = MCPServer("files")
    guard_server(server)                                                   # mcp 2.x

Each integration is built with no agent: it asks ``guardkit.current_agent()`` at call time, like
the gates the other codemods insert. A site is changed only when its integration removes a
finding (``integration_plan``); the edit keeps the call's layout (one argument per line stays
one per line, and a line the edit makes too long is split later by ``layout.fit``).
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import PositionProvider

from ..analysis.env import Env
from ..config import Config
from .base import FindingCodemod
from .integration_plan import plan
from .integration_sites import Integration, Site

__all__ = ["AttachIntegrations"]


def _next_line(
    space: cst.ParenthesizedWhitespace, last_line: cst.SimpleWhitespace
) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(indent=space.indent, last_line=last_line)


def _append_arg(call: cst.Call, new: cst.Arg) -> cst.Call:
    """``call`` with ``new`` as its last argument, laid out as the others are."""
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    trailing = isinstance(last.comma, cst.Comma)
    closing = (
        last.comma.whitespace_after
        if isinstance(last.comma, cst.Comma)
        else last.whitespace_after_arg
    )
    before = (
        args[-2].comma.whitespace_after
        if len(args) > 1 and isinstance(args[-2].comma, cst.Comma)
        else call.whitespace_before_args
    )
    exploded = isinstance(closing, cst.ParenthesizedWhitespace) and isinstance(
        before, cst.ParenthesizedWhitespace
    )
    if exploded:
        assert isinstance(closing, cst.ParenthesizedWhitespace)
        assert isinstance(before, cst.ParenthesizedWhitespace)
        # the last argument keeps its own comment; the new one takes the line before ``)``
        args[-1] = last.with_changes(
            comma=cst.Comma(whitespace_after=closing.with_changes(last_line=before.last_line)),
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
        end = _next_line(closing, closing.last_line)
        new = (
            new.with_changes(comma=cst.Comma(whitespace_after=end))
            if trailing
            else new.with_changes(whitespace_after_arg=end)
        )
        return call.with_changes(args=[*args, new])
    separator = (
        before
        if len(args) > 1 and not isinstance(before, cst.ParenthesizedWhitespace)
        else cst.SimpleWhitespace(" ")
    )
    args[-1] = last.with_changes(
        comma=cst.Comma(whitespace_after=separator), whitespace_after_arg=cst.SimpleWhitespace("")
    )
    new = new.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    return call.with_changes(args=[*args, new])


def _append_element(value: cst.List, new: cst.BaseExpression) -> cst.List:
    """``[..., new]``, one element per line when the list is laid out that way (a comment
    after the last element stays with it)."""
    elements = list(value.elements)
    if not elements:
        return value.with_changes(elements=[cst.Element(new)])
    last = elements[-1]
    end = cst.Comma() if isinstance(last.comma, cst.Comma) else cst.MaybeSentinel.DEFAULT
    opening = value.lbracket.whitespace_after
    closing = value.rbracket.whitespace_before
    if not isinstance(opening, cst.ParenthesizedWhitespace):
        elements[-1] = last.with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        return value.with_changes(elements=[*elements, cst.Element(new, comma=end)])
    separator = _next_line(opening, opening.last_line)
    if isinstance(closing, cst.ParenthesizedWhitespace):
        separator = closing.with_changes(last_line=opening.last_line)
        closing = _next_line(closing, closing.last_line)
    elements[-1] = last.with_changes(comma=cst.Comma(whitespace_after=separator))
    rbracket = value.rbracket.with_changes(whitespace_before=closing)
    return value.with_changes(elements=[*elements, cst.Element(new, comma=end)], rbracket=rbracket)


class _Indent(cst.CSTTransformer):
    """Indent every continuation line of an expression by four more spaces."""

    def leave_ParenthesizedWhitespace(
        self, original_node: cst.ParenthesizedWhitespace, updated_node: cst.ParenthesizedWhitespace
    ) -> cst.ParenthesizedWhitespace:
        more = cst.SimpleWhitespace(updated_node.last_line.value + "    ")
        return updated_node.with_changes(last_line=more)


def _wrap(
    value: cst.BaseExpression, name: str, line: cst.BaseParenthesizableWhitespace
) -> cst.Call:
    """``name(value)``; a multi-line ``value`` goes on its own lines, as black lays it out."""
    if "\n" not in cst.Module(body=()).code_for_node(value) or not isinstance(
        line, cst.ParenthesizedWhitespace
    ):
        return cst.Call(func=cst.Name(name), args=[cst.Arg(value)])
    inner = _next_line(line, cst.SimpleWhitespace(line.last_line.value + "    "))
    moved = value.visit(_Indent())
    assert isinstance(moved, cst.BaseExpression)
    arg = cst.Arg(moved, whitespace_after_arg=_next_line(line, line.last_line))
    return cst.Call(func=cst.Name(name), whitespace_before_args=inner, args=[arg])


class AttachIntegrations(FindingCodemod):
    DESCRIPTION = "Attach guardkit's framework integration where an agent or MCP server is built."
    #: the findings an integration removes (a framework's tools and its agent's runs)
    RULES = ("GK102", "GK201")

    def __init__(
        self,
        context: CodemodContext,
        max_turns: int = 25,
        config: Config | None = None,
        env: Env | None = None,
        module_name: str = "",
        sites: Sequence[Site] | None = None,
    ) -> None:
        super().__init__(context, max_turns, config, env, module_name)
        #: the sites to change (``None``: planned here, for this module on its own)
        self.sites = sites
        #: extras of the ``guardkit`` requirement the attached integrations need
        self.extras: set[str] = set()

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        sites = self.sites
        if sites is None:
            path = self.context.filename or "<module>"
            sites = plan(tree.code, path, self.config, name=self.module_name, env=self.env)
        self._sites = {s.position: s for s in sites}
        if not self._sites:
            raise SkipFile("no framework agent to attach an integration to")
        return tree.visit(self)

    def _site(self, node: cst.CSTNode) -> Site | None:
        start = self.get_metadata(PositionProvider, node).start
        return self._sites.get((start.line, start.column))

    def _use(self, integration: Integration) -> None:
        AddImportsVisitor.add_needed_import(self.context, integration.module, integration.name)
        self.extras.add(integration.extra)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        site = self._site(original_node)
        if site is None or site.integration.how == "statement":
            return updated_node
        integration = site.integration
        self._use(integration)
        made = cst.Call(func=cst.Name(integration.name))
        keyword = next(
            (a for a in updated_node.args if a.keyword and a.keyword.value == integration.keyword),
            None,
        )
        if integration.how == "rename":
            if isinstance(updated_node.func, cst.Name):
                module, _, name = site.callee.rpartition(".")
                RemoveImportsVisitor.remove_unused_import(self.context, module, name)
            return updated_node.with_changes(func=cst.Name(integration.name))
        if integration.how == "wrap" and keyword is not None:
            line = self._line_before(updated_node, keyword)
            wrapped = _wrap(keyword.value, integration.name, line)
            return updated_node.with_changes(
                args=[
                    a if a is not keyword else a.with_changes(value=wrapped)
                    for a in updated_node.args
                ]
            )
        if integration.how == "append" and keyword is not None:
            value = keyword.value
            if isinstance(value, cst.List):
                value = _append_element(value, made)
            else:
                value = cst.List([cst.Element(cst.StarredElement(value)), cst.Element(made)])
            return updated_node.with_changes(
                args=[
                    a if a is not keyword else a.with_changes(value=value)
                    for a in updated_node.args
                ]
            )
        value = cst.List([cst.Element(made)]) if integration.how == "append" else made
        arg = cst.Arg(
            value,
            keyword=cst.Name(integration.keyword),
            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
        )
        return _append_arg(updated_node, arg)

    @staticmethod
    def _line_before(call: cst.Call, arg: cst.Arg) -> cst.BaseParenthesizableWhitespace:
        """The whitespace that leads to ``arg`` (a new line when the call is exploded)."""
        index = list(call.args).index(arg)
        if index == 0:
            return call.whitespace_before_args
        comma = call.args[index - 1].comma
        return comma.whitespace_after if isinstance(comma, cst.Comma) else cst.SimpleWhitespace("")

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.FlattenSentinel[cst.SimpleStatementLine]:
        first = original_node.body[0] if original_node.body else None
        if not isinstance(first, (cst.Assign, cst.AnnAssign)) or first.value is None:
            return updated_node
        site = self._site(first.value)
        if site is None or site.integration.how != "statement":
            return updated_node
        self._use(site.integration)
        statement = cst.parse_statement(f"{site.integration.name}({site.target})\n")
        assert isinstance(statement, cst.SimpleStatementLine)
        return cst.FlattenSentinel([updated_node, statement])
