"""The code ``AttachIntegrations`` writes runs against the real frameworks, driven by their own
fake models, and is guarded: the guard comes from the documented one-step configuration
(``GUARDKIT_AGENT``, ``GUARDKIT_DB``, ``GUARDKIT_POLICY``), a tool the policy does not list never
runs and the model reads the denial, and the agent's model turns are counted as ``llm_turn``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from guardkit.codemods.fixer import fix_source
from guardkit.codemods.testing import dedent

import guardkit
from guardkit.tools import scope

DENIAL = "Denied by the policy guard"


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[guardkit.Guard]:
    """The environment a fixed project is configured with; the guard reading the same ledger."""
    policy = tmp_path / "guardkit-policy.toml"
    policy.write_text(
        "budget = 100\n\n[tools.llm_turn]\ncost = 1\n\n[tools.search]\ncost = 1\n"
        "\n[tools.lookup]\ncost = 1\n"
    )
    monkeypatch.setenv("GUARDKIT_AGENT", "fixed-bot")
    monkeypatch.setenv("GUARDKIT_DB", str(tmp_path / "guard.db"))
    monkeypatch.setenv("GUARDKIT_POLICY", str(policy))
    scope._process_default[0] = None
    guard = guardkit.Guard(str(tmp_path / "guard.db"))
    yield guard
    agent = scope._process_default[0]
    scope._process_default[0] = None
    if isinstance(agent, guardkit.LocalAgent):
        agent.guard.close()
    guard.close()


def _fixed(source: str) -> dict[str, Any]:
    result = fix_source(dedent(source), "agent.py")
    assert result.applied == ("AttachIntegrations",), result.applied
    namespace: dict[str, Any] = {"__name__": "fixed_agent", "RAN": []}
    exec(compile(result.after, "agent.py", "exec"), namespace)
    return namespace


def _decisions(guard: guardkit.Guard) -> list[tuple[str, str]]:
    """``(tool, "allowed" | "denied" | ...)`` for every action the agent requested."""
    records = guard.log("fixed-bot")["records"]
    tools = {
        r["payload"]["action_id"]: r["payload"]["tool"]
        for r in records
        if r["kind"] == "action_requested"
    }
    return [
        (tools[r["payload"]["action_id"]], r["kind"].removeprefix("action_"))
        for r in records
        if r["kind"] in ("action_allowed", "action_denied")
    ]


LANGCHAIN = """
from langchain.agents import create_agent
from langchain_core.tools import tool


@tool
def search(query: str) -> str:
    \"\"\"Search the docs.\"\"\"
    RAN.append("search")
    return f"3 pages about {query}"


@tool
def delete_repo(name: str) -> str:
    \"\"\"Delete a repository.\"\"\"
    RAN.append("delete_repo")
    return f"deleted {name}"


def answer(model, question):
    agent = create_agent(model, tools=[search, delete_repo])
    return agent.invoke({"messages": [{"role": "user", "content": question}]})
"""


def _chat(replies: list[Any]) -> Any:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class ScriptedChat(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    return ScriptedChat(messages=iter(replies))


def test_langchain_agent(configured: guardkit.Guard) -> None:
    from langchain_core.messages import AIMessage

    fixed = _fixed(LANGCHAIN)
    calls = [
        {"name": "search", "args": {"query": "ledgers"}, "id": "c1"},
        {"name": "delete_repo", "args": {"name": "prod"}, "id": "c2"},
    ]
    model = _chat([AIMessage("", tool_calls=calls), "Found 3 pages; I may not delete."])
    messages = fixed["answer"](model, "Search, then delete prod")["messages"]
    assert fixed["RAN"] == ["search"]
    denial = next(m for m in messages if getattr(m, "tool_call_id", "") == "c2")
    assert denial.status == "error"
    assert denial.content.startswith(DENIAL)
    assert _decisions(configured).count(("llm_turn", "allowed")) == 2
    assert ("delete_repo", "denied") in _decisions(configured)


LANGGRAPH = """
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode


def search(query: str) -> str:
    \"\"\"Search the docs.\"\"\"
    RAN.append("search")
    return f"3 pages about {query}"


def wipe(path: str) -> str:
    \"\"\"Wipe a path.\"\"\"
    RAN.append("wipe")
    return path


def build():
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([search, wipe]))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()
"""


def test_langgraph_tool_node(configured: guardkit.Guard) -> None:
    from langchain_core.messages import AIMessage

    fixed = _fixed(LANGGRAPH)
    calls = [
        {"name": "search", "args": {"query": "ledgers"}, "id": "c1"},
        {"name": "wipe", "args": {"path": "/"}, "id": "c2"},
    ]
    result = fixed["build"]().invoke({"messages": [AIMessage("", tool_calls=calls)]})
    assert fixed["RAN"] == ["search"]
    by_id = {m.tool_call_id: m for m in result["messages"][1:]}
    assert by_id["c1"].content == "3 pages about ledgers"
    assert by_id["c2"].content.startswith(DENIAL)
    # the two calls run in parallel: their records come in either order
    assert sorted(_decisions(configured)) == [("search", "allowed"), ("wipe", "denied")]


PYDANTIC_AI = """
from pydantic_ai import Agent

support = Agent(system_prompt="Help the customer.")


@support.tool_plain
def search(query: str) -> str:
    RAN.append("search")
    return f"3 pages about {query}"


@support.tool_plain
def drop_tables() -> str:
    RAN.append("drop_tables")
    return "dropped"


async def answer(model, question):
    return (await support.run(question, model=model)).output
"""


def test_pydantic_ai_agent(configured: guardkit.Guard) -> None:
    from pydantic_ai.models.test import TestModel

    fixed = _fixed(PYDANTIC_AI)
    output = asyncio.run(fixed["answer"](TestModel(), "search, then drop"))
    assert fixed["RAN"] == ["search"]
    assert DENIAL in output
    assert _decisions(configured).count(("llm_turn", "allowed")) == 2
    assert ("drop_tables", "denied") in _decisions(configured)


OPENAI_AGENTS = """
from agents import Agent, RunConfig, Runner, function_tool


@function_tool
def lookup(order_id: str) -> str:
    \"\"\"Look an order up.\"\"\"
    RAN.append("lookup")
    return f"order {order_id}: shipped"


@function_tool
def refund(order_id: str) -> str:
    \"\"\"Refund an order.\"\"\"
    RAN.append("refund")
    return "refunded"


async def answer(model, question):
    support = Agent(name="support", model=model, tools=[lookup, refund])
    result = await Runner.run(support, question, run_config=RunConfig(tracing_disabled=True))
    return result.final_output
"""


def test_openai_agents_run(configured: guardkit.Guard) -> None:
    from agents.testing import ScriptedModel, assistant_message, function_call

    fixed = _fixed(OPENAI_AGENTS)
    model = ScriptedModel(
        [
            [
                function_call("lookup", {"order_id": "42"}, call_id="c1"),
                function_call("refund", {"order_id": "42"}, call_id="c2"),
            ],
            [assistant_message("Shipped; I may not refund it.")],
        ]
    )
    assert asyncio.run(fixed["answer"](model, "Refund 42")) == "Shipped; I may not refund it."
    assert fixed["RAN"] == ["lookup"]
    outputs = [
        i["output"] for i in model.last_call.input if i.get("type") == "function_call_output"
    ]
    assert outputs[0] == "order 42: shipped"
    assert outputs[1].startswith(DENIAL)
    assert _decisions(configured).count(("llm_turn", "allowed")) == 2
    assert ("refund", "denied") in _decisions(configured)


MCP = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("files")


@server.tool()
def search(query: str) -> str:
    RAN.append("search")
    return f"3 pages about {query}"


@server.tool()
def delete_path(path: str) -> str:
    RAN.append("delete_path")
    return f"deleted {path}"
"""


def test_mcp_server(configured: guardkit.Guard) -> None:
    import anyio
    from mcp import Client

    fixed = _fixed(MCP)

    async def main() -> tuple[Any, Any]:
        async with Client(fixed["server"]) as client:
            found = await client.call_tool("search", {"query": "ledgers"})
            denied = await client.call_tool("delete_path", {"path": "/"})
            return found, denied

    found, denied = anyio.run(main)
    assert fixed["RAN"] == ["search"]
    assert found.content[0].text == "3 pages about ledgers"
    assert denied.is_error
    assert denied.content[0].text.startswith(DENIAL)
    assert _decisions(configured) == [("search", "allowed"), ("delete_path", "denied")]
