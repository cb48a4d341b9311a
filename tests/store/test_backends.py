"""The store contract, run against the in-memory store, SQLite and PostgreSQL alike.

The PostgreSQL case needs ``GUARDKIT_TEST_PG``; see ``tests/server/pg.py``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardkit import Guard
from guardkit.errors import AgentExists, InvalidInput, NotFound, PolicyError
from guardkit.policy import Policy
from guardkit.store import ActionRow, AgentState, IdemRecord, Store, open_store
from guardkit.store.chain import Signer, verify_records
from guardkit.store.state import OpenAction
from tests.server.pg import pg_schema_url

POLICY = {
    "budget": 50,
    "scar_limit": 10,
    "rate_limit": {"max_actions": 1000, "window_secs": 60},
    "tools": {
        "buy": {"cost": 1},
        "pay": {"cost": 1, "requires_approval": True},
        "once": {"cost": 0, "max_calls": 3},
    },
}
KEY = Signer.generate_hex()


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def any_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "memory":
        yield ":memory:"
    elif request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'guard.db'}"
    else:
        with pg_schema_url() as url:
            yield url


@pytest.fixture
def store(any_url: str) -> Iterator[Store]:
    opened = open_store(any_url, signing_key=KEY)
    yield opened
    opened.close()


def test_ledger_and_state_round_trip(store: Store) -> None:
    guard = Guard(store)
    guard.create_agent("bot", POLICY)
    agent = guard.agent("bot")
    assert agent.request("buy", {"ü": "ß", "n": [1, 2.5, None]})["decision"] == "allowed"
    assert agent.request("pay", {"amount": 7})["decision"] == "pending_approval"
    assert agent.request("rm")["reason"]["code"] == "tool_not_allowed"
    guard.approve("bot", "act-2", "alice", note="fine")
    agent.report("act-1", "failure", "oops")
    assert guard.consume("bot", "act-2", "pay", {"amount": 7})["consumed"] is True
    status = guard.status("bot")
    assert (status["spent"], status["scar_score"], status["actions_allowed"]) == (2, 4, 2)
    assert [s["severity"] for s in status["scars"]] == ["moderate", "minor"]
    assert agent.action("act-1")["input"] == {"ü": "ß", "n": [1, 2.5, None]}
    records = list(store.iter_records("bot"))
    assert records[-1].kind == "action_consumed"
    assert verify_records(records, trusted_key=Signer(KEY).public_key)[1] is None
    assert guard.verify("bot")["ok"] is True
    assert guard.log("bot", after=3, limit=2)["records"][0]["seq"] == 4


def test_duplicates_and_unknowns(store: Store) -> None:
    guard = Guard(store)
    guard.create_agent("bot", POLICY)
    with pytest.raises(AgentExists):
        guard.create_agent("bot", POLICY)
    with pytest.raises(NotFound):
        guard.status("ghost")
    assert [a["agent_id"] for a in guard.agents()] == ["bot"]


def test_meta_and_idempotency_primitives(store: Store) -> None:
    with store.transaction() as tx:
        tx.set_meta("k", "v1")
        tx.set_meta("k", "v2")
        tx.idem_put(
            IdemRecord(
                key="i", status="IN_PROGRESS", payload_hash="h", owner="o", lease_expires=5.0
            )
        )
        tx.idem_put(
            IdemRecord(
                key="i",
                status="COMPLETED",
                payload_hash="h",
                owner="o",
                lease_expires=5.0,
                result_json="{}",
                action_id="act-1",
            )
        )
    with store.transaction(write=False) as tx:
        assert tx.get_meta("k") == "v2"
        assert tx.get_meta("missing") is None
        record = tx.idem_get("i")
        assert record is not None
        assert (record.status, record.result_json, record.action_id) == ("COMPLETED", "{}", "act-1")
    with store.transaction() as tx:
        tx.idem_delete("i")
        assert tx.idem_get("i") is None


def test_a_failed_transaction_leaves_nothing_on_disk_or_in_memory(store: Store) -> None:
    guard = Guard(store)
    guard.create_agent("bot", POLICY)
    guard.agent("bot").request("buy")
    before = guard.status("bot")

    def half_done() -> None:
        with store.transaction() as tx:
            scar = {"severity": "fatal", "reason": "x", "action_id": None}
            tx.append(tx.agent("bot"), "scar", scar, 1.0)
            assert tx.agent("bot").scar_score > 0  # folded at once...
            tx.set_meta("half", "done")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        half_done()
    assert guard.status("bot") == before  # ...and forgotten with the rollback
    with store.transaction(write=False) as tx:
        assert tx.get_meta("half") is None
    assert guard.agent("bot").request("buy")["action_id"] == "act-2"
    assert guard.verify("bot")["ok"]


@pytest.mark.parametrize("after", [2**63, -(2**63) - 1, 10**30])
def test_log_after_beyond_64_bits_is_invalid_input(store: Store, after: int) -> None:
    guard = Guard(store)
    guard.create_agent("bot", POLICY)
    with pytest.raises(InvalidInput, match="after must be a sequence number"):
        guard.log("bot", after=after)
    assert guard.log("bot", after=2**63 - 1)["records"] == []


@pytest.mark.parametrize("cost", [2**63, 2.0**64, 10**30])
def test_costs_beyond_64_bits_are_invalid_input(store: Store, cost: float) -> None:
    guard = Guard(store)
    guard.create_agent("bot", {**POLICY, "budget": 2**63 - 1})
    with pytest.raises(InvalidInput, match="cost must be at most"):
        guard.agent("bot").request("buy", cost=cost)
    assert guard.agent("bot").request("buy", cost=2**62)["remaining"] == 2**63 - 1 - 2**62


def test_a_budget_beyond_64_bits_is_a_policy_error(store: Store) -> None:
    with pytest.raises(PolicyError, match="budget: must be at most"):
        Guard(store).create_agent("bot", {**POLICY, "budget": 2**63})


def test_the_spawn_tool_name_is_reserved(store: Store) -> None:
    guard = Guard(store)
    guard.create_agent("bot", {**POLICY, "tools": {"guardkit.spawn": {"cost": 0}}})
    with pytest.raises(InvalidInput, match="use spawn"):
        guard.agent("bot").request("guardkit.spawn", {"child_id": "victim", "budget": 0})


# -- durable backends -------------------------------------------------------------------------


def test_reopening_keeps_everything(store_url: str) -> None:
    with Guard(open_store(store_url, signing_key=KEY)) as guard:
        guard.create_agent("bot", POLICY)
        guard.agent("bot").request("buy")
        token = guard.token("bot")
    with Guard(open_store(store_url, signing_key=KEY)) as guard:
        assert guard.quarantined == {}
        assert guard.status("bot")["spent"] == 1
        assert guard.token("bot") == token
        assert guard.agent("bot").request("buy")["action_id"] == "act-2"


def test_threads_racing_on_one_budget_never_overspend(store_url: str) -> None:
    # Separate store objects (separate connections, as separate hosts would have): each one
    # folds in what the others appended before it decides.
    guards = [Guard(open_store(store_url, signing_key=KEY)) for _ in range(4)]
    guards[0].create_agent("bot", POLICY)
    decisions: list[str] = []
    lock = threading.Lock()

    def spend(guard: Guard) -> None:
        agent = guard.agent("bot")
        for _ in range(20):
            decision = agent.request("buy")["decision"]
            with lock:
                decisions.append(decision)

    threads = [threading.Thread(target=spend, args=(g,)) for g in guards]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    status = guards[0].status("bot")
    assert decisions.count("allowed") == 50
    assert (status["spent"], status["remaining"], status["alive"]) == (50, 0, False)
    assert guards[0].verify("bot")["ok"] is True
    for guard in guards:
        assert guard.status("bot") == status
        assert guard.quarantined == {}
        guard.close()


def test_the_rate_window_survives_reopening_and_other_connections(store_url: str) -> None:
    rated = {**POLICY, "rate_limit": {"max_actions": 3, "window_secs": 3600}}
    first, second = (Guard(open_store(store_url, signing_key=KEY)) for _ in range(2))
    first.create_agent("rated", rated)
    decisions = [first.agent("rated").request("buy")["decision"] for _ in range(2)]
    decisions.append(second.agent("rated").request("buy")["decision"])
    first.close()
    second.close()
    with Guard(open_store(store_url, signing_key=KEY)) as reopened:
        late = reopened.agent("rated").request("buy")
    assert decisions == ["allowed"] * 3
    assert late["reason"]["code"] == "rate_limited"


def _exercise(guard: Guard) -> None:
    """Give every AgentState field a value other than its default."""
    guard.create_agent("root", POLICY)
    root = guard.agent("root")
    root.request("buy")
    root.request("once")
    root.request("pay", {"to": "x"})  # stays pending
    paid = root.request("pay", {"to": "y"})
    guard.approve("root", paid["action_id"], "alice")
    guard.consume("root", paid["action_id"], "pay", {"to": "y"})
    root.request("rm")  # denied, scarred
    guard.spawn("root", "leaf", {**POLICY, "budget": 5}, 5)
    guard.agent("leaf").request("buy")
    guard.terminate("leaf", "done", "alice")


def _fields(state: AgentState) -> dict[str, Any]:
    return {f.name: getattr(state, f.name) for f in dataclasses.fields(state) if f.name != "policy"}


def test_every_state_field_is_what_the_ledger_replays_to(store_url: str) -> None:
    """The state a writer holds = a fresh replay = another process's catch-up, field by field."""
    late = Guard(open_store(store_url, signing_key=KEY))  # opened before anything was written
    with Guard(open_store(store_url, signing_key=KEY)) as writer:
        _exercise(writer)
        held = {a: writer.store.states[a] for a in ("root", "leaf")}
    assert {f.name for f in dataclasses.fields(AgentState)} - set(_fields(held["root"])) == {
        "policy"
    }
    defaults = AgentState(agent_id="x", policy=held["root"].policy)
    unchanged = {
        name
        for name, value in _fields(defaults).items()
        if name not in ("agent_id", "dirty")
        and all(_fields(s)[name] == value for s in held.values())
    }
    assert unchanged == set(), f"the exercise leaves {unchanged} at their defaults"
    with Guard(open_store(store_url, signing_key=KEY)) as fresh:
        for agent_id, state in held.items():
            fresh.status(agent_id)
            assert _fields(fresh.store.states[agent_id]) == _fields(state)
            assert fresh.store.states[agent_id].policy.to_dict() == state.policy.to_dict()
    for agent_id, state in held.items():
        late.status(agent_id)  # folds in everything the writer appended
        assert _fields(late.store.states[agent_id]) == _fields(state)
    late.close()


# -- copies -------------------------------------------------------------------------------------

#: A non-default value for every AgentState field. A new field fails the test below until it
#: has a sample here and ``copy`` keeps it.
STATE_SAMPLES: dict[str, Any] = {
    "parent_id": "someone",
    "public_key": "ab" * 32,
    "spent": 5,
    "scar_score": 2,
    "alive": False,
    "termination_reason": "done",
    "next_action": 7,
    "head_seq": 9,
    "head_hash": "cd" * 32,
    "actions_allowed": 3,
    "actions_denied": 1,
    "actions_pending": 2,
    "tool_counts": {"buy": 3},
    "recent_allowed": [1.5, 2.25],
    "scars": [{"seq": 2, "severity": "minor", "reason": "r", "action_id": None}],
    "open": {6: OpenAction("pay", 1, 3.5, 4, pending=True), 7: OpenAction("buy", 2, 4.5, 8)},
    "children": ["kid"],
    "statuses": bytearray([0, 5 | 8 | 16, 4, 2]),
    "late": {3: 11},
    "dirty": True,
}


def test_every_state_field_survives_its_copy() -> None:
    names = {f.name for f in dataclasses.fields(AgentState)} - {"agent_id", "policy"}
    assert names == set(STATE_SAMPLES), "add a sample for the new AgentState fields"
    state = AgentState(agent_id="x", policy=Policy.from_dict(POLICY), **STATE_SAMPLES)
    copy = state.copy()
    assert _fields(copy) == _fields(state)
    assert copy.policy is state.policy
    for name, value in STATE_SAMPLES.items():
        if isinstance(value, (dict, list, set, bytearray)):
            assert getattr(copy, name) is not getattr(state, name), f"{name} is shared"
    copy.open[6].pending = False
    assert state.open[6].pending is True


ACTION_SAMPLES: dict[str, Any] = {
    "tool": "buy",
    "input_json": '{"a":1}',
    "cost": 4,
    "status": "completed",
    "requested_at": 3.5,
    "requested_seq": 2,
    "outcome": "failure",
    "reason": {"code": "x"},
    "allowed_at": 4.5,
    "approved_by": "alice",
    "consumed": True,
    "approval_reason": {"code": "untrusted_provenance", "argument": "to"},
    "_sha": "0" * 64,
}


def test_every_action_field_survives_its_copy() -> None:
    names = {f.name for f in dataclasses.fields(ActionRow)} - {"agent_id", "number"}
    assert names == set(ACTION_SAMPLES), "add a sample for the new ActionRow fields"
    row = ActionRow(agent_id="bot", number=1, **ACTION_SAMPLES)
    copy = row.copy()
    assert dataclasses.asdict(copy) == dataclasses.asdict(row)
