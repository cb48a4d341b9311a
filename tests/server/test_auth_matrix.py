"""Every route x {none, wrong, agent, other agent, backend, admin}: 401, 403 or through."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.conftest import ADMIN, BACKEND, Server

# (method, path template, json body, roles that get through)
ROUTES: list[tuple[str, str, Any, set[str]]] = [
    ("POST", "/v1/agents", {"agent_id": "{new}", "policy": {"budget": 1, "tools": {}}}, {"admin"}),
    ("GET", "/v1/agents", None, {"admin"}),
    ("GET", "/v1/agents/{id}", None, {"agent", "admin"}),
    ("GET", "/v1/agents/{id}/token", None, {"admin"}),
    (
        "POST",
        "/v1/agents/{id}/spawn",
        {"child_id": "{new}", "policy": {"budget": 1, "tools": {"read": {"cost": 1}}}, "budget": 1},
        {"agent", "admin"},
    ),
    ("POST", "/v1/agents/{id}/actions", {"tool": "read", "input": {}}, {"agent", "admin"}),
    (
        "POST",
        "/v1/agents/{id}/denials",
        {"tool": "read", "reason": {"code": "path_denied"}},
        {"agent", "admin"},
    ),
    ("GET", "/v1/agents/{id}/actions/pending", None, {"admin"}),
    ("GET", "/v1/agents/{id}/actions/act-1", None, {"agent", "backend", "admin"}),
    ("POST", "/v1/agents/{id}/actions/act-1/outcome", {"status": "success"}, {"agent", "admin"}),
    (
        "POST",
        "/v1/agents/{id}/actions/act-1/outcome",
        {"status": "harmful", "detail": "x"},
        {"admin"},
    ),
    ("POST", "/v1/agents/{id}/actions/act-2/approve", {"approver": "op"}, {"admin"}),
    ("POST", "/v1/agents/{id}/actions/act-2/reject", {"approver": "op", "reason": "no"}, {"admin"}),
    (
        "POST",
        "/v1/agents/{id}/actions/act-1/consume",
        {"tool": "read", "input": {}},
        {"backend", "admin"},
    ),
    ("POST", "/v1/agents/{id}/scars", {"severity": "minor", "reason": "r"}, {"admin"}),
    ("POST", "/v1/agents/{id}/terminate", {"reason": "r", "by": "op"}, {"admin"}),
    ("GET", "/v1/agents/{id}/log", None, {"admin"}),
    ("GET", "/v1/agents/{id}/verify", None, {"admin"}),
    ("GET", "/v1/agents/{id}/export", None, {"admin"}),
]
ROLES = ["none", "wrong", "agent", "other", "backend", "admin"]


def _fill(value: Any, agent_id: str, new_id: str) -> Any:
    if isinstance(value, str):
        return value.replace("{id}", agent_id).replace("{new}", new_id)
    if isinstance(value, dict):
        return {k: _fill(v, agent_id, new_id) for k, v in value.items()}
    return value


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("method", "path", "body", "through"), ROUTES, ids=[f"{m} {p} {b}" for m, p, b, _ in ROUTES]
)
def test_route_admits_exactly_its_roles(
    server: Server, method: str, path: str, body: Any, through: set[str], role: str
) -> None:
    agent_id, agent_token = server.new_agent()
    _, other_token = server.new_agent()
    with server.http(agent_token) as own:
        assert (
            own.post(f"/v1/agents/{agent_id}/actions", json={"tool": "read", "input": {}}).json()[
                "decision"
            ]
            == "allowed"
        )
        assert own.post(f"/v1/agents/{agent_id}/actions", json={"tool": "pay", "input": {}}).json()[
            "decision"
        ] == ("pending_approval")
    token = {
        "none": None,
        "wrong": "agt_x.00",
        "agent": agent_token,
        "other": other_token,
        "backend": BACKEND,
        "admin": ADMIN,
    }[role]
    new_id = "n-" + agent_id
    with server.http(token) as http:
        response = http.request(
            method, _fill(path, agent_id, new_id), json=_fill(body, agent_id, new_id)
        )
    error = (
        response.json() if response.headers["content-type"].startswith("application/json") else {}
    )
    if role in ("none", "wrong"):
        assert (response.status_code, error["code"]) == (401, "unauthorized")
        assert response.headers["www-authenticate"].startswith("Bearer")
    elif role in through:
        assert response.status_code == 200, response.text
    else:
        assert (response.status_code, error["code"]) == (403, "forbidden")
    assert "Traceback" not in response.text


@pytest.mark.parametrize(
    "path", ["/healthz", "/v1/public-key", "/openapi.json", "/", "/console.js", "/console.css"]
)
def test_public_routes_need_no_token(server: Server, path: str) -> None:
    with server.http() as http:
        assert http.get(path).status_code == 200


def test_a_forged_agent_token_is_unauthorized(server: Server) -> None:
    agent_id, token = server.new_agent()
    forged = token[:-4] + ("0000" if not token.endswith("0000") else "1111")
    with server.http(forged) as http:
        response = http.get(f"/v1/agents/{agent_id}")
    assert (response.status_code, response.json()["code"]) == (401, "unauthorized")


def test_a_basic_scheme_is_unauthorized(server: Server) -> None:
    with server.http() as http:
        response = http.get("/v1/agents", headers={"Authorization": f"Basic {ADMIN}"})
    assert response.status_code == 401


def test_an_agent_token_is_kept_once_it_matched_and_only_then() -> None:
    """Tokens are checked against a kept copy after their first match: the same answers as a
    fresh HMAC each time, and an id that never matched (a forged token) is not kept."""
    from guardkit._tokens import agent_token
    from guardkit.server.auth import Caller, Role, TokenBook, Unauthorized

    book = TokenBook(admin_token="a" * 32, backend_token="b" * 32, agent_key=b"k", link_key=b"l")
    token = agent_token(b"k", "bot")
    forged = agent_token(b"other key", "bot")
    with pytest.raises(Unauthorized):
        book.identify(f"Bearer {forged}")
    with pytest.raises(Unauthorized):
        book.identify(f"Bearer {agent_token(b'other key', 'ghost')}")
    first, again = book.identify(f"Bearer {token}"), book.identify(f"Bearer {token}")
    assert first == again == Caller(Role.AGENT, "bot")
    with pytest.raises(Unauthorized):
        book.identify(f"Bearer {forged}")  # a kept id still refuses another token
    assert set(book._agent_tokens) == {"bot"}
