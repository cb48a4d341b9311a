"""``guardkit pending --all``: every agent's pending approvals, newest first, filtered."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from guardkit import Guard

POLICY = {
    "budget": 100,
    "scar_limit": 10,
    "tools": {
        "pay": {"cost": 1, "requires_approval": True},
        "wire": {"cost": 1, "requires_approval": True},
    },
}


def _pending(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guardkit", "pending", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        check=False,
        cwd=db.parent,
    )


def test_pending_all_lists_every_agent_newest_first_with_filters(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    with Guard(str(db)) as guard:
        for agent_id in ("alpha", "beta"):
            guard.create_agent(agent_id, POLICY)
        asked = [
            ("alpha", guard.agent("alpha").request("pay", {"n": 1})["action_id"]),
            ("beta", guard.agent("beta").request("wire", {"n": 2})["action_id"]),
            ("alpha", guard.agent("alpha").request("wire", {"n": 3})["action_id"]),
            ("beta", guard.agent("beta").request("pay", {"n": 4})["action_id"]),
        ]
        guard.approve("beta", asked[3][1], "op")  # no longer pending

    done = _pending(db, "--all", "--json")
    assert done.returncode == 0, done.stderr
    listed = [(i["agent_id"], i["action"]["action_id"]) for i in json.loads(done.stdout)]
    assert listed == [asked[2], asked[1], asked[0]]

    only_wire = json.loads(_pending(db, "--all", "--tool", "wire", "--json").stdout)
    assert [i["action"]["input"] for i in only_wire] == [{"n": 3}, {"n": 2}]
    only_beta = json.loads(_pending(db, "--all", "--agent", "beta", "--json").stdout)
    assert [(i["agent_id"], i["action"]["tool"]) for i in only_beta] == [("beta", "wire")]

    text = _pending(db, "--all").stdout
    assert text.index("alpha  act-2  wire") < text.index("beta  act-1  wire")
    assert _pending(db, "alpha", "--all").returncode == 2
    assert _pending(db, "alpha", "--tool", "pay").returncode == 2
    assert only_wire[0]["waits_because"] == {
        "code": "requires_approval",
        "reason": "the policy requires approval for wire",
    }


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guardkit", *args, "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=db.parent,
    )


def test_approve_and_reject_take_a_note_into_the_ledger(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    with Guard(str(db)) as guard:
        guard.create_agent("ops", POLICY)
        guard.agent("ops").request("pay", {"n": 1})
        guard.agent("ops").request("wire", {"n": 2})
    approved = _cli(db, "approve", "ops", "act-1", "--by", "dana", "--note", "PO checked")
    assert approved.returncode == 0, approved.stderr
    rejected = _cli(db, "reject", "ops", "act-2", "--by", "dana", "--note", "no such vendor")
    assert rejected.returncode == 0, rejected.stderr
    with Guard(str(db)) as guard:
        payloads = {r["kind"]: r["payload"] for r in guard.log("ops")["records"]}
    assert payloads["action_allowed"]["note"] == "PO checked"
    assert payloads["action_rejected"] == {
        "action_id": "act-2",
        "by": "dana",
        "reason": "no such vendor",
    }


def test_the_inbox_over_http_is_every_agents_pending_newest_first(tmp_path: Path) -> None:
    from tests.server.conftest import ADMIN, start_server

    for server in start_server(f"sqlite:///{tmp_path / 'g.db'}"):
        for agent_id in ("alpha", "beta"):
            with server.admin() as admin:
                admin.create_agent(agent_id, POLICY)
        for agent_id, tool in (("alpha", "pay"), ("beta", "wire"), ("alpha", "wire")):
            server.state.guard.agent(agent_id).request(tool, {"who": agent_id})
        with server.http(ADMIN) as http:
            every = http.get("/v1/pending").json()["pending"]
            assert [(i["agent_id"], i["action"]["tool"]) for i in every] == [
                ("alpha", "wire"),
                ("beta", "wire"),
                ("alpha", "pay"),
            ]
            wire = http.get("/v1/pending", params={"tool": "wire", "agent": "beta"}).json()
            assert [i["agent_id"] for i in wire["pending"]] == ["beta"]
            two = http.get("/v1/pending", params=[("agent", "alpha"), ("agent", "beta")]).json()
            assert len(two["pending"]) == 3
        with server.http() as http:
            assert http.get("/v1/pending").status_code == 401
