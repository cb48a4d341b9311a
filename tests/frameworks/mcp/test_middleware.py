"""``guard_server`` and ``GuardMiddleware`` in servers we own, through the SDK's own client."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from guardkit.plugins.mcp import CallPolicy, GuardMiddleware, guard_server
from guardkit.plugins.mcp.calls import DEFAULT_CALLS
from mcp import Client, types
from mcp.server import Server, ServerRequestContext
from mcp.server.mcpserver import MCPServer

import guardkit
from guardkit import Guard, PathRule
from guardkit.client import AdminClient, AgentClient

from .conftest import ADMIN

POLICY: dict[str, Any] = {
    "budget": 100,
    "scar_limit": 100,
    "tools": {
        "read": {"cost": 1},
        "wipe": {"cost": 1, "requires_approval": True},
        "fail": {"cost": 0},
        "guarded_read": {"cost": 2},
        "guarded_open": {"cost": 0},
    },
}
DENIED = "Denied by the policy guard"


@pytest.fixture(params=["local", "http"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """``(agent, operator)``: a ``LocalAgent`` and its ``Guard``, or an ``AgentClient`` and an
    ``AdminClient`` against ``guardkit serve``."""
    agent_id = "mw-" + uuid.uuid4().hex[:8]
    if request.param == "local":
        with Guard(str(tmp_path / "guard.db")) as guard:
            guard.create_agent(agent_id, POLICY)
            yield guard.agent(agent_id), guard
        return
    url, _db = request.getfixturevalue("guard_server")
    with AdminClient(url, ADMIN) as admin:
        token = admin.create_agent(agent_id, POLICY)["token"]
        with AgentClient(url, agent_id, token) as agent:
            yield agent, admin


def files_server(ran: list[str], root: Path) -> MCPServer:
    server = MCPServer("files")

    @server.tool()
    def read(path: str) -> str:
        ran.append(f"read {path}")
        return f"contents of {path}"

    @server.tool()
    async def wipe(path: str) -> str:
        ran.append(f"wipe {path}")
        return f"wiped {path}"

    @server.tool()
    def fail(path: str) -> str:
        ran.append(f"fail {path}")
        raise OSError(f"no such disk: {path}")

    @server.tool()
    def secret() -> str:
        ran.append("secret")
        return "the secret"

    @server.tool()
    @guardkit.tool(cost=2)
    def guarded_read(path: str) -> str:
        ran.append(f"guarded_read {path}")
        return f"guarded {path}"

    @server.tool()
    @guardkit.tool(paths={"path": PathRule(allow=[str(root)])})
    def guarded_open(path: str) -> str:
        ran.append(f"guarded_open {path}")
        return "opened"

    return server


def served(
    pair: tuple[Any, Any], tmp_path: Path, calls: CallPolicy = DEFAULT_CALLS
) -> tuple[Any, Any, MCPServer, list[str]]:
    """``(agent, operator, server, ran)``: the files server, guarded for the pair's agent."""
    agent, operator = pair
    ran: list[str] = []
    server = files_server(ran, tmp_path)
    guard_server(server, agent, calls=calls)
    return agent, operator, server, ran


def call(
    server: Any, *calls: tuple[str, dict[str, Any]], mode: str = "auto", agent: Any = None
) -> list[Any]:
    async def scenario() -> list[Any]:
        try:
            async with Client(server, mode=mode) as client:
                return [await client.call_tool(name, args) for name, args in calls]
        finally:
            if isinstance(agent, AgentClient):
                await agent.aclose()  # its async pool belongs to this event loop

    return anyio.run(scenario)


def text(result: types.CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, types.TextContent))


def kinds(operator: Any, agent: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(r["kind"], r["payload"]) for r in operator.log(agent.agent_id)["records"]]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_allowed_call_runs_once_and_is_reported(pair, tmp_path, mode):
    agent, operator, server, ran = served(pair, tmp_path)
    (result,) = call(server, ("read", {"path": "a.txt"}), mode=mode, agent=agent)
    assert text(result) == "contents of a.txt"
    assert ran == ["read a.txt"]
    log = kinds(operator, agent)
    assert ("action_requested", {"action_id": "act-1", "cost": 1, "input": {"path": "a.txt"},
                                 "tool": "read"}) in log  # fmt: skip
    assert ("outcome", {"action_id": "act-1", "detail": "", "status": "success"}) in log


def test_denied_call_never_runs_and_the_client_reads_the_refusal(pair, tmp_path):
    agent, _operator, server, ran = served(pair, tmp_path)
    (result,) = call(server, ("secret", {}), agent=agent)
    assert result.is_error
    assert text(result).startswith(DENIED)
    assert result.structured_content["code"] == "tool_not_allowed"
    assert ran == []


def test_a_tool_error_is_a_failure_outcome(pair, tmp_path):
    agent, operator, server, _ran = served(pair, tmp_path)
    (result,) = call(server, ("fail", {"path": "/dev/x"}), agent=agent)
    assert result.is_error
    (outcome,) = [p for k, p in kinds(operator, agent) if k == "outcome"]
    assert outcome["status"] == "failure"


def test_pending_call_waits_for_an_approval_from_another_thread(pair, tmp_path):
    agent, operator, server, ran = served(
        pair, tmp_path, calls=CallPolicy(approval_timeout=30, poll=0.05)
    )

    def approve() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not operator.pending(agent.agent_id):
            time.sleep(0.02)
        operator.approve(agent.agent_id, "act-1", "alice")

    approver = threading.Thread(target=approve)
    approver.start()
    (result,) = call(server, ("wipe", {"path": "/srv"}), agent=agent)
    approver.join()
    assert text(result) == "wiped /srv"
    assert ran == ["wipe /srv"]


def test_an_approval_that_never_comes_is_refused_and_nothing_runs(pair, tmp_path):
    agent, _operator, server, ran = served(
        pair, tmp_path, calls=CallPolicy(approval_timeout=0.2, poll=0.05)
    )
    (result,) = call(server, ("wipe", {"path": "/srv"}), agent=agent)
    assert result.is_error
    assert result.structured_content["code"] == "approval_timeout"
    assert ran == []


def test_a_guarded_tool_is_handed_the_call_one_action_one_charge(pair, tmp_path):
    agent, operator, server, _ran = served(pair, tmp_path)
    (result,) = call(server, ("guarded_read", {"path": "a"}), agent=agent)
    assert text(result) == "guarded a"
    requested = [p for k, p in kinds(operator, agent) if k == "action_requested"]
    assert [(r["tool"], r["cost"]) for r in requested] == [("guarded_read", 2)]
    assert operator.status(agent.agent_id)["spent"] == 2


def test_a_guarded_tools_own_refusal_reaches_the_client_as_the_refusal(pair, tmp_path):
    agent, _operator, server, ran = served(pair, tmp_path)
    (result,) = call(server, ("guarded_open", {"path": "/etc/shadow"}), agent=agent)
    assert result.is_error
    assert text(result).startswith(DENIED)
    assert result.structured_content["code"] == "path_denied"
    assert ran == []


def test_terminated_agent_is_refused(pair, tmp_path):
    agent, operator, server, ran = served(pair, tmp_path)
    operator.terminate(agent.agent_id, "runaway", "bob")
    (result,) = call(server, ("read", {"path": "a"}), agent=agent)
    assert result.structured_content["terminated"] is True
    assert ran == []


def test_middleware_on_a_low_level_server_and_the_current_agent(tmp_path):
    ran: list[str] = []

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        ran.append(params.name)
        return types.CallToolResult(content=[types.TextContent(type="text", text="done")])

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        schema = {"type": "object"}
        return types.ListToolsResult(
            tools=[types.Tool(name=n, input_schema=schema) for n in ("read", "secret")]
        )

    server: Server[Any] = Server("low", on_call_tool=call_tool, on_list_tools=list_tools)
    server.middleware.append(GuardMiddleware())  # no agent: guardkit.current_agent() per call
    with Guard(":memory:") as guard:
        guard.create_agent("low", POLICY)
        with guardkit.use_agent(guard.agent("low")):
            read, secret = call(server, ("read", {"path": "x"}), ("secret", {}))
    assert text(read) == "done"
    assert secret.is_error
    assert text(secret).startswith(DENIED)
    assert ran == ["read"]


def test_no_agent_configured_fails_closed_as_the_calls_answer(tmp_path, monkeypatch):
    monkeypatch.delenv("GUARDKIT_AGENT", raising=False)
    ran: list[str] = []
    server = files_server(ran, tmp_path)
    guard_server(server)
    read, again = call(server, ("read", {"path": "a"}), ("read", {"path": "b"}))
    assert read.is_error
    assert "no agent" in text(read).lower() or "GUARDKIT_AGENT" in text(read)
    assert "Nothing was done" in text(again)
    assert ran == []
