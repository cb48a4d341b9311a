"""The store contract, run against SQLite and PostgreSQL alike (``store`` is parametrized).

The PostgreSQL case needs ``GUARDKIT_TEST_PG``; see ``tests/server/pg.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from guardkit import Guard
from guardkit.errors import AgentExists, InvalidInput, NotFound, PolicyError
from guardkit.policy import Policy
from guardkit.store import ActionRow, AgentState, IdemRecord, Store, open_store
from guardkit.store.chain import Signer, verify_records
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


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'guard.db'}"
        return
    with pg_schema_url() as url:
        yield url


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url, signing_key=KEY)
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
    status = guard.status("bot")
    assert (status["spent"], status["scar_score"], status["actions_allowed"]) == (2, 4, 2)
    assert [s["severity"] for s in status["scars"]] == ["moderate", "minor"]
    assert agent.action("act-1")["input"] == {"ü": "ß", "n": [1, 2.5, None]}
    records = list(store.iter_records("bot"))
    assert verify_records(records)[1] is None
    assert guard.verify("bot")["ok"] is True
    assert guard.log("bot", after=3, limit=2)["records"][0]["seq"] == 4


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


def test_duplicates_and_unknowns(store: Store) -> None:
    guard = Guard(store)
    guard.create_agent("bot", POLICY)
    with pytest.raises(AgentExists):
        guard.create_agent("bot", POLICY)
    with pytest.raises(NotFound):
        guard.status("ghost")
    assert [a["agent_id"] for a in guard.agents()] == ["bot"]


def test_consumption_meta_and_idempotency_primitives(store: Store) -> None:
    with store.transaction() as tx:
        assert tx.insert_consumption("bot", "act-1", "bank", 1.0) is True
        assert tx.insert_consumption("bot", "act-1", "bank", 2.0) is False
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


def test_a_failed_transaction_leaves_nothing(store: Store) -> None:
    guard = Guard(store)
    guard.create_agent("bot", POLICY)

    def half_done() -> None:
        with store.transaction() as tx:
            scar = {"severity": "minor", "reason": "x", "action_id": None}
            tx.append(tx.agent("bot"), "scar", scar, 1.0)
            tx.set_meta("half", "done")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        half_done()
    assert guard.status("bot")["head"]["seq"] == 1
    with store.transaction(write=False) as tx:
        assert tx.get_meta("half") is None


def test_threads_racing_on_one_budget_never_overspend(store_url: str) -> None:
    # Separate store objects (separate connections, as separate hosts would have).
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
        guard.close()


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


def _execute(store_url: str, sql: str) -> None:
    if store_url.startswith("sqlite:///"):
        with (
            contextlib.closing(sqlite3.connect(store_url.removeprefix("sqlite:///"))) as conn,
            conn,
        ):
            conn.execute(sql)
        return
    import psycopg

    with psycopg.connect(store_url, autocommit=True) as conn:
        conn.execute(sql)  # type: ignore[arg-type]


def test_an_unreadable_stored_policy_quarantines_only_its_agent(store_url: str) -> None:
    with Guard(open_store(store_url, signing_key=KEY)) as guard:
        guard.create_agent("bad", POLICY)
        guard.create_agent("good", POLICY)
    _execute(store_url, "UPDATE agents SET policy = '{\"budget\": -1}' WHERE agent_id = 'bad'")
    with Guard(open_store(store_url, signing_key=KEY)) as guard:
        assert "stored policy of 'bad' does not load" in guard.quarantined["bad"]
        assert guard.agent("good").request("buy")["decision"] == "allowed"
        assert [a["state"] for a in guard.agents()] == ["quarantined", "active"]


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


#: A non-default value for every AgentState field a store must keep. A new field fails the test
#: below until it has a sample here, and the store keeps it.
SAMPLES = {
    "parent_id": "someone",
    "spent": 5,
    "scar_score": 2,
    "alive": False,
    "termination_reason": "done",
    "next_action": 7,
    "actions_allowed": 3,
    "actions_denied": 1,
    "actions_pending": 2,
    "tool_counts": {"buy": 3},
    "recent_allowed": [1.5, 2.25],
    "scars": [{"seq": 2, "severity": "minor", "reason": "r", "action_id": None}],
    "created_at": 12.5,
}
DERIVED = {"agent_id", "policy", "public_key", "head_seq", "head_hash", "dirty"}


def test_every_agent_field_round_trips(store: Store) -> None:
    missing = {f.name for f in dataclasses.fields(AgentState)} - DERIVED - set(SAMPLES)
    assert not missing, f"add a sample for the new AgentState fields {missing}"
    assert store.signer is not None
    state = AgentState(
        agent_id="rt",
        policy=Policy.from_dict(POLICY),
        public_key=store.signer.public_key,
        **SAMPLES,
    )  # type: ignore[arg-type]
    with store.transaction() as tx:
        tx.create(state, 1.0)
    with store.transaction(write=False) as tx:
        loaded = tx.agent("rt")
    for name in (*SAMPLES, "public_key", "head_seq", "head_hash"):
        assert getattr(loaded, name) == getattr(state, name), name
    assert loaded.policy.to_dict() == state.policy.to_dict()


ACTION_SAMPLES = {
    "tool": "buy",
    "input_json": '{"a":1}',
    "input_sha256": "0" * 64,
    "cost": 4,
    "status": "completed",
    "requested_at": 3.5,
    "requested_seq": 2,
    "outcome": "failure",
    "reason": {"code": "x"},
    "allowed_at": 4.5,
    "approved_by": "alice",
}


def test_every_action_field_round_trips(store: Store) -> None:
    names = {f.name for f in dataclasses.fields(ActionRow)} - {"agent_id", "number", "stored"}
    assert names == set(ACTION_SAMPLES), "add a sample for the new ActionRow fields"
    Guard(store).create_agent("bot", POLICY)
    row = ActionRow(agent_id="bot", number=1, **ACTION_SAMPLES)  # type: ignore[arg-type]
    with store.transaction() as tx:
        tx.put_action(row)
    with store.transaction(write=False) as tx:
        loaded = tx.get_action("bot", 1)
    assert loaded is not None
    for name in ACTION_SAMPLES:
        assert getattr(loaded, name) == getattr(row, name), name
