"""Extensions: ``?wait=`` wakes on the decision; ``Idempotency-Key`` makes a retry safe."""

from __future__ import annotations

import threading

import httpx
import pytest

from guardkit.client import AdminClient, AgentClient
from tests.server.conftest import ADMIN, Server


def test_long_poll_returns_when_the_operator_approves(
    server: Server, agent: tuple[str, str]
) -> None:
    agent_id, token = agent
    client = AgentClient(server.url, agent_id, token)
    assert client.request("pay", {"amount": 3})["decision"] == "pending_approval"
    client.close()
    approved = threading.Event()
    seen: list[dict[str, object]] = []

    def poll() -> None:
        with AgentClient(server.url, agent_id, token) as poller:
            seen.append(
                poller._call(
                    "GET", f"/v1/agents/{agent_id}/actions/act-1", params={"wait": 30}, timeout=60
                )
            )
        approved.set()

    waiter = threading.Thread(target=poll)
    waiter.start()
    with AdminClient(server.url, ADMIN) as admin:
        admin.approve(agent_id, "act-1", "alice")
    waiter.join()
    assert seen[0]["status"] == "allowed"


def test_long_poll_gives_up_with_pending_after_wait(server: Server, agent: tuple[str, str]) -> None:
    agent_id, token = agent
    with server.http(token) as http:
        http.post(f"/v1/agents/{agent_id}/actions", json={"tool": "pay"})
        response = http.get(f"/v1/agents/{agent_id}/actions/act-1", params={"wait": 0.2})
        bad = http.get(f"/v1/agents/{agent_id}/actions/act-1", params={"wait": "soon"})
    assert response.json()["status"] == "pending_approval"
    assert (bad.status_code, bad.json()["code"]) == (400, "bad_request")


def test_wait_for_approval_ends_in_denied_on_reject(server: Server, agent: tuple[str, str]) -> None:
    agent_id, token = agent
    with (
        AgentClient(server.url, agent_id, token) as client,
        AdminClient(server.url, ADMIN) as admin,
    ):
        client.request("pay", {"amount": 3})
        timer = threading.Timer(0.2, admin.reject, (agent_id, "act-1", "bob", "no"))
        timer.start()
        assert client.wait_for_approval("act-1", timeout=30) == "denied"
        timer.join()


def test_idempotency_key_replays_the_first_decision(server: Server, agent: tuple[str, str]) -> None:
    agent_id, token = agent
    path = f"/v1/agents/{agent_id}/actions"
    with server.http(token) as http:
        first = http.post(
            path, json={"tool": "read", "input": {"q": 1}}, headers={"Idempotency-Key": "k-1"}
        ).json()
        retry = http.post(
            path, json={"tool": "read", "input": {"q": 1}}, headers={"Idempotency-Key": "k-1"}
        ).json()
        other = http.post(
            path, json={"tool": "read", "input": {"q": 2}}, headers={"Idempotency-Key": "k-1"}
        )
        bad_key = http.post(path, json={"tool": "read"}, headers={"Idempotency-Key": "a b"})
        status = http.get(f"/v1/agents/{agent_id}").json()
    assert (
        first == retry == {"decision": "allowed", "action_id": "act-1", "cost": 1, "remaining": 99}
    )
    assert (other.status_code, other.json()["code"]) == (409, "idempotency_conflict")
    assert (bad_key.status_code, bad_key.json()["code"]) == (400, "bad_request")
    assert status["spent"] == 1
    assert status["head"]["seq"] == 3


def test_idempotency_keys_are_per_agent(server: Server) -> None:
    (a, a_token), (b, b_token) = server.new_agent(), server.new_agent()
    headers = {"Idempotency-Key": "same"}
    with server.http(a_token) as http_a, server.http(b_token) as http_b:
        first = http_a.post(f"/v1/agents/{a}/actions", json={"tool": "read"}, headers=headers)
        second = http_b.post(f"/v1/agents/{b}/actions", json={"tool": "pay"}, headers=headers)
    assert first.json()["decision"] == "allowed"
    assert second.json()["decision"] == "pending_approval"


@pytest.mark.parametrize("retries", [0, 1])
def test_client_request_sends_a_key_only_when_it_may_retry(
    server: Server, agent: tuple[str, str], retries: int
) -> None:
    agent_id, token = agent
    client = AgentClient(server.url, agent_id, token, retries=retries)
    sent: list[str | None] = []
    original = client._client.request

    def spy(*args: object, **kwargs: object) -> object:
        headers = kwargs.get("headers") or {}
        assert isinstance(headers, dict)
        sent.append(headers.get("Idempotency-Key"))
        return original(*args, **kwargs)  # type: ignore[arg-type]

    client._client.request = spy  # type: ignore[method-assign]
    client.request("read")
    client.close()
    assert (sent[0] is not None) == bool(retries)


def test_a_lost_response_is_retried_without_a_second_action(
    server: Server, agent: tuple[str, str]
) -> None:
    agent_id, token = agent
    client = AgentClient(server.url, agent_id, token)
    real = client._client.request
    calls: list[str] = []

    def lose_first_response(*args: object, **kwargs: object) -> httpx.Response:
        response = real(*args, **kwargs)  # type: ignore[arg-type]
        calls.append(str(args[1]))
        if len(calls) == 1:
            raise httpx.ReadError("connection reset after the guard decided")
        return response

    client._client.request = lose_first_response  # type: ignore[method-assign]
    decision = client.request("read", {"q": 1})
    client.close()
    assert decision == {"decision": "allowed", "action_id": "act-1", "cost": 1, "remaining": 99}
    assert len(calls) == 2
    with server.admin() as admin:
        status = admin.status(agent_id)
    assert (status["actions_allowed"], status["spent"], status["head"]["seq"]) == (1, 1, 3)
