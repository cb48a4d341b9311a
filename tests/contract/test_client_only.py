"""What only the HTTP clients do: connection failures, error mapping, retries with one key."""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("httpx")

from guardkit import GuardError, GuardUnavailable, InvalidInput
from guardkit.client import AdminClient, AgentClient, BackendClient
from tests.contract.conftest import ADMIN, BACKEND, POLICY


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_guard_raises_guard_unavailable() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with (
        AgentClient(url, "bot", "agt_bot.00", timeout=2) as agent,
        pytest.raises(GuardUnavailable) as down,
    ):
        agent.request("read")
    assert isinstance(down.value, GuardError)
    assert down.value.code == "unavailable"
    assert "nothing was done" in down.value.message


def test_a_wrong_token_is_a_401_guard_error(http_server: str) -> None:
    with AdminClient(http_server, "not-the-token") as admin, pytest.raises(GuardError) as refused:
        admin.agents()
    assert (refused.value.status, refused.value.code) == (401, "unauthorized")
    assert str(refused.value) == refused.value.message  # no "401 unauthorized:" prefix


def test_bad_input_maps_to_invalid_input(http_server: str) -> None:
    with AdminClient(http_server, ADMIN) as admin, pytest.raises(InvalidInput):
        admin.create_agent("bad id!", POLICY)


def test_admin_extras_and_the_backend_client(http_server: str) -> None:
    with AdminClient(http_server, ADMIN) as admin, BackendClient(http_server, BACKEND, 30) as bank:
        token = admin.create_agent("extras", POLICY)["token"]
        assert admin.token("extras") == token
        with AgentClient(http_server, "extras", token) as agent:
            action_id = agent.request("read", {"iban": "DE1"})["action_id"]
            child = agent.spawn("extras-kid", {"budget": 2, "tools": {"read": {"cost": 0}}}, 2)
        assert child["agent"]["budget"] == 2
        assert bank.action("extras", action_id)["status"] == "allowed"
        assert bank.consume("extras", action_id, "read", {"iban": "DE1"})["consumed"] is True
        assert list(admin.pending("extras")) == []
        assert admin.log("extras", after=1, limit=1)["records"][0]["seq"] == 2
        assert admin.verify("extras")["ok"] is True
        assert admin.export("extras").count("\n") == admin.status("extras")["head"]["seq"] + 1
        assert admin.public_key()["algorithm"] == "ed25519"
        assert [a["agent_id"] for a in admin.agents()] == sorted(
            a["agent_id"] for a in admin.agents()
        )
        assert admin.scar("extras", "minor", "watch", action_id)["scar_score"] == 1
