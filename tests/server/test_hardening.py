"""Body limits, JSON validation with clear 400s, no stack traces, an access log without secrets."""

from __future__ import annotations

import logging

import pytest

from guardkit.errors import InvalidInput
from guardkit.server.wire import Field, validate
from tests.server.conftest import ADMIN, Server


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{", "not valid JSON"),
        (b"[1]", "must be a JSON object"),
        (b'{"tool": 1}', "field 'tool' must be string"),
        (b'{"input": {}}', "missing field 'tool'"),
        (b'{"tool": "read", "extra": 1}', "unknown field 'extra'"),
        (b'{"tool": "read", "cost": NaN}', "not valid JSON"),
        (b'{"tool": "read", "cost": "3"}', "field 'cost' must be number or null"),
        (b'{"tool": "read", "cost": 1.5}', "whole number"),
        (b'{"tool": "read", "cost": -1}', "cost must be >= 0"),
        (b'{"tool": ""}', "tool names"),
        (b'{"tool": "a\\u0000b"}', "must not contain NUL"),
    ],
)
def test_bad_bodies_are_400_with_a_clear_message(
    server: Server, agent: tuple[str, str], body: bytes, message: str
) -> None:
    agent_id, token = agent
    with server.http(token) as http:
        response = http.post(
            f"/v1/agents/{agent_id}/actions",
            content=body,
            headers={"content-type": "application/json"},
        )
    assert response.status_code == 400
    assert response.json()["code"] == "bad_request"
    assert message in response.json()["error"]


def test_an_oversized_body_is_413(server: Server, agent: tuple[str, str]) -> None:
    agent_id, token = agent
    huge = b'{"tool": "read", "input": "' + b"x" * (server.state.limits.max_body + 1) + b'"}'
    with server.http(token) as http:
        response = http.post(f"/v1/agents/{agent_id}/actions", content=huge)
        chunked = http.post(f"/v1/agents/{agent_id}/actions", content=iter([huge]))
    assert (response.status_code, response.json()["code"]) == (413, "payload_too_large")
    assert (chunked.status_code, chunked.json()["code"]) == (413, "payload_too_large")


def test_an_unexpected_error_is_a_bare_500(
    server: Server, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode() -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(server.state.guard, "agents", explode)
    with server.http(ADMIN) as http:
        response = http.get("/v1/agents")
    assert response.status_code == 500
    assert response.json() == {"error": "internal error", "code": "internal"}
    assert "secret internals" in caplog.text  # logged on the server, not sent


def test_unknown_routes_and_methods_answer_json(server: Server) -> None:
    with server.http(ADMIN) as http:
        missing = http.get("/v2/nothing")
        wrong_method = http.delete("/v1/agents")
    assert (missing.status_code, missing.json()["code"]) == (404, "not_found")
    assert (wrong_method.status_code, wrong_method.json()["code"]) == (405, "method_not_allowed")


def test_access_log_has_one_line_per_request_and_no_token(
    server: Server, agent: tuple[str, str], access_records: pytest.LogCaptureFixture
) -> None:
    agent_id, token = agent
    with server.http(token) as http:
        http.post(f"/v1/agents/{agent_id}/actions", json={"tool": "read"})
    with server.http(ADMIN) as http:
        http.get("/v1/agents")
    lines = [r.getMessage() for r in access_records.records if r.name == "guardkit.server.access"]
    assert any(
        f'"path": "/v1/agents/{agent_id}/actions"' in line
        and '"role": "agent"' in line
        and '"status": 200' in line
        for line in lines
    )
    assert any('"role": "admin"' in line for line in lines)
    assert not any(token in line or ADMIN in line for line in lines)
    assert access_records.records[0].levelno == logging.INFO


def test_security_headers_and_console_csp(server: Server) -> None:
    with server.http() as http:
        page = http.get("/")
        api = http.get("/healthz")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "default-src 'none'" in csp
    assert "unsafe" not in csp
    assert api.headers["x-content-type-options"] == "nosniff"


def test_validate_accepts_exactly_the_declared_fields() -> None:
    fields = {"a": Field(("string",), required=True), "b": Field(("integer", "null"))}
    assert validate({"a": "x", "b": None}, fields) == {"a": "x", "b": None}
    assert validate(None, {"b": Field(("integer",))}, empty_ok=True) == {}
    with pytest.raises(InvalidInput, match="field 'b' must be integer or null"):
        validate({"a": "x", "b": True}, fields)


def test_a_denial_with_an_unknown_severity_is_400(server: Server, agent: tuple[str, str]) -> None:
    agent_id, token = agent
    with server.http(token) as http:
        response = http.post(
            f"/v1/agents/{agent_id}/denials",
            json={"tool": "read", "reason": {"code": "x"}, "severity": "mild"},
        )
    assert (response.status_code, response.json()["code"]) == (400, "bad_request")


BIG = "1" + "0" * 300
LONE = "\\ud800"  # as JSON text: a lone surrogate escape
#: (token role, method, path under the agent or "/v1/agents", body with @BIG/@LONE, field named)
BAD_INPUT = [
    ("agent", "POST", "/actions", '{"tool": "read", "cost": @BIG}', "cost"),
    ("agent", "POST", "/actions", '{"tool": "read", "input": {"n": [@BIG]}}', "input.n[0]"),
    ("agent", "POST", "/actions", '{"tool": "read", "input": {"n": -@BIG}}', "input.n"),
    ("agent", "POST", "/actions", '{"tool": "read", "input": {"f": 1e400}}', "input.f"),
    ("agent", "POST", "/actions", '{"tool": "@LONE"}', "tool"),
    ("agent", "POST", "/actions", '{"tool": "read", "input": {"a": "x@LONE"}}', "input.a"),
    ("agent", "POST", "/actions", '{"tool": "read", "input": {"@LONE": 1}}', "input.\\ud800"),
    ("agent", "POST", "/denials", '{"tool": "read", "reason": {"code": "@LONE"}}', "reason.code"),
    (
        "agent",
        "POST",
        "/actions/act-1/outcome",
        '{"status": "failure", "detail": "@LONE"}',
        "detail",
    ),
    ("agent", "POST", "/actions/act-1/withdraw", '{"timeout": @BIG}', "timeout"),
    (
        "admin",
        "POST",
        "",
        '{"agent_id": "x", "policy": {"budget": 1, "tools": {"t": {"cost": @BIG}}}}',
        "policy.tools.t.cost",
    ),
    (
        "admin",
        "POST",
        "",
        '{"agent_id": "x", "policy": {"budget": 1, "tools": {"p@LONE": {"cost": 1}}}}',
        "policy.tools.p\\ud800",
    ),
    (
        "admin",
        "POST",
        "/spawn",
        '{"child_id": "c", "policy": {"budget": 1, "tools": {}}, "budget": @BIG}',
        "budget",
    ),
    ("admin", "POST", "/scars", '{"severity": "minor", "reason": "@LONE"}', "reason"),
    ("admin", "POST", "/terminate", '{"reason": "r", "by": "@LONE"}', "by"),
    ("admin", "POST", "/actions/act-1/approve", '{"approver": "@LONE"}', "approver"),
    ("admin", "POST", "/actions/act-1/reject", '{"approver": "a", "reason": "@LONE"}', "reason"),
    (
        "admin",
        "POST",
        "/actions/act-1/consume",
        '{"tool": "read", "input": {"n": @BIG}}',
        "input.n",
    ),
]


def test_huge_integers_and_lone_surrogates_are_400_naming_the_field(
    server: Server, agent: tuple[str, str]
) -> None:
    agent_id, token = agent
    with server.http(token) as http:
        http.post(f"/v1/agents/{agent_id}/actions", json={"tool": "read"})
    for role, method, suffix, template, field in BAD_INPUT:
        path = f"/v1/agents/{agent_id}{suffix}" if suffix else "/v1/agents"
        body = template.replace("@BIG", BIG).replace("@LONE", LONE)
        with server.http(token if role == "agent" else ADMIN) as http:
            for key in (None, "retry-1"):  # the Idempotency-Key path is checked the same
                if key is not None and not path.endswith("/actions"):
                    continue
                headers = {"content-type": "application/json"}
                if key is not None:
                    headers["idempotency-key"] = key
                response = http.request(method, path, content=body.encode(), headers=headers)
                assert response.status_code == 400, (path, body, response.text)
                error = response.json()
                assert error["code"] == "bad_request"
                assert f"field '{field}'" in error["error"], (body, error)
    with server.admin() as admin:
        assert admin.status(agent_id)["head"]["seq"] == 3  # genesis, policy, the one request
