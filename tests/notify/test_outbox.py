"""The outbox: an event per call for approval, settled approval and termination, written with
its record (memory, SQLite and PostgreSQL alike) and never without it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardkit import Guard
from guardkit.server.batching import SharedStore
from guardkit.store import Store, open_store
from tests.server.pg import pg_schema_url

POLICY = {
    "budget": 10,
    "scar_limit": 10,
    "tools": {
        "buy": {"cost": 1},
        "pay": {"cost": 2, "requires_approval": True},
        "wire": {"cost": 1, "requires_approval": True, "approval_ttl": 5},
    },
}


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "postgresql":
        with pg_schema_url() as url:
            opened = open_store(url)
            yield opened
            opened.close()
        return
    url = ":memory:" if request.param == "memory" else f"sqlite:///{tmp_path / 'g.db'}"
    opened = open_store(url)
    yield opened
    opened.close()


def events(store: Store) -> list[dict[str, Any]]:
    with store.transaction(write=False) as tx:
        return [json.loads(body) for _, _, _, body in tx.outbox(0, 1000)]


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_each_approval_step_and_termination_is_one_event(store: Store) -> None:
    clock = Clock()
    guard = Guard(store, clock=clock)
    guard.create_agent("ops", POLICY)
    agent = guard.agent("ops")
    assert agent.request("buy", {"item": "pen"})["decision"] == "allowed"
    assert events(store) == []  # a plain allow announces nothing

    pay = agent.request("pay", {"to": "acme", "amount": 7})
    assert pay["decision"] == "pending_approval"
    (pending,) = events(store)
    assert pending["type"] == "approval.pending"
    assert pending["agent_id"] == "ops"
    assert pending["action_id"] == pay["action_id"]
    action = pending["action"]
    assert action["tool"] == "pay"
    assert action["input"] == {"to": "acme", "amount": 7}
    assert action["cost"] == 2
    assert action["waits_because"]["code"] == "requires_approval"
    assert action["input_sha256"] == guard.action("ops", pay["action_id"])["input_sha256"]
    with store.transaction(write=False) as tx:
        seq, digest = tx.head("ops") or (0, "")
    assert pending["ledger"] == {"seq": seq, "hash": digest}
    assert pending["id"] == "evt_" + digest[:32]

    guard.approve("ops", pay["action_id"], "alice", note="ok")
    rejected = agent.request("pay", {"to": "evil"})
    guard.reject("ops", rejected["action_id"], "bob", "no")
    late = agent.request("wire", {"to": "x"})
    clock.now += 10
    agent.request("buy", {})  # any operation on the agent expires the old approval
    guard.terminate("ops", "done", "carol")

    found = events(store)
    assert [e["type"] for e in found] == [
        "approval.pending",
        "approval.approved",
        "approval.pending",
        "approval.rejected",
        "approval.pending",
        "approval.expired",
        "agent.terminated",
    ]
    assert found[1]["decision"] == {"approved_by": "alice", "note": "ok"}
    assert found[1]["action"] == pending["action"]
    assert found[3]["decision"] == {"by": "bob", "reason": "no"}
    assert found[5]["action_id"] == late["action_id"]
    assert found[5]["decision"]["reason"]["code"] == "approval_expired"
    assert found[6]["decision"] == {"by": "carol", "reason": "done"}
    assert found[6]["action"] is None
    assert len({e["id"] for e in found}) == len(found)


def test_a_check_that_fails_when_approved_is_announced_as_the_guards_rejection(
    store: Store,
) -> None:
    guard = Guard(store)
    guard.create_agent("ops", {**POLICY, "budget": 3})
    agent = guard.agent("ops")
    pay = agent.request("pay", {})
    agent.request("buy", {})
    agent.request("buy", {})  # the budget left is 1: the approval can't be paid for
    assert guard.approve("ops", pay["action_id"], "alice")["decision"] == "denied"
    settled = events(store)[-1]
    assert settled["type"] == "approval.rejected"
    assert settled["decision"]["by"] == "guard"
    assert settled["decision"]["reason"]["code"] == "insufficient_budget"


def test_a_cascade_announces_every_agent_it_ends(store: Store) -> None:
    guard = Guard(store)
    guard.create_agent("parent", POLICY)
    guard.engine.spawn("parent", "child", {**POLICY, "budget": 2}, 2)
    guard.terminate("parent", "stop", "op")
    ended = [(e["type"], e["agent_id"]) for e in events(store)]
    assert ended == [("agent.terminated", "parent"), ("agent.terminated", "child")]


def test_an_event_exists_exactly_when_its_record_does(store: Store) -> None:
    shared = SharedStore(store)  # the server's group commit: operations join one transaction
    guard = Guard(shared)
    guard.create_agent("ops", POLICY)

    def crash() -> None:
        with shared.joined() as tx:
            guard.agent("ops").request("pay", {})
            assert tx.changes  # the request joined this transaction, which now fails
            raise RuntimeError("crash before commit")

    with pytest.raises(RuntimeError):
        crash()
    assert events(store) == []
    assert guard.status("ops")["actions_pending"] == 0
