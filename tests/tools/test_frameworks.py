"""Framework decorators placed above ``guardkit.tool``: LangChain, OpenAI Agents SDK, MCP."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import pytest

import guardkit
from guardkit import ToolDenied


@pytest.fixture
def denying(make_agent):
    return make_agent(default_rule=None)


def test_langchain_tool(agent, denying, ledger, calls):
    lc_tools = pytest.importorskip("langchain_core.tools")

    @lc_tools.tool
    @guardkit.tool(guard=agent)
    def search(query: str, limit: int = 3) -> str:
        """Search the web."""
        calls(query)
        return f"{query}:{limit}"

    assert search.name == "search"
    assert search.description == "Search the web."
    assert set(search.args) == {"query", "limit"}
    assert search.invoke({"query": "x", "limit": 2}) == "x:2"
    assert ledger(agent, "action_requested")[-1]["input"] == {"query": "x", "limit": 2}

    @lc_tools.tool
    @guardkit.tool(guard=denying)
    def blocked(query: str) -> str:
        """Never runs."""
        calls(query)
        return query

    with pytest.raises(ToolDenied):
        blocked.invoke({"query": "y"})
    assert calls.count == 1


def test_langchain_async_tool(agent, calls):
    lc_tools = pytest.importorskip("langchain_core.tools")

    @lc_tools.tool
    @guardkit.tool(guard=agent)
    async def fetch(url: str) -> str:
        """Fetch."""
        calls(url)
        return url

    assert asyncio.run(fetch.ainvoke({"url": "u"})) == "u"
    assert calls.count == 1


def test_openai_agents_function_tool(agent, denying, ledger, calls):
    agents = pytest.importorskip("agents")
    tool_context = importlib.import_module("agents.tool_context")

    def invoke(tool: Any, arguments: str) -> Any:
        ctx = tool_context.ToolContext(
            context=None, tool_name=tool.name, tool_call_id="c1", tool_arguments=arguments
        )
        return asyncio.run(tool.on_invoke_tool(ctx, arguments))

    @agents.function_tool
    @guardkit.tool(guard=agent)
    def weather(city: str) -> str:
        """Get the weather."""
        calls(city)
        return "sunny in " + city

    assert weather.name == "weather"
    assert weather.params_json_schema["required"] == ["city"]
    assert invoke(weather, '{"city": "Paris"}') == "sunny in Paris"
    assert ledger(agent, "action_requested")[-1]["input"] == {"city": "Paris"}

    openai_agents = importlib.import_module("guardkit.plugins.openai_agents")

    @openai_agents.guard_tools
    @agents.function_tool
    @guardkit.tool(guard=denying)
    def blocked(city: str) -> str:
        """Never runs."""
        calls(city)
        return city

    # guard_tools hands the call to the guarded tool, which asks once; its denial reaches the
    # model as the seed's denial text instead of the SDK's generic error.
    answer = invoke(blocked, '{"city": "Rome"}')
    assert answer.startswith("Denied by the policy guard: tool 'blocked' is not allowed.")
    assert calls.count == 1
    assert len(ledger(denying, "action_requested")) == 1


def _mcp_server() -> Any:
    try:
        module = importlib.import_module("mcp.server.mcpserver")
        return module.MCPServer("guardkit-test")
    except ImportError:
        fastmcp = pytest.importorskip("mcp.server.fastmcp")
        return fastmcp.FastMCP("guardkit-test")


def test_mcp_tool(agent, denying, ledger, calls):
    pytest.importorskip("mcp")
    server = _mcp_server()

    @server.tool()
    @guardkit.tool(guard=agent)
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        calls(a, b)
        return a + b

    @server.tool()
    @guardkit.tool(guard=denying)
    def blocked(a: int) -> int:
        """Never runs."""
        calls(a)
        return a

    (listed,) = [t for t in asyncio.run(server.list_tools()) if t.name == "add"]
    schema = getattr(listed, "input_schema", None) or listed.inputSchema
    assert schema["required"] == ["a", "b"]
    result = asyncio.run(server.call_tool("add", {"a": 1, "b": 2}))
    assert "3" in str(result)
    assert ledger(agent, "action_requested")[-1]["input"] == {"a": 1, "b": 2}
    with pytest.raises(Exception) as info:  # noqa: PT011 - each MCP version wraps differently
        asyncio.run(server.call_tool("blocked", {"a": 1}))
    chain: list[BaseException] = []
    error: BaseException | None = info.value
    while error is not None:
        chain.append(error)
        error = error.__cause__ or error.__context__
    assert any(isinstance(e, ToolDenied) for e in chain)
    assert calls.count == 1
