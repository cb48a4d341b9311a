"""``guardkit.call_tool`` over a real guard server through ``AgentClient`` (loopback only)."""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

import guardkit
from guardkit.client import AdminClient, AgentClient
from guardkit.server import ServerState, create_app
from guardkit.server.runner import serve_in_thread
from guardkit.store import open_store

TOOLS = {"add": {"cost": 2}, "slow_add": {"cost": 1}}
POLICY: dict[str, Any] = {"budget": 100, "scar_limit": 50, "tools": TOOLS}
DENIED = "Denied by the policy guard: tool 'rm' is not allowed. Nothing was done."


def add(a: int, b: int) -> int:
    return a + b


async def slow_add(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a + b


ADMIN = "calltool-admin-" + "a" * 32
BACKEND = "calltool-backend-" + "b" * 32


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("call-tool-http") / "guard.db"
    state = ServerState.open(
        open_store(f"sqlite:///{path}"), admin_token=ADMIN, backend_token=BACKEND
    )
    with serve_in_thread(create_app(state)) as base:
        yield base


@pytest.fixture
def remote(url: str) -> Iterator[tuple[AgentClient, Callable[[], list[dict[str, Any]]]]]:
    agent_id = "ct-" + uuid.uuid4().hex[:10]
    with AdminClient(url, ADMIN) as admin:
        token = admin.create_agent(agent_id, POLICY)["token"]
        with AgentClient(url, agent_id, token) as client:

            def log() -> list[dict[str, Any]]:
                return list(admin.log(agent_id)["records"])

            yield client, log


def test_over_http_allowed_denied_and_guarded(remote):
    client, log = remote
    assert guardkit.call_tool("add", json.dumps({"a": 1, "b": 2}), add, guard=client) == 3
    assert guardkit.call_tool("rm", {}, add, guard=client).startswith(DENIED)
    assert guardkit.call_tool("add", {"a": 2, "b": 2}, guardkit.tool()(add), guard=client) == 4

    async def main() -> Any:
        try:
            return await guardkit.acall_tool("slow_add", {"a": 5, "b": 5}, slow_add, guard=client)
        finally:
            await client.aclose()

    ran = asyncio.run(main())
    assert ran == 10
    records = log()
    assert [r["payload"]["tool"] for r in records if r["kind"] == "action_requested"] == [
        "add",
        "rm",
        "add",
        "slow_add",
    ]
    assert [r["payload"]["status"] for r in records if r["kind"] == "outcome"] == ["success"] * 3


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_guard_that_cannot_be_reached_stops_the_call_and_is_never_a_result():
    ran: list[int] = []
    with AgentClient(_closed_port(), "bot", "t" * 40, timeout=1.0) as client:
        with pytest.raises(guardkit.GuardFailed):
            guardkit.call_tool("add", {}, lambda: ran.append(1), guard=client)

        async def main() -> Any:
            try:
                return await guardkit.acall_tool("add", {}, lambda: ran.append(1), guard=client)
            finally:
                await client.aclose()

        with pytest.raises(guardkit.GuardFailed):
            asyncio.run(main())
        with pytest.raises(guardkit.GuardFailed):
            guardkit.call_tool("add", {}, guardkit.tool()(lambda: ran.append(1)), guard=client)
    assert ran == []
