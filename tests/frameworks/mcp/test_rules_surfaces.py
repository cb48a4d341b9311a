"""One policy with rules, every way in: the same decisions and the same ledger records.

``Guard`` embedded, ``AgentClient`` against ``guardkit serve``, MCP servers guarded with
``guard_server`` (the MCP integration) for both, and ``guardkit mcp proxy`` as its own process.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
from guardkit.plugins.mcp import guard_server
from mcp import Client
from mcp.server.mcpserver import MCPServer

from guardkit import Guard
from guardkit.client import AdminClient, AgentClient

from .conftest import ADMIN

POLICY: dict[str, Any] = {
    "budget": 1000,
    "scar_limit": 100,
    "tools": {
        "pay": {
            "cost": 1,
            "input_schema": {
                "type": "object",
                "properties": {"iban": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["iban", "amount"],
            },
            "rules": [
                {
                    "when": {"properties": {"iban": {"not": {"enum": ["DE89"]}}}},
                    "effect": "deny",
                    "reason": "unknown IBAN",
                },
                {"when": {"properties": {"amount": {"maximum": 100}}}, "effect": "allow"},
            ],
        },
        "run_shell": {
            "cost": 0,
            "rules": [
                {
                    "when": {
                        "properties": {"command": {"x-shell": {"prefixItems": [{"const": "ls"}]}}}
                    },
                    "effect": "allow",
                },
                {"when": {}, "effect": "deny", "reason": "only ls"},
            ],
        },
    },
}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("pay", {"iban": "DE89", "amount": 5}),
    ("pay", {"iban": "GB00", "amount": 5}),
    ("pay", {"iban": "DE89", "amount": "five"}),
    ("run_shell", {"command": "ls -la"}),
    ("run_shell", {"command": "ls; rm -rf /"}),
    ("run_shell", {"command": "rm -rf /"}),
]


def _tools_server() -> MCPServer:
    server = MCPServer("payments")

    @server.tool()
    def pay(iban: str, amount: Any) -> str:
        return f"paid {amount} to {iban}"

    @server.tool()
    def run_shell(command: str) -> str:
        return f"ran {command}"

    return server


def _direct(agent: Any) -> list[str]:
    out = []
    for tool, args in CALLS:
        decision = agent.request(tool, args)
        if decision["decision"] == "allowed":
            agent.report(decision["action_id"], "success")
        out.append(decision["decision"])
    return out


def _over_mcp(agent: Any) -> list[str]:
    server = _tools_server()
    guard_server(server, agent)

    async def scenario() -> list[str]:
        try:
            async with Client(server) as client:
                results = [await client.call_tool(name, args) for name, args in CALLS]
        finally:
            if isinstance(agent, AgentClient):
                await agent.aclose()
        return ["denied" if r.is_error else "allowed" for r in results]

    return anyio.run(scenario)


def _records(operator: Any, agent_id: str) -> list[tuple[str, Any]]:
    records = operator.log(agent_id)["records"][2:]  # after genesis and policy
    return [(r["kind"], r["payload"]) for r in records]


def _run(surface: str, tmp_path: Path, server_url: str) -> tuple[list[str], list[tuple[str, Any]]]:
    agent_id = "r-" + uuid.uuid4().hex[:8]
    run = _over_mcp if surface.endswith("mcp") else _direct
    if surface.startswith("local"):
        with Guard(str(tmp_path / f"{surface}.db")) as guard:
            guard.create_agent(agent_id, POLICY)
            decisions = run(guard.agent(agent_id))
            assert guard.verify(agent_id)["ok"] is True
            return decisions, _records(guard, agent_id)
    with AdminClient(server_url, ADMIN) as admin:
        token = admin.create_agent(agent_id, POLICY)["token"]
        with AgentClient(server_url, agent_id, token) as agent:
            decisions = run(agent)
        assert admin.verify(agent_id)["ok"] is True
        return decisions, _records(admin, agent_id)


def test_every_way_in_decides_and_records_alike(tmp_path: Path, guard_server: Any) -> None:
    url, _db = guard_server
    runs = {s: _run(s, tmp_path, url) for s in ("local", "http", "local-mcp", "http-mcp")}
    expected = ["allowed", "denied", "denied", "allowed", "denied", "denied"]
    for surface, (decisions, _) in runs.items():
        assert decisions == expected, surface
    reference = runs["local"][1]
    codes = [p["reason"]["code"] for k, p in reference if k == "action_denied"]
    assert codes == ["rule_denied", "invalid_input", "rule_denied", "rule_denied"]
    for surface, (_, records) in runs.items():
        # The MCP integration reports its own outcome detail; every other field is identical.
        same = [(k, {**p, "detail": ""} if k == "outcome" else p) for k, p in records]
        assert same == [(k, {**p, "detail": ""} if k == "outcome" else p) for k, p in reference], (
            surface
        )


def test_the_mcp_proxy_decides_by_the_same_rules(tmp_path: Path) -> None:
    """``guardkit mcp proxy`` (a process of its own) in front of a real upstream server."""
    from mcp import types

    from .conftest import local_stack

    rule = {
        "when": {"properties": {"text": {"pattern": "^rm "}}},
        "effect": "deny",
        "reason": "no rm, even as an echo",
    }
    policy = {"budget": 100, "scar_limit": 100, "tools": {"echo": {"cost": 1, "rules": [rule]}}}
    stack = local_stack(tmp_path, policy)
    texts = [f"hello {uuid.uuid4().hex[:6]}", f"rm -rf /{uuid.uuid4().hex[:6]}"]

    async def scenario() -> list[types.CallToolResult]:
        async with stack.client() as client:
            return [await client.call_tool("echo", {"text": t}) for t in texts]

    allowed, denied = anyio.run(scenario)
    assert not allowed.is_error
    assert denied.is_error
    assert denied.structured_content is not None
    assert denied.structured_content["code"] == "rule_denied"
    assert stack.ran("echo") == [f"echo {texts[0]}"]
    [recorded] = stack.records("action_denied")
    assert recorded["reason"] == {
        "code": "rule_denied",
        "tool": "echo",
        "rule": 0,
        "message": "no rm, even as an echo",
    }
    with Guard(":memory:") as guard:  # the embedded guard decides the same inputs alike
        guard.create_agent("same", policy)
        direct = [guard.agent("same").request("echo", {"text": t})["decision"] for t in texts]
    assert direct == ["allowed", "denied"]


def test_a_framework_integration_decides_and_records_alike(tmp_path: Path) -> None:
    """pydantic-ai's GuardedToolset, the model calling each tool in turn: the same decisions and
    the same ledger records as ``Guard`` asked directly."""
    from guardkit.plugins.pydantic_ai import GuardedToolset
    from pydantic_ai import Agent
    from pydantic_ai.toolsets import FunctionToolset

    from tests.frameworks._pydantic_ai_support import Script

    toolset: FunctionToolset[Any] = FunctionToolset()

    @toolset.tool_plain
    def pay(iban: Any, amount: Any) -> str:  # Any: the guard, not pydantic, judges the input
        return f"paid {amount} to {iban}"

    @toolset.tool_plain
    def run_shell(command: Any) -> str:
        return f"ran {command}"

    runs = {}
    for surface in ("local", "pydantic-ai"):
        agent_id = "r-" + uuid.uuid4().hex[:8]
        with Guard(str(tmp_path / f"{surface}.db")) as guard:
            guard.create_agent(agent_id, POLICY)
            if surface == "local":
                _direct(guard.agent(agent_id))
            else:
                script = Script([*[[call] for call in CALLS], "done"])
                guarded = GuardedToolset(toolset, guard.agent(agent_id))
                anyio.run(Agent(script.model, toolsets=[guarded]).run, "go")
            runs[surface] = _records(guard, agent_id)
    local, framework = runs["local"], runs["pydantic-ai"]
    assert [k for k, _ in framework] == [k for k, _ in local]
    same = [(k, {**p, "detail": ""} if k == "outcome" else p) for k, p in framework]
    assert same == [(k, {**p, "detail": ""} if k == "outcome" else p) for k, p in local]
