"""Lineage's HTTP contract route by route: status codes, JSON shapes, error codes (§12)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

from guardkit import Guard
from guardkit.store.chain import Signer
from tests.server.conftest import ADMIN, BACKEND, POLICY, Server, start_server

STATUS_FIELDS = {
    "agent_id",
    "alive",
    "termination_reason",
    "budget",
    "spent",
    "remaining",
    "scar_score",
    "scar_limit",
    "scars",
    "actions_allowed",
    "actions_denied",
    "actions_pending",
    "head",
    "public_key",
}


def test_health_and_public_key(server: Server) -> None:
    with server.http() as http:
        assert http.get("/healthz").json() == {"ok": True}
        key = http.get("/v1/public-key").json()
    assert key == {"public_key": server.state.guard.public_key, "algorithm": "ed25519"}
    assert len(key["public_key"]) == 64


def test_create_agent_returns_status_and_token_then_409(server: Server) -> None:
    with server.http(ADMIN) as http:
        created = http.post("/v1/agents", json={"agent_id": "create-1", "policy": POLICY})
        again = http.post("/v1/agents", json={"agent_id": "create-1", "policy": POLICY})
        bad_id = http.post("/v1/agents", json={"agent_id": "no spaces", "policy": POLICY})
        bad_policy = http.post("/v1/agents", json={"agent_id": "create-2", "policy": {}})
        token = http.get("/v1/agents/create-1/token").json()
    body = created.json()
    assert created.status_code == 200
    assert set(body["agent"]) >= STATUS_FIELDS
    assert body["agent"]["budget"] == 100
    assert body["token"].startswith("agt_create-1.")
    assert token == {"token": body["token"]}
    assert (again.status_code, again.json()["code"]) == (409, "agent_exists")
    assert (bad_id.status_code, bad_id.json()["code"]) == (400, "bad_request")
    assert (bad_policy.status_code, bad_policy.json()["code"]) == (400, "bad_request")


def test_agents_list_is_sorted_with_state(server: Server) -> None:
    server.new_agent()
    server.new_agent()
    with server.http(ADMIN) as http:
        agents = http.get("/v1/agents").json()["agents"]
    ids = [a["agent_id"] for a in agents]
    assert ids == sorted(ids)
    assert all(a["state"] == "active" and set(a["status"]) >= STATUS_FIELDS for a in agents)


def test_request_decisions_and_action_shape(server: Server, agent: tuple[str, str]) -> None:
    agent_id, token = agent
    base = f"/v1/agents/{agent_id}"
    with server.http(token) as http:
        allowed = http.post(base + "/actions", json={"tool": "read", "cost": 3}).json()
        denied = http.post(base + "/actions", json={"tool": "rm", "input": {"p": "/"}}).json()
        pending = http.post(base + "/actions", json={"tool": "pay", "input": {"n": 1}}).json()
        action = http.get(base + "/actions/act-1").json()
        unknown = http.get(base + "/actions/act-99")
        garbage = http.get(base + "/actions/nope")
        status = http.get(base).json()
    assert allowed == {"decision": "allowed", "action_id": "act-1", "cost": 3, "remaining": 97}
    assert denied == {
        "decision": "denied",
        "action_id": "act-2",
        "reason": {"code": "tool_not_allowed", "tool": "rm"},
    }
    assert pending == {"decision": "pending_approval", "action_id": "act-3"}
    assert {k: action[k] for k in ("action_id", "tool", "input", "cost", "status", "outcome")} == {
        "action_id": "act-1",
        "tool": "read",
        "input": {},
        "cost": 3,
        "status": "allowed",
        "outcome": None,
    }
    assert (unknown.status_code, unknown.json()["code"]) == (404, "unknown_action")
    assert (garbage.status_code, garbage.json()["code"]) == (404, "unknown_action")
    assert set(status) >= STATUS_FIELDS
    assert (status["spent"], status["scar_score"], status["actions_pending"]) == (3, 3, 1)


def test_unknown_agent_is_404_not_found(server: Server) -> None:
    with server.http(ADMIN) as http:
        response = http.get("/v1/agents/ghost")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_outcome_approve_reject_and_their_409s(server: Server, agent: tuple[str, str]) -> None:
    agent_id, token = agent
    base = f"/v1/agents/{agent_id}"
    with server.http(token) as own, server.http(ADMIN) as admin:
        own.post(base + "/actions", json={"tool": "read"})
        reported = own.post(
            base + "/actions/act-1/outcome", json={"status": "failure", "detail": "boom"}
        )
        twice = own.post(base + "/actions/act-1/outcome", json={"status": "success"})
        harm = own.post(base + "/actions/act-1/outcome", json={"status": "harmful"})
        own.post(base + "/actions", json={"tool": "pay", "input": {"amount": 5}})
        own.post(base + "/actions", json={"tool": "pay", "input": {"amount": 6}})
        queue = admin.get(base + "/actions/pending").json()["pending"]
        approved = admin.post(
            base + "/actions/act-2/approve", json={"approver": "alice", "note": "ok"}
        )
        approve_again = admin.post(base + "/actions/act-2/approve", json={"approver": "alice"})
        rejected = admin.post(
            base + "/actions/act-3/reject",
            json={"approver": "bob", "reason": "wrong vendor", "scar": "moderate"},
        )
        missing = admin.post(base + "/actions/act-9/approve", json={"approver": "alice"})
    assert reported.status_code == 200
    assert reported.json()["scars"][0]["severity"] == "minor"
    assert (twice.status_code, twice.json()["code"]) == (409, "invalid_state")
    assert (harm.status_code, harm.json()["code"]) == (403, "forbidden")
    assert [p["action"]["input"] for p in queue] == [{"amount": 5}, {"amount": 6}]
    assert {"requested_at", "seq", "action"} <= set(queue[0])
    assert approved.json() == {
        "decision": "allowed",
        "action_id": "act-2",
        "cost": 1,
        "remaining": 98,
    }
    assert (approve_again.status_code, approve_again.json()["code"]) == (409, "invalid_state")
    assert rejected.json() == {
        "decision": "denied",
        "action_id": "act-3",
        "reason": {"code": "rejected", "by": "bob", "reason": "wrong vendor"},
    }
    assert (missing.status_code, missing.json()["code"]) == (404, "unknown_action")


def test_scar_terminate_log_verify_export(server: Server, agent: tuple[str, str]) -> None:
    agent_id, _ = agent
    base = f"/v1/agents/{agent_id}"
    with server.http(ADMIN) as admin:
        scarred = admin.post(base + "/scars", json={"severity": "minor", "reason": "watch"})
        bad_scar = admin.post(base + "/scars", json={"severity": "mild", "reason": "x"})
        terminated = admin.post(base + "/terminate", json={"reason": "done", "by": "op"})
        again = admin.post(base + "/terminate", json={"reason": "done", "by": "op"})
        log = admin.get(base + "/log", params={"after": 0, "limit": 2}).json()
        bad_limit = admin.get(base + "/log", params={"limit": 0})
        verified = admin.get(base + "/verify").json()
        export = admin.get(base + "/export")
    assert scarred.json()["scar_score"] == 1
    assert (bad_scar.status_code, bad_scar.json()["code"]) == (400, "bad_request")
    assert terminated.json()["alive"] is False
    assert (again.status_code, again.json()["code"]) == (409, "already_terminated")
    assert [r["seq"] for r in log["records"]] == [1, 2]
    assert set(log["head"]) == {"seq", "hash"}
    assert (bad_limit.status_code, bad_limit.json()["code"]) == (400, "bad_request")
    assert verified["ok"] is True
    assert verified["records"] == 4
    assert verified["public_key"] == server.state.guard.public_key
    lines = [json.loads(line) for line in export.text.splitlines()]
    assert export.headers["content-type"].startswith("application/x-ndjson")
    assert [r["kind"] for r in lines] == ["genesis", "policy", "scar", "terminated"]


def test_backend_consumes_an_allowed_action_once(server: Server, agent: tuple[str, str]) -> None:
    agent_id, token = agent
    base = f"/v1/agents/{agent_id}"
    with server.http(token) as own, server.http(BACKEND) as bank:
        own.post(base + "/actions", json={"tool": "read", "input": {"iban": "DE1"}})
        edited = bank.post(
            base + "/actions/act-1/consume", json={"tool": "read", "input": {"iban": "DE2"}}
        )
        other_tool = bank.post(
            base + "/actions/act-1/consume", json={"tool": "pay", "input": {"iban": "DE1"}}
        )
        first = bank.post(
            base + "/actions/act-1/consume",
            json={"tool": "read", "input": {"iban": "DE1"}, "cost": 1},
        )
        replay = bank.post(
            base + "/actions/act-1/consume", json={"tool": "read", "input": {"iban": "DE1"}}
        )
        made_up = bank.post(base + "/actions/act-7/consume", json={"tool": "read", "input": {}})
    assert (edited.status_code, edited.json()["code"]) == (409, "consume_mismatch")
    assert (other_tool.status_code, other_tool.json()["code"]) == (409, "consume_mismatch")
    assert first.status_code == 200
    assert first.json()["consumed"] is True
    assert (replay.status_code, replay.json()["code"]) == (409, "already_consumed")
    assert (made_up.status_code, made_up.json()["code"]) == (404, "unknown_action")


def test_spawn_charges_the_parent(server: Server, agent: tuple[str, str]) -> None:
    agent_id, token = agent
    child = {"budget": 5, "scar_limit": 10, "tools": {"read": {"cost": 1}}}
    with server.http(token) as own:
        spawned = own.post(
            f"/v1/agents/{agent_id}/spawn",
            json={"child_id": agent_id + "-c", "policy": child, "budget": 5},
        )
        wider = own.post(
            f"/v1/agents/{agent_id}/spawn",
            json={
                "child_id": agent_id + "-d",
                "policy": {"budget": 1, "tools": {"rm": {"cost": 0}}},
                "budget": 1,
            },
        )
        parent = own.get(f"/v1/agents/{agent_id}").json()
    assert spawned.status_code == 200, spawned.text
    assert spawned.json()["agent"]["budget"] == 5
    assert spawned.json()["token"].startswith(f"agt_{agent_id}-c.")
    assert (wider.status_code, wider.json()["code"]) == (400, "bad_request")
    assert parent["spent"] == 5


def test_a_tampered_ledger_is_503_quarantined_and_listed(tmp_path: Path) -> None:
    path = tmp_path / "guard.db"
    key = Signer.generate_hex()
    with Guard(str(path), signing_key=key) as guard:
        guard.create_agent("honest", POLICY)
        guard.create_agent("tampered", POLICY)
        guard.agent("tampered").request("read", {"amount": 1})
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "UPDATE records SET payload = replace(payload, '\"amount\":1', "
            "'\"amount\":9') WHERE agent_id = 'tampered'"
        )
    for server in start_server(f"sqlite:///{path}", key):
        with server.http(ADMIN) as admin:
            blocked = admin.get("/v1/agents/tampered")
            listed = admin.get("/v1/agents").json()["agents"]
            honest = admin.post("/v1/agents/honest/actions", json={"tool": "read"})
            verified = admin.get("/v1/agents/tampered/verify").json()
        assert (blocked.status_code, blocked.json()["code"]) == (503, "quarantined")
        assert [(a["agent_id"], a["state"]) for a in listed] == [
            ("honest", "active"),
            ("tampered", "quarantined"),
        ]
        assert "failed verification" in listed[1]["error"]
        assert honest.json()["decision"] == "allowed"
        assert verified["ok"] is False
        assert verified["failure"]["seq"] == 2
