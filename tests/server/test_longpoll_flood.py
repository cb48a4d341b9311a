"""A flood of long-polls: beyond the caps it gets 429 with Retry-After, ordinary requests still
complete, and every wait the server admitted still wakes on the decision (issue 14).

No timed assertions: what is checked is who was refused, who got through and who was woken.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from guardkit.client import AdminClient, AgentClient
from guardkit.errors import TooManyWaits
from guardkit.server import ServerLimits, ServerState, create_app
from guardkit.server.runner import serve_in_thread
from guardkit.store import open_store
from tests.server.conftest import ADMIN, BACKEND, POLICY

LIMITS = ServerLimits(max_waits=24, max_waits_per_token=6, wait_workers=2)
AGENTS = 6
PER_AGENT = 10  # 60 waits asked for: 6 per agent admitted at most, 24 in all


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ServerState]]:
    path: Path = tmp_path_factory.mktemp("flood") / "guard.db"
    state = ServerState.open(
        open_store(f"sqlite:///{path}"), admin_token=ADMIN, backend_token=BACKEND, limits=LIMITS
    )
    with serve_in_thread(create_app(state)) as base:
        yield base, state


@pytest.fixture
def url(served: tuple[str, ServerState]) -> str:
    return served[0]


def _agents(url: str, *names: str) -> list[tuple[str, str]]:
    with AdminClient(url, ADMIN) as admin:
        return [(name, admin.create_agent(name, POLICY)["token"]) for name in names]


async def _flood(url: str, agents: list[tuple[str, str]]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
        calls = [
            http.get(
                f"/v1/agents/{agent_id}/actions/act-1",
                params={"wait": 60},
                headers={"Authorization": f"Bearer {token}"},
            )
            for agent_id, token in agents
            for _ in range(PER_AGENT)
        ]
        return await asyncio.gather(*calls)


def test_a_flood_of_long_polls(served: tuple[str, ServerState]) -> None:
    url, state = served
    agents = _agents(url, *(f"flood-{n}" for n in range(AGENTS)))
    ((ordinary_id, ordinary_token),) = _agents(url, "ordinary")
    for agent_id, token in agents:
        with AgentClient(url, agent_id, token) as client:
            assert client.request("pay", {"n": 1})["decision"] == "pending_approval"
    answers: list[httpx.Response] = []
    flood = threading.Thread(target=lambda: answers.extend(asyncio.run(_flood(url, agents))))
    flood.start()
    try:
        while state.waits._count < LIMITS.max_waits and flood.is_alive():
            threading.Event().wait(0.01)  # the server holds all the waits it allows
        # While they are held, ordinary requests go through.
        outcomes = []
        with AgentClient(url, ordinary_id, ordinary_token) as client:
            for n in range(30):
                decision = client.request("read", {"n": n})
                outcomes.append(decision["decision"])
                client.report(decision["action_id"], "success")
        assert outcomes == ["allowed"] * 30
    finally:
        with AdminClient(url, ADMIN) as admin:
            for agent_id, _ in agents:
                admin.approve(agent_id, "act-1", "alice")
        flood.join(timeout=120)
    assert not flood.is_alive()

    refused = [r for r in answers if r.status_code == 429]
    admitted = [r for r in answers if r.status_code == 200]
    assert len(answers) == AGENTS * PER_AGENT
    assert len(admitted) + len(refused) == len(answers)
    assert len(refused) >= AGENTS * PER_AGENT - LIMITS.max_waits
    assert 0 < len(admitted) <= LIMITS.max_waits
    for response in refused:
        assert response.json()["code"] == "too_many_waits"
        assert int(response.headers["retry-after"]) >= 1
    # Every admitted wait was held until the decision, and woke with it.
    assert {r.json()["status"] for r in admitted} == {"allowed"}
    per_agent: dict[str, int] = {}
    for response in admitted:
        agent_id = response.url.path.split("/")[3]
        per_agent[agent_id] = per_agent.get(agent_id, 0) + 1
    assert max(per_agent.values()) <= LIMITS.max_waits_per_token


class _Counting(AgentClient):
    """An AgentClient that counts the 429s its calls got."""

    refused = 0

    def _send(self, call: Any) -> Any:
        try:
            return super()._send(call)
        except TooManyWaits:
            self.refused += 1
            raise


def test_a_refused_wait_is_retried_by_the_client(served: tuple[str, ServerState]) -> None:
    """``wait_for_approval`` treats 429 as "ask again after Retry-After", not as a failure."""
    url, state = served
    ((_, token),) = _agents(url, "retry")
    holders: list[httpx.Response] = []

    def hold() -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            headers = {"Authorization": f"Bearer {token}"}
            holders.append(
                http.get("/v1/agents/retry/actions/act-1", params={"wait": 3}, headers=headers)
            )

    with _Counting(url, "retry", token) as client:
        client.request("pay", {})
        threads = [threading.Thread(target=hold) for _ in range(LIMITS.max_waits_per_token)]
        for thread in threads:
            thread.start()
        while state.waits._held.get("agent:retry", 0) < LIMITS.max_waits_per_token:
            threading.Event().wait(0.01)  # every slot of this token is held now
        timer = threading.Timer(4, _approve, (url,))
        timer.start()
        try:
            assert client.wait_for_approval("act-1", timeout=60, poll=0.1) == "allowed"
        finally:
            timer.join()
            for thread in threads:
                thread.join()
        assert client.refused >= 1
    assert [r.status_code for r in holders] == [200] * LIMITS.max_waits_per_token


def _approve(url: str) -> None:
    with AdminClient(url, ADMIN) as admin:
        admin.approve("retry", "act-1", "alice")
