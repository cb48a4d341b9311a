"""Guard the tools of an MCP server you write: one line, ``guard_server(server)``.

::

    from mcp.server.mcpserver import MCPServer
    from guardkit.plugins.mcp import guard_server

    server = MCPServer("files")

    @server.tool()
    def delete_file(path: str) -> str: ...

    guard_server(server, agent)      # agent=None: guardkit.current_agent() at call time

``GuardMiddleware`` is an SDK server middleware (``server.middleware``, on ``MCPServer`` and the
low-level ``Server`` alike): each ``tools/call`` is requested with the tool's name and arguments,
waits for a human if the policy says so, runs, and is reported (``isError`` → ``failure``).
A tool already decorated with ``guardkit.tool`` asks the guard itself: the middleware hands the
call over (``guardkit.tools.handoff``) so it is one action, charged once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.mcpserver import MCPServer

from guardkit.errors import GuardError, NoAgentConfigured
from guardkit.protocols import AgentGuard
from guardkit.refusals import refusal
from guardkit.tools.handoff import guarded, handoff, running
from guardkit.tools.scope import current_agent

from .calls import DEFAULT_CALLS, CallPolicy, ask, error_result, outcome, refused, report

__all__ = ["GuardMiddleware", "guard_server"]

#: Finds the Python function behind a tool name (``None``: not known, so not guarded by itself).
Lookup = Callable[[str], Callable[..., Any] | None]


class GuardMiddleware:
    """``server.middleware`` entry that guards every ``tools/call``; other messages pass by.

    ``agent`` is any ``AgentGuard`` (``None``: ``guardkit.current_agent()`` for each call).
    ``lookup`` tells which function a tool name runs, so tools decorated with ``guardkit.tool``
    are handed the call instead of being requested twice (``guard_server`` fills it in).
    """

    def __init__(
        self,
        agent: AgentGuard | None = None,
        *,
        lookup: Lookup | None = None,
        calls: CallPolicy = DEFAULT_CALLS,
    ) -> None:
        self.agent = agent
        self.calls = calls
        self._lookup = lookup

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params or {}
        name, arguments = params.get("name"), params.get("arguments") or {}
        if (
            ctx.method != "tools/call"
            or not isinstance(name, str)
            or not isinstance(arguments, Mapping)
        ):
            # Not a tool call, or one the SDK will reject as malformed before anything runs.
            return await call_next(ctx)
        try:
            agent = self.agent if self.agent is not None else current_agent(site="MCP tool call")
        except NoAgentConfigured as exc:
            # Fail closed, but as this call's answer: a BaseException would end the connection.
            return error_result(f"Error: {exc.message} Nothing was done.")
        func = self._lookup(name) if self._lookup is not None else None
        if func is not None and guarded(func):
            with handoff(agent=agent, call_id=str(ctx.request_id)):
                return await call_next(ctx)
        answer = await ask(agent, name, dict(arguments), self.calls)
        if not isinstance(answer, str):
            return answer
        try:
            with running(answer):  # guardkit.current_action_id() inside the tool
                result = await call_next(ctx)
        except BaseException as exc:
            await report(agent, answer, "failure", f"{type(exc).__name__}: {exc}")
            raise
        await report(agent, answer, *outcome(result))
        return result


def guard_server(
    server: MCPServer | Server[Any],
    agent: AgentGuard | None = None,
    *,
    calls: CallPolicy = DEFAULT_CALLS,
) -> GuardMiddleware:
    """Guard every tool call ``server`` serves, from now on; returns the middleware it added.

    On an ``MCPServer`` a refusal raised inside a ``guardkit.tool`` function becomes the refusal
    result too (the SDK would otherwise answer "Error executing tool ...").
    """
    lookup: Lookup | None = None
    if isinstance(server, MCPServer):
        lookup = _tool_functions(server)
        _refusals_as_results(server)
    middleware = GuardMiddleware(agent, lookup=lookup, calls=calls)
    server.middleware.append(middleware)
    return middleware


def _tool_functions(server: MCPServer) -> Lookup:
    # The SDK has no public "function behind this tool"; its tool manager (the same attribute in
    # FastMCP 1.x and MCPServer 2.x) is the one place that knows. Read at call time: tools may be
    # added after guard_server.
    def lookup(name: str) -> Callable[..., Any] | None:
        tool = server._tool_manager.get_tool(name)
        return None if tool is None else tool.fn

    return lookup


def _refusals_as_results(server: MCPServer) -> None:
    # MCPServer turns anything a tool raises into "Error executing tool X", keeping the original
    # only as __cause__; catch the refusal there, below the SDK's handler, and answer with it.
    original = server.call_tool

    async def call_tool(name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await original(name, arguments, context)
        except Exception as exc:
            found = _refusal_in(exc)
            if found is None:
                raise
            return refused(found)

    server.call_tool = call_tool  # type: ignore[method-assign]


def _refusal_in(exc: BaseException | None) -> Any:
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, GuardError):
            return refusal(exc)
        exc, seen = exc.__cause__, seen + 1
    return None
