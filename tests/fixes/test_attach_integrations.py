"""AttachIntegrations: a framework agent or MCP server gets guardkit's integration where it is
built, and its tools no per-function decorator; frameworks without one keep the decorator.

Every case runs the whole fix (``fix_source``) and checks the fix-time invariants: a second
run changes nothing, the scan reports none of the fixed findings (GK102 or GK201, fixable or
not) except the follow-ups a case names, and the result passes ruff's import sorting, line
length and formatting checks with their defaults.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from guardkit.codemods.fixer import fix_source
from guardkit.codemods.testing import assert_codemod, dedent, findings_of
from guardkit.codemods.transforms import AttachIntegrations

RUFF = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")


@dataclass(frozen=True)
class Case:
    before: str
    after: str
    extras: tuple[str, ...] = ()
    #: the names the policy skeleton gets (what the framework calls each gated tool)
    tools: tuple[str, ...] = ()
    #: ``(rule, symbol)`` of the findings left for a human (follow-ups)
    left: tuple[tuple[str, str], ...] = ()


CASES = {
    "langchain-create-agent": Case(
        before="""
            from langchain.agents import create_agent
            from langchain.agents.middleware import SummarizationMiddleware
            from langchain_core.tools import tool


            @tool("web_search")
            def search(query: str) -> str:
                \"\"\"Search the web.\"\"\"
                return query


            def delete_repo(name: str) -> str:
                \"\"\"Delete a repository.\"\"\"
                return name


            agent = create_agent(
                "openai:gpt-4o",
                tools=[search, delete_repo],
                middleware=[
                    SummarizationMiddleware(model="openai:gpt-4o-mini"),  # keep it short
                ],
            )
            """,
        after="""
            from guardkit.plugins.langchain import GuardMiddleware
            from langchain.agents import create_agent
            from langchain.agents.middleware import SummarizationMiddleware
            from langchain_core.tools import tool


            @tool("web_search")
            def search(query: str) -> str:
                \"\"\"Search the web.\"\"\"
                return query


            def delete_repo(name: str) -> str:
                \"\"\"Delete a repository.\"\"\"
                return name


            agent = create_agent(
                "openai:gpt-4o",
                tools=[search, delete_repo],
                middleware=[
                    SummarizationMiddleware(model="openai:gpt-4o-mini"),  # keep it short
                    GuardMiddleware(),
                ],
            )
            """,
        extras=("langchain",),
        tools=("delete_repo", "web_search"),
    ),
    "langchain-run-and-long-line": Case(
        before="""
            from langchain.agents import create_agent
            from langchain_core.tools import tool


            @tool
            def delete_repo(name: str) -> str:
                \"\"\"Delete a repository.\"\"\"
                return f"deleted {name}"


            def answer(model, question: str) -> str:
                agent = create_agent(model, tools=[delete_repo], system_prompt="Repositories.")
                return agent.invoke({"messages": [{"role": "user", "content": question}]})
            """,
        after="""
            from guardkit.plugins.langchain import GuardMiddleware
            from langchain.agents import create_agent
            from langchain_core.tools import tool


            @tool
            def delete_repo(name: str) -> str:
                \"\"\"Delete a repository.\"\"\"
                return f"deleted {name}"


            def answer(model, question: str) -> str:
                agent = create_agent(
                    model,
                    tools=[delete_repo],
                    system_prompt="Repositories.",
                    middleware=[GuardMiddleware()],
                )
                return agent.invoke({"messages": [{"role": "user", "content": question}]})
            """,
        extras=("langchain",),
        tools=("delete_repo",),
    ),
    "langchain-middleware-variable": Case(
        before="""
            from langchain.agents import create_agent

            from .middleware import BASE


            def search(query: str) -> str:
                \"\"\"Search.\"\"\"
                return query


            agent = create_agent("openai:gpt-4o", tools=[search], middleware=BASE)
            """,
        after="""
            from guardkit.plugins.langchain import GuardMiddleware
            from langchain.agents import create_agent

            from .middleware import BASE


            def search(query: str) -> str:
                \"\"\"Search.\"\"\"
                return query


            agent = create_agent(
                "openai:gpt-4o", tools=[search], middleware=[*BASE, GuardMiddleware()]
            )
            """,
        extras=("langchain",),
        tools=("search",),
    ),
    "langgraph-tool-node": Case(
        before="""
            from langgraph.graph import START, MessagesState, StateGraph
            from langgraph.prebuilt import ToolNode, tools_condition


            def search(query: str) -> str:
                \"\"\"Search.\"\"\"
                return query


            def build():
                builder = StateGraph(MessagesState)
                builder.add_node("tools", ToolNode([search], handle_tool_errors=True))
                builder.add_edge(START, "tools")
                builder.add_conditional_edges("tools", tools_condition)
                return builder.compile()
            """,
        after="""
            from guardkit.plugins.langchain import guarded_tool_node
            from langgraph.graph import START, MessagesState, StateGraph
            from langgraph.prebuilt import tools_condition


            def search(query: str) -> str:
                \"\"\"Search.\"\"\"
                return query


            def build():
                builder = StateGraph(MessagesState)
                builder.add_node("tools", guarded_tool_node([search], handle_tool_errors=True))
                builder.add_edge(START, "tools")
                builder.add_conditional_edges("tools", tools_condition)
                return builder.compile()
            """,
        extras=("langchain",),
        tools=("search",),
    ),
    "langgraph-tool-node-still-imported": Case(
        before="""
            from langgraph.prebuilt import ToolNode


            def search(query: str) -> str:
                \"\"\"Search.\"\"\"
                return query


            node = ToolNode([search])
            assert isinstance(node, ToolNode)
            """,
        after="""
            from guardkit.plugins.langchain import guarded_tool_node
            from langgraph.prebuilt import ToolNode


            def search(query: str) -> str:
                \"\"\"Search.\"\"\"
                return query


            node = guarded_tool_node([search])
            assert isinstance(node, ToolNode)
            """,
        extras=("langchain",),
        tools=("search",),
    ),
    "pydantic-ai-agent": Case(
        before="""
            from pydantic_ai import Agent, RunContext

            support = Agent(
                "openai:gpt-4o",
                deps_type=str,
                system_prompt="Help the customer.",
            )


            @support.tool
            def balance(ctx: RunContext[str]) -> int:
                return 1


            def answer(question: str) -> str:
                return support.run_sync(question, deps="x").output
            """,
        after="""
            from guardkit.plugins.pydantic_ai import GuardCapability
            from pydantic_ai import Agent, RunContext

            support = Agent(
                "openai:gpt-4o",
                deps_type=str,
                system_prompt="Help the customer.",
                capabilities=[GuardCapability()],
            )


            @support.tool
            def balance(ctx: RunContext[str]) -> int:
                return 1


            def answer(question: str) -> str:
                return support.run_sync(question, deps="x").output
            """,
        extras=("pydantic-ai",),
        tools=("balance",),
    ),
    "pydantic-ai-capabilities": Case(
        before="""
            from pydantic_ai import Agent
            from pydantic_ai.capabilities import WebSearch


            def drop_table(name: str) -> str:
                return name


            agent = Agent("openai:gpt-4o", tools=[drop_table], capabilities=[WebSearch()])
            """,
        after="""
            from guardkit.plugins.pydantic_ai import GuardCapability
            from pydantic_ai import Agent
            from pydantic_ai.capabilities import WebSearch


            def drop_table(name: str) -> str:
                return name


            agent = Agent(
                "openai:gpt-4o", tools=[drop_table], capabilities=[WebSearch(), GuardCapability()]
            )
            """,
        extras=("pydantic-ai",),
        tools=("drop_table",),
    ),
    "openai-agents": Case(
        before="""
            from agents import Agent, Runner, function_tool


            @function_tool(name_override="refund_order")
            def refund(order_id: str) -> str:
                \"\"\"Refund an order.\"\"\"
                return order_id


            @function_tool
            def lookup(order_id: str) -> str:
                \"\"\"Look an order up.\"\"\"
                return order_id


            support = Agent(
                name="support",
                instructions="Help the customer.",
                tools=[
                    refund,
                    lookup,
                ],
            )


            def main(question: str) -> str:
                return Runner.run_sync(support, question).final_output
            """,
        after="""
            from agents import Agent, Runner, function_tool
            from guardkit.plugins.openai_agents import GuardHooks, guard_tools


            @function_tool(name_override="refund_order")
            def refund(order_id: str) -> str:
                \"\"\"Refund an order.\"\"\"
                return order_id


            @function_tool
            def lookup(order_id: str) -> str:
                \"\"\"Look an order up.\"\"\"
                return order_id


            support = Agent(
                name="support",
                instructions="Help the customer.",
                tools=guard_tools(
                    [
                        refund,
                        lookup,
                    ]
                ),
            )


            def main(question: str) -> str:
                return Runner.run_sync(support, question, hooks=GuardHooks()).final_output
            """,
        extras=("openai-agents",),
        tools=("lookup", "refund_order"),
    ),
    "openai-agents-hooks-taken": Case(
        before="""
            from agents import Agent, Runner, function_tool


            @function_tool
            def refund(order_id: str) -> str:
                \"\"\"Refund an order.\"\"\"
                return order_id


            async def main(question: str, hooks) -> str:
                agent = Agent(name="support", tools=[refund])
                result = await Runner.run(agent, question, hooks=hooks)
                return result.final_output
            """,
        after="""
            from agents import Agent, Runner, function_tool
            from guardkit.plugins.openai_agents import guard_tools


            @function_tool
            def refund(order_id: str) -> str:
                \"\"\"Refund an order.\"\"\"
                return order_id


            async def main(question: str, hooks) -> str:
                agent = Agent(name="support", tools=guard_tools([refund]))
                result = await Runner.run(agent, question, hooks=hooks)
                return result.final_output
            """,
        extras=("openai-agents",),
        tools=("refund",),
        left=(("GK102", "Runner.run"),),
    ),
    "mcp-server": Case(
        before="""
            from mcp.server.mcpserver import MCPServer

            server = MCPServer("notes")


            @server.tool()
            def delete_note(path: str) -> str:
                return path
            """,
        after="""
            from guardkit.plugins.mcp import guard_server
            from mcp.server.mcpserver import MCPServer

            server = MCPServer("notes")
            guard_server(server)


            @server.tool()
            def delete_note(path: str) -> str:
                return path
            """,
        extras=("mcp",),
        tools=("delete_note",),
    ),
    "mcp-server-in-a-function": Case(
        before="""
            from mcp.server import MCPServer


            def make_server() -> MCPServer:
                server = MCPServer("files")

                @server.tool(name="rm")
                def delete_file(path: str) -> str:
                    return path

                return server
            """,
        after="""
            from guardkit.plugins.mcp import guard_server
            from mcp.server import MCPServer


            def make_server() -> MCPServer:
                server = MCPServer("files")
                guard_server(server)

                @server.tool(name="rm")
                def delete_file(path: str) -> str:
                    return path

                return server
            """,
        extras=("mcp",),
        tools=("rm",),
    ),
    # no integration: mcp 1.x FastMCP has no server middleware, so its tools keep the decorator
    "mcp-1x-fastmcp-keeps-the-decorator": Case(
        before="""
            from mcp.server.fastmcp import FastMCP

            mcp = FastMCP("notes")


            @mcp.tool()
            def delete_note(path: str) -> str:
                return path
            """,
        after="""
            import guardkit
            from mcp.server.fastmcp import FastMCP

            mcp = FastMCP("notes")


            @mcp.tool()
            @guardkit.tool()
            def delete_note(path: str) -> str:
                return path
            """,
        tools=("delete_note",),
    ),
    # smolagents validates a tool's source: the agent is guarded in place, the tool untouched
    "smolagents-code-agent": Case(
        before="""
            from smolagents import CodeAgent, InferenceClientModel, tool


            @tool
            def delete_repo(name: str) -> str:
                \"\"\"Delete a repository.

                Args:
                    name: the repository.
                \"\"\"
                return name


            agent = CodeAgent(tools=[delete_repo], model=InferenceClientModel())
            agent.run("clean up")
            """,
        after="""
            from guardkit.plugins.smolagents import guard
            from smolagents import CodeAgent, InferenceClientModel, tool


            @tool
            def delete_repo(name: str) -> str:
                \"\"\"Delete a repository.

                Args:
                    name: the repository.
                \"\"\"
                return name


            agent = CodeAgent(tools=[delete_repo], model=InferenceClientModel())
            guard(agent)
            agent.run("clean up")
            """,
        extras=("smolagents",),
        tools=("delete_repo",),
    ),
    "llama-index-function-agent": Case(
        before="""
            from llama_index.core.agent.workflow import FunctionAgent


            def delete_repo(name: str) -> str:
                \"\"\"Delete a repository.\"\"\"
                return name


            def build(llm):
                agent = FunctionAgent(tools=[delete_repo], llm=llm)
                return agent
            """,
        after="""
            from guardkit.plugins.llama_index import guard
            from llama_index.core.agent.workflow import FunctionAgent


            def delete_repo(name: str) -> str:
                \"\"\"Delete a repository.\"\"\"
                return name


            def build(llm):
                agent = FunctionAgent(tools=[delete_repo], llm=llm)
                guard(agent)
                return agent
            """,
        extras=("llama-index",),
        tools=("delete_repo",),
    ),
    # an ADK agent is guarded through the runner that runs it (GuardPlugin first in its plugins)
    "google-adk-runner": Case(
        before="""
            from google.adk.agents import Agent
            from google.adk.runners import InMemoryRunner


            def delete_repo(name: str) -> str:
                \"\"\"Delete a repository.\"\"\"
                return name


            root_agent = Agent(name="ops", model="gemini-2.0-flash", tools=[delete_repo])
            runner = InMemoryRunner(agent=root_agent)
            """,
        after="""
            from google.adk.agents import Agent
            from google.adk.runners import InMemoryRunner
            from guardkit.plugins.google_adk import guard


            def delete_repo(name: str) -> str:
                \"\"\"Delete a repository.\"\"\"
                return name


            root_agent = Agent(name="ops", model="gemini-2.0-flash", tools=[delete_repo])
            runner = InMemoryRunner(agent=root_agent)
            guard(runner)
            """,
        extras=("google-adk",),
        tools=("delete_repo",),
    ),
    # a CrewAI agent is guarded through the crew it is in (the hooks and its LLM)
    "crewai-crew": Case(
        before="""
            from crewai import Agent, Crew, Task
            from crewai.tools import tool


            @tool("delete_repo")
            def delete_repo(name: str) -> str:
                \"\"\"Delete a repository.\"\"\"
                return name


            ops = Agent(role="ops", goal="tidy up", backstory="an ops bot", tools=[delete_repo])
            task = Task(description="Clean up", expected_output="a sentence", agent=ops)
            crew = Crew(agents=[ops], tasks=[task])
            crew.kickoff()
            """,
        after="""
            from crewai import Agent, Crew, Task
            from crewai.tools import tool
            from guardkit.plugins.crewai import guard


            @tool("delete_repo")
            def delete_repo(name: str) -> str:
                \"\"\"Delete a repository.\"\"\"
                return name


            ops = Agent(role="ops", goal="tidy up", backstory="an ops bot", tools=[delete_repo])
            task = Task(description="Clean up", expected_output="a sentence", agent=ops)
            crew = Crew(agents=[ops], tasks=[task])
            guard(crew)
            crew.kickoff()
            """,
        extras=("crewai",),
        tools=("delete_repo",),
    ),
    # ``**options`` may already hold middleware; create_react_agent has no integration
    "no-safe-site-keeps-the-decorator": Case(
        before="""
            from langchain.agents import create_agent
            from langchain_core.tools import tool
            from langgraph.prebuilt import create_react_agent


            @tool
            def search(query: str) -> str:
                \"\"\"Search.\"\"\"
                return query


            def build(model, **options):
                return create_agent(model, tools=[search], **options)


            def legacy(model):
                return create_react_agent(model, [search]).invoke({"messages": []})
            """,
        after="""
            import guardkit
            from langchain.agents import create_agent
            from langchain_core.tools import tool
            from langgraph.prebuilt import create_react_agent


            @tool
            @guardkit.tool()
            def search(query: str) -> str:
                \"\"\"Search.\"\"\"
                return query


            def build(model, **options):
                return create_agent(model, tools=[search], **options)


            def legacy(model):
                return create_react_agent(model, [search]).invoke({"messages": []})
            """,
        tools=("search",),
        left=(("GK102", "create_react_agent(model, [search]).invoke"),),
    ),
}


def _host_checks_pass(code: str, tmp_path: Path) -> None:
    target = tmp_path / "fixed.py"
    target.write_text(code)
    for command in (
        [RUFF, "check", "--isolated", "--select", "I,E501", str(target)],
        [RUFF, "format", "--isolated", "--check", "--diff", str(target)],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_fix_attaches_the_integration(case: Case, tmp_path: Path) -> None:
    result = fix_source(dedent(case.before), "snippet.py")
    assert result.error is None
    assert result.after == dedent(case.after), f"--- got\n{result.after}"
    assert result.extras == case.extras
    assert result.tools == case.tools
    assert fix_source(result.after, "snippet.py").after == result.after  # a second run
    left = {(f.rule, f.symbol) for f in findings_of(result.after) if f.rule in ("GK102", "GK201")}
    assert left == set(case.left)
    assert {(f.rule, f.symbol) for f in result.followups} == set(case.left)
    _host_checks_pass(result.after, tmp_path)


def test_an_agent_already_guarded_is_left_alone() -> None:
    code = dedent(
        """
        import guardkit
        from langchain.agents import create_agent
        from langchain_core.tools import tool


        @tool
        @guardkit.tool()
        def search(query: str) -> str:
            \"\"\"Search.\"\"\"
            return query


        def build(model):
            return create_agent(model, tools=[search])
        """
    )
    assert not fix_source(code, "snippet.py").changed


def test_the_codemod_alone_schedules_its_imports() -> None:
    """Without ``fix``'s import placement, libcst adds the import after the host's."""
    assert_codemod(
        AttachIntegrations,
        """
        from mcp.server.mcpserver import MCPServer

        server = MCPServer("notes")


        @server.tool()
        def delete_note(path: str) -> str:
            return path
        """,
        """
        from mcp.server.mcpserver import MCPServer
        from guardkit.plugins.mcp import guard_server

        server = MCPServer("notes")
        guard_server(server)


        @server.tool()
        def delete_note(path: str) -> str:
            return path
        """,
    )
