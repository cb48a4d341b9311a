"""A real guard server (uvicorn on a free loopback port, in a thread) over a temporary store."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

import httpx

from guardkit.client import AdminClient
from guardkit.server import ServerState, create_app
from guardkit.server.runner import serve_in_thread
from guardkit.store import open_store
from guardkit.store.chain import Signer

ADMIN = "admin-" + "a" * 40
BACKEND = "backend-" + "b" * 40
POLICY = {
    "budget": 100,
    "scar_limit": 10,
    "tools": {
        "read": {"cost": 1},
        "pay": {"cost": 1, "requires_approval": True},
        "once": {"cost": 0, "max_calls": 1},
    },
}


@dataclass(frozen=True)
class Server:
    url: str
    state: ServerState

    def http(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def admin(self) -> AdminClient:
        return AdminClient(self.url, ADMIN)

    def new_agent(self, policy: dict[str, object] | None = None) -> tuple[str, str]:
        agent_id = "a-" + uuid.uuid4().hex[:12]
        with self.admin() as admin:
            token = admin.create_agent(agent_id, policy or POLICY)["token"]
        return agent_id, token


def start_server(store_url: str, signing_key: str | None = None) -> Iterator[Server]:
    store = open_store(store_url, signing_key=signing_key or Signer.generate_hex())
    state = ServerState.open(store, admin_token=ADMIN, backend_token=BACKEND)
    with serve_in_thread(create_app(state)) as url:
        yield Server(url, state)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    path: Path = tmp_path_factory.mktemp("server") / "guard.db"
    yield from start_server(f"sqlite:///{path}")


@pytest.fixture
def agent(server: Server) -> tuple[str, str]:
    return server.new_agent()


@pytest.fixture
def access_records(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="guardkit.server.access")
    return caplog
