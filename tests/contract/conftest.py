"""One agent guard under test, in-process (``LocalAgent``) or over HTTP (``AgentClient``).

Each case yields ``(agent, operator)``: the agent's guard and an operator with Lineage's
``AdminClient`` methods (``Guard`` in-process, ``AdminClient`` over HTTP), sharing one store.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardkit import Guard

ADMIN = "contract-admin-" + "a" * 32
BACKEND = "contract-backend-" + "b" * 32
POLICY: dict[str, Any] = {
    "budget": 10,
    "scar_limit": 10,
    "tools": {
        "llm_turn": {"cost": 1},
        "read": {"cost": 0},
        "pay": {"cost": 1, "requires_approval": True},
        "capped": {"cost": 0, "max_calls": 1},
    },
}


def _serve(store_url: str) -> Iterator[str]:
    pytest.importorskip("starlette")
    from guardkit.server import ServerState, create_app
    from guardkit.server.runner import serve_in_thread
    from guardkit.store import open_store

    state = ServerState.open(open_store(store_url), admin_token=ADMIN, backend_token=BACKEND)
    with serve_in_thread(create_app(state)) as url:
        yield url


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path: Path = tmp_path_factory.mktemp("contract") / "guard.db"
    yield from _serve(f"sqlite:///{path}")


@pytest.fixture(scope="module")
def http_server_pg() -> Iterator[str]:
    from tests.server.pg import pg_schema_url

    with pg_schema_url() as url:
        yield from _serve(url)


@pytest.fixture(params=["local", "http", "http-pg"])
def guard_pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    agent_id = "c-" + uuid.uuid4().hex[:10]
    if request.param == "local":
        with Guard(str(tmp_path / "guard.db")) as guard:
            guard.create_agent(agent_id, POLICY)
            yield guard.agent(agent_id), guard
        return
    from guardkit.client import AdminClient, AgentClient

    url = request.getfixturevalue("http_server_pg" if request.param == "http-pg" else "http_server")
    with AdminClient(url, ADMIN) as admin:
        token = admin.create_agent(agent_id, POLICY)["token"]
        with AgentClient(url, agent_id, token) as agent:
            yield agent, admin
