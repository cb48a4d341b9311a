"""The runtime recorder around real framework runs: no false violations, bypasses caught.

The recorder is driven directly (no inner pytest run): tools are described from their code
objects as discovery would, with tool names a model uses that are known only at run time, so
only ``guardkit.current_action_id()`` or a live guardkit caller can vouch for a run.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from guardkit.plugins.pytest_plugin.guard_coverage import ToolEntry
from guardkit.plugins.pytest_plugin.guard_recorder import Recorder

import guardkit

HERE = Path(__file__).parent
#: How the model calls the tools below: names the static pass cannot read.
PREFIX = "tool_"
POLICY = {
    "budget": 100,
    "tools": {"llm_turn": {"cost": 0}, **{PREFIX + n: {"cost": 1} for n in ("read", "touch")}},
}


def read(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def wipe(path: str) -> str:
    """Wipe a disk (not in the policy: never allowed)."""
    raise AssertionError("never runs")


@guardkit.tool(PREFIX + "touch")
async def touch(path: str) -> str:
    """Touch a file."""
    await asyncio.sleep(0)
    return f"touched {path}"


def lines(count: int) -> Iterator[int]:
    yield from range(count)


def entry(func: Callable[..., Any], *aliases: str) -> ToolEntry:
    code = inspect.unwrap(func).__code__
    return ToolEntry(
        name=code.co_name,
        path=Path(code.co_filename).name,
        line=code.co_firstlineno,
        how="decorator",
        guarded=False,
        first_line=code.co_firstlineno,
        aliases=aliases,
    )


@pytest.fixture(params=["memory", "sqlite"])
def agent(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    where = ":memory:" if request.param == "memory" else str(tmp_path / "guard.db")
    with guardkit.Guard(where) as guard:
        guard.create_agent("bot", POLICY)
        with guardkit.use_agent(guard.agent("bot")):
            yield guard.agent("bot")


@pytest.fixture
def recorder() -> Recorder:
    made = Recorder([entry(read), entry(wipe), entry(touch), entry(lines)], HERE)
    made.start_test("t")
    return made


def ran_unguarded(recorder: Recorder) -> list[str]:
    return [v.tool for v in recorder.violations]


def test_mcp_server_middleware(agent, recorder):
    pytest.importorskip("mcp.server.mcpserver")
    from guardkit.plugins.mcp import guard_server
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("files")
    for func in (read, wipe, touch):
        server.add_tool(func, name=PREFIX + func.__name__)
    guard_server(server, agent)

    async def calls() -> list[Any]:
        async with Client(server) as client:
            return [
                await client.call_tool(PREFIX + name, {"path": "p"})
                for name in ("read", "wipe", "touch")
            ]

    with recorder.installed():
        results = asyncio.run(calls())
        read("bypass")
    assert [r.is_error for r in results] == [False, True, False]
    assert ran_unguarded(recorder) == ["read"]
    assert recorder.counts.runs == {entry(read).key: 2, entry(touch).key: 1}
    assert recorder.counts.denials == {PREFIX + "wipe": 1}


def test_mcp_proxy_matches_by_the_tool_name(agent, recorder):
    pytest.importorskip("mcp.server.mcpserver")
    from guardkit.plugins.mcp import GuardProxy
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("files")
    server.add_tool(read, name=PREFIX + "read")
    recorder = Recorder([entry(read, PREFIX + "read")], HERE)  # the alias a literal name gives

    async def calls() -> str:
        async with GuardProxy(agent, server) as proxy, Client(proxy.server) as client:
            return (await client.call_tool(PREFIX + "read", {"path": "n"})).content[0].text

    with recorder.installed():
        assert asyncio.run(calls()) == "contents of n"
    assert ran_unguarded(recorder) == []


def test_pydantic_ai_capability(agent, recorder):
    pytest.importorskip("pydantic_ai")
    from guardkit.plugins.pydantic_ai import GuardCapability
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    bot = Agent(TestModel(), capabilities=[GuardCapability(agent)])
    bot.tool_plain(name=PREFIX + "read")(read)
    bot.tool_plain(name=PREFIX + "wipe")(wipe)
    with recorder.installed():  # (run_sync leaves its event loop open)
        out = asyncio.run(bot.run("go"))
    assert "contents of a" in out.output
    assert "Denied by the policy guard" in out.output
    assert ran_unguarded(recorder) == []


def test_openai_agents_guard_tools(agent, recorder):
    agents = pytest.importorskip("agents")
    from agents.testing import ScriptedModel, assistant_message, function_call
    from guardkit.plugins.openai_agents import GuardHooks, guard_tools

    model = ScriptedModel(
        [
            [
                function_call(PREFIX + "read", {"path": "x"}, call_id="c1"),
                function_call(PREFIX + "wipe", {"path": "/"}, call_id="c2"),
            ],
            [assistant_message("done")],
        ]
    )
    tools = [agents.function_tool(f, name_override=PREFIX + f.__name__) for f in (read, wipe)]
    ops = guard_tools(agents.Agent(name="ops", model=model, tools=tools), agent)
    run = agents.Runner.run(
        ops, "go", hooks=GuardHooks(agent), run_config=agents.RunConfig(tracing_disabled=True)
    )
    with recorder.installed():
        result = asyncio.run(run)
    assert result.final_output == "done"
    assert ran_unguarded(recorder) == []
    assert recorder.counts.runs == {entry(read).key: 1}


@guardkit.tool(PREFIX + "read")
def outer(path: str) -> str:
    return read(path)  # the guard was asked for outer's call, not for read


def test_a_tool_called_inside_a_guarded_tool_is_its_own_run(agent):
    recorder = Recorder([entry(outer), entry(read)], HERE)
    with recorder.installed():
        outer("p")
    assert ran_unguarded(recorder) == ["read"]


def test_generators_count_when_they_start_not_when_they_resume(recorder):
    with recorder.installed():
        assert list(lines(3)) == [0, 1, 2]
        assert list(lines(2)) == [0, 1]
    assert recorder.counts.runs == {entry(lines).key: 2}
    assert ran_unguarded(recorder) == ["lines", "lines"]


def test_the_hook_is_put_back(recorder):
    def other(frame: Any, event: str, arg: Any) -> None:
        return None

    import sys
    import threading

    sys.setprofile(other)
    threading.setprofile(other)
    try:
        with recorder.installed():
            assert sys.getprofile() is not other
        assert sys.getprofile() is other
        assert threading.getprofile() is other
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
