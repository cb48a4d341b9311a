"""Where a framework agent or MCP server is built, and which guardkit integration attaches there.

This is data plus a syntactic search over a stdlib ``ast`` module. A *site* is one call that
builds a framework agent, tool node or server, or runs an Agents SDK agent; ``INTEGRATIONS``
says how the integration goes in:

* ``append``: one more element in a list keyword (``create_agent(..., middleware=[...,
  GuardMiddleware()])``, ``Agent(..., capabilities=[GuardCapability()])``);
* ``keyword``: a keyword the call lacks (``Runner.run(..., hooks=GuardHooks())``);
* ``wrap``: the value of a keyword wrapped (``Agent(..., tools=guard_tools([...]))``);
* ``rename``: the callee replaced (``ToolNode(tools)`` -> ``guarded_tool_node(tools)``);
* ``statement``: a statement after the assignment that builds it (``guard_server(server)``).

``attach`` makes the same edit on an ``ast`` tree, so the fix can ask the analysis which
findings a site's integration would remove before it rewrites anything.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from ..analysis.imports import ImportMap
from ..analysis.tree import Tree, dotted

__all__ = ["INTEGRATIONS", "Integration", "Site", "attach", "find_sites"]

How = Literal["append", "keyword", "wrap", "rename", "statement"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Integration:
    """How guardkit's integration for one framework call is attached."""

    how: How
    #: the keyword it goes in (``append``, ``keyword``, ``wrap``)
    keyword: str = ""
    #: what is imported, and from where
    module: str
    name: str
    #: the extra of the ``guardkit`` requirement it needs
    extra: str


_LANGCHAIN = "guardkit.plugins.langchain"
_MIDDLEWARE = Integration(
    how="append", keyword="middleware", module=_LANGCHAIN, name="GuardMiddleware", extra="langchain"
)
_TOOL_NODE = Integration(
    how="rename", module=_LANGCHAIN, name="guarded_tool_node", extra="langchain"
)
_CAPABILITY = Integration(
    how="append",
    keyword="capabilities",
    module="guardkit.plugins.pydantic_ai",
    name="GuardCapability",
    extra="pydantic-ai",
)
_OPENAI_AGENTS = "guardkit.plugins.openai_agents"
_GUARD_TOOLS = Integration(
    how="wrap", keyword="tools", module=_OPENAI_AGENTS, name="guard_tools", extra="openai-agents"
)
_HOOKS = Integration(
    how="keyword", keyword="hooks", module=_OPENAI_AGENTS, name="GuardHooks", extra="openai-agents"
)
_GUARD_SERVER = Integration(
    how="statement", module="guardkit.plugins.mcp", name="guard_server", extra="mcp"
)
#: ``guard(agent)`` after the agent (an ADK app or runner) is built: it is guarded in place
_SMOLAGENTS = Integration(
    how="statement", module="guardkit.plugins.smolagents", name="guard", extra="smolagents"
)
_LLAMA_INDEX = Integration(
    how="statement", module="guardkit.plugins.llama_index", name="guard", extra="llama-index"
)
_GOOGLE_ADK = Integration(
    how="statement", module="guardkit.plugins.google_adk", name="guard", extra="google-adk"
)
_CREWAI = Integration(
    how="statement", module="guardkit.plugins.crewai", name="guard", extra="crewai"
)
_LLAMA_AGENTS = "llama_index.core.agent.workflow"

#: qualified callee -> the integration attached where it is called. Only frameworks guardkit
#: has an integration for, in the versions it supports: mcp 1.x's ``FastMCP`` has no server
#: middleware (its tools keep ``@guardkit.tool()``), nor does LangGraph's deprecated
#: ``create_react_agent``. An ADK agent is guarded through the app or runner that runs it, a
#: CrewAI agent through the crew it is in.
INTEGRATIONS: dict[str, Integration] = {
    "langchain.agents.create_agent": _MIDDLEWARE,
    "langgraph.prebuilt.ToolNode": _TOOL_NODE,
    "langgraph.prebuilt.tool_node.ToolNode": _TOOL_NODE,
    "pydantic_ai.Agent": _CAPABILITY,
    "pydantic_ai.agent.Agent": _CAPABILITY,
    "agents.Agent": _GUARD_TOOLS,
    "agents.agent.Agent": _GUARD_TOOLS,
    "agents.Runner.run": _HOOKS,
    "agents.Runner.run_sync": _HOOKS,
    "agents.Runner.run_streamed": _HOOKS,
    "mcp.server.MCPServer": _GUARD_SERVER,
    "mcp.server.mcpserver.MCPServer": _GUARD_SERVER,
    "smolagents.CodeAgent": _SMOLAGENTS,
    "smolagents.ToolCallingAgent": _SMOLAGENTS,
    "smolagents.agents.CodeAgent": _SMOLAGENTS,
    "smolagents.agents.ToolCallingAgent": _SMOLAGENTS,
    f"{_LLAMA_AGENTS}.FunctionAgent": _LLAMA_INDEX,
    f"{_LLAMA_AGENTS}.ReActAgent": _LLAMA_INDEX,
    f"{_LLAMA_AGENTS}.AgentWorkflow": _LLAMA_INDEX,
    f"{_LLAMA_AGENTS}.function_agent.FunctionAgent": _LLAMA_INDEX,
    f"{_LLAMA_AGENTS}.react_agent.ReActAgent": _LLAMA_INDEX,
    f"{_LLAMA_AGENTS}.multi_agent_workflow.AgentWorkflow": _LLAMA_INDEX,
    "google.adk.runners.Runner": _GOOGLE_ADK,
    "google.adk.runners.InMemoryRunner": _GOOGLE_ADK,
    "google.adk.apps.App": _GOOGLE_ADK,
    "google.adk.apps.app.App": _GOOGLE_ADK,
    "crewai.Crew": _CREWAI,
    "crewai.crew.Crew": _CREWAI,
}

#: keywords of ``ToolNode`` that ``guarded_tool_node`` sets itself
_TOOL_NODE_TAKEN = frozenset({"wrap_tool_call", "awrap_tool_call"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Site:
    """One call where an integration can be attached; ``target`` is the name or attribute the
    built object is assigned to (for ``statement`` integrations)."""

    line: int
    column: int
    integration: Integration
    #: the qualified name of the callee
    callee: str
    target: str = ""

    @property
    def position(self) -> tuple[int, int]:
        return (self.line, self.column)


def _keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _fits(call: ast.Call, integration: Integration) -> bool:
    """Whether the edit is safe: no ``**kwargs`` that may already hold the keyword, nothing of
    the user's the integration would replace."""
    if any(k.arg is None for k in call.keywords) and integration.how in ("append", "keyword"):
        return False
    if integration.how == "keyword":
        return _keyword(call, integration.keyword) is None
    if integration.how == "wrap":
        return _keyword(call, integration.keyword) is not None
    if integration.how == "rename":
        return not (_TOOL_NODE_TAKEN & {k.arg for k in call.keywords})
    return True


def _assigned(tree: Tree, call: ast.Call) -> str:
    """The name or attribute ``call``'s value is assigned to, when the call is the whole value
    of an assignment statement; else empty."""
    parent = tree.parent(call)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        target: ast.expr | None = parent.targets[0]
    elif isinstance(parent, ast.AnnAssign) and parent.simple is not None:
        target = parent.target
    else:
        return ""
    return (dotted(target) or "") if isinstance(target, (ast.Name, ast.Attribute)) else ""


def find_sites(tree: Tree, imports: ImportMap, gates: frozenset[str]) -> list[Site]:
    """Calls in the module where an integration can go and none is attached yet (no guardkit
    gate among the arguments, no ``guard_server`` call naming the server)."""
    taken = {
        name
        for call in tree.nodes(ast.Call)
        if imports.resolve(dotted(call.func)) in gates
        for name in (dotted(a) for a in call.args)
        if name
    }
    sites: list[Site] = []
    for call in tree.nodes(ast.Call):
        callee = imports.resolve(dotted(call.func)) or ""
        integration = INTEGRATIONS.get(callee)
        if integration is None or not _fits(call, integration) or _gated(call, imports, gates):
            continue
        if _bound_elsewhere(imports, integration):
            continue
        target = _assigned(tree, call) if integration.how == "statement" else ""
        if integration.how == "statement" and (not target or target in taken):
            continue
        position = {"line": call.lineno, "column": call.col_offset}
        sites.append(Site(**position, integration=integration, callee=callee, target=target))
    return sorted(sites, key=lambda s: s.position)


def _gated(call: ast.Call, imports: ImportMap, gates: frozenset[str]) -> bool:
    for part in (*call.args, *(k.value for k in call.keywords)):
        for node in ast.walk(part):
            if (
                isinstance(node, (ast.Name, ast.Attribute))
                and imports.resolve(dotted(node)) in gates
            ):
                return True
    return False


def _bound_elsewhere(imports: ImportMap, integration: Integration) -> bool:
    """The integration's name already means something else in the module."""
    bound = imports.names.get(integration.name)
    return bound is not None and bound != f"{integration.module}.{integration.name}"


def _new(name: str, at: ast.AST) -> ast.Name:
    return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), at)


def _blocks(module: ast.Module) -> Iterator[list[ast.stmt]]:
    """Every statement list of the module (bodies, ``else`` and ``finally`` blocks)."""
    for node in ast.walk(module):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def attach(module: ast.Module, site: Site) -> None:
    """Make the site's edit on ``module`` in place (and import the integration's name), for
    the analysis to judge; the source is rewritten by ``AttachIntegrations``."""
    integration = site.integration
    call = next(
        c
        for c in ast.walk(module)
        if isinstance(c, ast.Call) and (c.lineno, c.col_offset) == site.position
    )
    made = ast.Call(func=_new(integration.name, call), args=[], keywords=[])
    ast.copy_location(made, call)
    keyword = _keyword(call, integration.keyword)
    if integration.how == "append":
        element: list[ast.expr] = [made]
        old = [ast.Starred(value=keyword.value, ctx=ast.Load())] if keyword else []
        value = ast.copy_location(ast.List(elts=[*old, *element], ctx=ast.Load()), call)
        call.keywords = [k for k in call.keywords if k is not keyword]
        call.keywords.append(ast.keyword(arg=integration.keyword, value=value))
    elif integration.how == "keyword":
        call.keywords.append(ast.keyword(arg=integration.keyword, value=made))
    elif integration.how == "wrap" and keyword is not None:
        made.args = [keyword.value]
        keyword.value = made
    elif integration.how == "rename":
        call.func = _new(integration.name, call)
    elif integration.how == "statement":
        target = ast.parse(site.target, mode="eval").body
        made.args = [target]
        statement = ast.copy_location(ast.Expr(value=made), call)
        for block in _blocks(module):
            found = [i for i, item in enumerate(block) if getattr(item, "value", None) is call]
            if found:
                block.insert(found[0] + 1, statement)
                break
    imported = ast.ImportFrom(integration.module, [ast.alias(integration.name)], 0)
    module.body.insert(0, ast.copy_location(imported, module.body[0] if module.body else call))
    ast.fix_missing_locations(module)
