"""Decisions, check order, budgets, scars, termination and approvals (LINEAGE §5-§10)."""

from __future__ import annotations

import math

import pytest

from guardkit import (
    AgentExists,
    AlreadyTerminated,
    Forbidden,
    InvalidInput,
    InvalidState,
    NotFound,
    UnknownAction,
)

BASIC = {
    "budget": 20,
    "scar_limit": 10,
    "tools": {
        "llm_turn": {"cost": 1, "max_calls": 3},
        "search": {"cost": 0},
        "pay": {"cost": 2, "requires_approval": True},
    },
}


def test_allowed_decision_shape(make_agent) -> None:
    agent = make_agent(BASIC)
    decision = agent.request("llm_turn", {})
    assert decision == {"decision": "allowed", "action_id": "act-1", "cost": 1, "remaining": 19}


def test_action_ids_count_every_request(make_agent) -> None:
    agent = make_agent(BASIC)
    ids = [
        agent.request("search")["action_id"],
        agent.request("not_listed")["action_id"],
        agent.request("pay", {"x": 1})["action_id"],
        agent.request("search")["action_id"],
    ]
    assert ids == ["act-1", "act-2", "act-3", "act-4"]


def test_unlisted_tool_is_denied_with_a_moderate_scar(make_agent) -> None:
    agent = make_agent(BASIC)
    decision = agent.request("rm_rf", {"path": "/"})
    assert decision == {
        "decision": "denied",
        "action_id": "act-1",
        "reason": {"code": "tool_not_allowed", "tool": "rm_rf"},
    }
    status = agent.status()
    assert status["scar_score"] == 3
    assert status["scars"][0]["severity"] == "moderate"
    assert status["scars"][0]["reason"] == "tool 'rm_rf' is not allowed"
    assert status["scars"][0]["action_id"] == "act-1"
    assert status["actions_denied"] == 1


def test_default_rule_covers_unlisted_tools(make_agent) -> None:
    agent = make_agent({"budget": 5, "tools": {}, "default_rule": {"cost": 2}})
    assert agent.request("anything")["cost"] == 2
    assert agent.status()["scar_score"] == 0


def test_declared_cost_raises_never_lowers(make_agent) -> None:
    agent = make_agent({"budget": 100, "tools": {"pay": {"cost": 5}}})
    assert agent.request("pay", {}, cost=40)["cost"] == 40
    assert agent.request("pay", {}, cost=1)["cost"] == 5
    assert agent.request("pay", {}, cost=7.0)["cost"] == 7
    assert agent.status()["spent"] == 52


@pytest.mark.parametrize("cost", [-1, math.nan, math.inf, -math.inf, "5", True, 2.5, [1]])
def test_bad_costs_are_refused_and_change_nothing(make_agent, cost) -> None:
    agent = make_agent(BASIC)
    before = agent.status()
    with pytest.raises(InvalidInput):
        agent.request("search", {}, cost=cost)
    assert agent.status() == before


@pytest.mark.parametrize(
    "payload",
    [{"x": math.nan}, {"x": {1, 2}}, {1: "int key"}, {"x": object()}, {"x": math.inf}],
)
def test_non_json_input_is_refused(make_agent, payload) -> None:
    agent = make_agent(BASIC)
    before = agent.status()
    with pytest.raises(InvalidInput):
        agent.request("search", payload)
    assert agent.status() == before


def test_oversized_input_is_refused(clock) -> None:
    from guardkit import Guard

    with Guard(":memory:", clock=clock, max_input_bytes=100) as g:
        g.create_agent("a", BASIC)
        agent = g.agent("a")
        with pytest.raises(InvalidInput, match="limit"):
            agent.request("search", {"text": "x" * 200})
        assert agent.request("search", {"text": "x" * 50})["decision"] == "allowed"


def test_input_is_recorded_verbatim_with_its_digest(make_agent) -> None:
    from guardkit._canonical import input_digest

    agent = make_agent(BASIC)
    payload = {"query": "naïve café", "n": [1, 2.5, None, True]}
    action_id = agent.request("search", payload)["action_id"]
    action = agent.action(action_id)
    assert action["input"] == payload
    assert action["input_sha256"] == input_digest(payload)
    assert action["status"] == "allowed"
    assert action["outcome"] is None


def test_budget_exhaustion_terminates(make_agent) -> None:
    agent = make_agent({"budget": 3, "tools": {"t": {"cost": 1}, "big": {"cost": 2}}})
    agent.request("t")
    denied = agent.request("t", cost=5)
    assert denied["reason"] == {"code": "insufficient_budget", "cost": 5, "remaining": 2}
    assert agent.status()["scar_score"] == 0  # running low is not misbehaviour
    last = agent.request("big")
    assert last["remaining"] == 0
    status = agent.status()
    assert status["alive"] is False
    assert status["termination_reason"] == "budget exhausted"
    assert agent.request("t")["reason"] == {"code": "terminated", "reason": "budget exhausted"}


def test_lineage_quirk_budget_zero_and_free_tool_terminates(make_agent) -> None:
    # Kept for compatibility; documented in docs/compatibility.md.
    agent = make_agent({"budget": 0, "tools": {"free": {"cost": 0}}})
    assert agent.request("free")["decision"] == "allowed"
    assert agent.status()["alive"] is False


def test_budget_is_never_refunded(make_agent) -> None:
    agent = make_agent(BASIC)
    action_id = agent.request("llm_turn")["action_id"]
    agent.report(action_id, "failure", "model API 500")
    assert agent.status()["spent"] == 1


def test_call_cap_counts_allowed_calls_only(make_agent) -> None:
    agent = make_agent({"budget": 2, "tools": {"t": {"cost": 1, "max_calls": 2}, "x": {"cost": 0}}})
    agent.request("t", cost=5)  # denied: insufficient budget, does not count
    agent.request("t")
    agent.request("x")
    agent.request("t")  # allowed; budget is now 0 -> terminated
    assert agent.status()["alive"] is False


def test_call_cap_denial_scars_minor(make_agent) -> None:
    agent = make_agent(BASIC)
    for _ in range(3):
        assert agent.request("llm_turn")["decision"] == "allowed"
    decision = agent.request("llm_turn")
    assert decision["reason"] == {"code": "tool_call_limit", "tool": "llm_turn", "max_calls": 3}
    scars = agent.status()["scars"]
    assert [(s["severity"], s["reason"]) for s in scars] == [
        ("minor", "tool 'llm_turn' reached its limit of 3 calls")
    ]


def test_check_order_terminated_first(make_agent, guard) -> None:
    agent = make_agent(BASIC)
    guard.terminate(agent.agent_id, "operator says stop", "alice")
    decision = agent.request("unlisted_tool")
    assert decision["reason"] == {"code": "terminated", "reason": "operator says stop"}
    assert agent.status()["scar_score"] == 0


def test_check_order_cap_before_rate_before_budget(make_agent, clock) -> None:
    agent = make_agent(
        {
            "budget": 3,
            "rate_limit": {"max_actions": 1, "window_secs": 10},
            "tools": {"t": {"cost": 1, "max_calls": 1}, "u": {"cost": 1}},
        }
    )
    agent.request("t")
    assert agent.request("t", cost=100)["reason"]["code"] == "tool_call_limit"
    assert agent.request("u", cost=100)["reason"]["code"] == "rate_limited"
    clock.advance(11)
    assert agent.request("u", cost=100)["reason"]["code"] == "insufficient_budget"


def test_sliding_window_rate_limit(make_agent, clock) -> None:
    agent = make_agent(
        {
            "budget": 100,
            "rate_limit": {"max_actions": 2, "window_secs": 60},
            "tools": {"t": {"cost": 0}},
        }
    )
    agent.request("t")
    clock.advance(30)
    agent.request("t")
    denied = agent.request("t")
    assert denied["reason"] == {"code": "rate_limited", "max_actions": 2, "window_secs": 60}
    assert agent.status()["scars"][-1]["reason"] == "rate limit of 2 actions per 60s exceeded"
    clock.advance(30)  # the first allowed action is now exactly window_secs old: dropped
    assert agent.request("t")["decision"] == "allowed"
    assert agent.request("t")["decision"] == "denied"


def test_denied_and_pending_do_not_count_towards_rate(make_agent, clock) -> None:
    agent = make_agent(
        {
            "budget": 100,
            "rate_limit": {"max_actions": 1, "window_secs": 60},
            "tools": {"t": {"cost": 0}, "p": {"cost": 0, "requires_approval": True}},
        }
    )
    agent.request("p")
    agent.request("nope")
    assert agent.request("t")["decision"] == "allowed"


def test_scar_limit_terminates(make_agent) -> None:
    agent = make_agent({"budget": 10, "scar_limit": 6, "tools": {}})
    agent.request("a")
    assert agent.status()["alive"] is True
    agent.request("b")
    status = agent.status()
    assert status["alive"] is False
    assert status["termination_reason"] == "scar limit reached (6 >= 6)"


def test_scar_weights_and_fatal(make_agent, guard) -> None:
    agent = make_agent({"budget": 10, "scar_limit": 1000, "tools": {}})
    guard.scar(agent.agent_id, "minor", "m")
    guard.scar(agent.agent_id, "moderate", "m")
    guard.scar(agent.agent_id, "severe", "m")
    assert agent.status()["scar_score"] == 14
    guard.scar(agent.agent_id, "fatal", "ate the database")
    status = agent.status()
    assert status["alive"] is False
    assert status["scar_score"] == 2**32 - 1


def test_outcomes(make_agent, guard) -> None:
    agent = make_agent(BASIC)
    ok = agent.request("search")["action_id"]
    status = agent.report(ok, "success")
    assert status["agent_id"] == agent.agent_id
    assert agent.action(ok)["status"] == "completed"
    assert agent.action(ok)["outcome"] == "success"
    with pytest.raises(InvalidState):
        agent.report(ok, "failure", "again")
    bad = agent.request("search")["action_id"]
    agent.report(bad, "failure", "TimeoutError: slow")
    assert agent.status()["scars"][-1]["reason"] == "action failed: TimeoutError: slow"
    harm = agent.request("search")["action_id"]
    with pytest.raises(Forbidden):
        agent.report(harm, "harmful", "I confess")
    guard.report_harm(agent.agent_id, harm, "deleted prod")
    assert agent.status()["scars"][-1] == {
        "seq": agent.status()["scars"][-1]["seq"],
        "severity": "severe",
        "reason": "action caused harm: deleted prod",
        "action_id": harm,
    }
    assert agent.status()["scar_score"] == 11
    assert agent.status()["alive"] is False


def test_report_requires_an_allowed_action(make_agent) -> None:
    agent = make_agent(BASIC)
    pending = agent.request("pay")["action_id"]
    denied = agent.request("nope")["action_id"]
    with pytest.raises(InvalidState):
        agent.report(pending, "success")
    with pytest.raises(InvalidState):
        agent.report(denied, "success")
    with pytest.raises(UnknownAction):
        agent.report("act-99", "success")
    with pytest.raises(UnknownAction):
        agent.report("bogus", "success")
    with pytest.raises(InvalidInput):
        agent.report(pending, "meh")


def test_approval_flow(make_agent, guard) -> None:
    agent = make_agent(BASIC)
    pending = agent.request("pay", {"to": "ACME", "amount": 5}, cost=5)
    assert pending == {"decision": "pending_approval", "action_id": "act-1"}
    assert agent.status()["spent"] == 0  # pending reserves nothing
    assert agent.status()["actions_pending"] == 1
    queue = guard.pending(agent.agent_id)
    assert queue[0]["action"] == {
        "action_id": "act-1",
        "tool": "pay",
        "input": {"to": "ACME", "amount": 5},
        "cost": 5,
    }
    approved = guard.approve(agent.agent_id, "act-1", "alice", note="vendor verified")
    assert approved == {"decision": "allowed", "action_id": "act-1", "cost": 5, "remaining": 15}
    assert agent.action("act-1")["approved_by"] == "alice"
    allowed_records = [
        r for r in guard.log(agent.agent_id)["records"] if r["kind"] == "action_allowed"
    ]
    assert allowed_records[-1]["payload"] == {
        "action_id": "act-1",
        "approved_by": "alice",
        "note": "vendor verified",
    }
    with pytest.raises(InvalidState):
        guard.approve(agent.agent_id, "act-1", "alice")
    with pytest.raises(UnknownAction):
        guard.approve(agent.agent_id, "act-7", "alice")


def test_approval_reruns_checks(make_agent, guard, clock) -> None:
    agent = make_agent(
        {
            "budget": 10,
            "rate_limit": {"max_actions": 1, "window_secs": 60},
            "tools": {"p": {"cost": 5, "requires_approval": True}, "t": {"cost": 1}},
        }
    )
    agent.request("p")
    agent.request("t")  # fills the rate window
    decision = guard.approve(agent.agent_id, "act-1", "alice")
    assert decision["reason"]["code"] == "rate_limited"
    assert agent.status()["scars"][-1]["severity"] == "minor"  # scarred at approval time
    assert agent.action("act-1")["status"] == "denied"
    clock.advance(61)
    assert agent.request("p", cost=6)["decision"] == "pending_approval"  # act-3, 9 remain
    clock.advance(61)
    agent.request("t", cost=4)  # 5 remain
    clock.advance(61)
    decision = guard.approve(agent.agent_id, "act-3", "alice")
    assert decision["reason"] == {"code": "insufficient_budget", "cost": 6, "remaining": 5}


def test_approving_after_termination_is_a_terminated_denial(make_agent, guard) -> None:
    agent = make_agent(BASIC)
    agent.request("pay")
    guard.terminate(agent.agent_id, "stop", "bob")
    decision = guard.approve(agent.agent_id, "act-1", "alice")
    assert decision["reason"] == {"code": "terminated", "reason": "stop"}


def test_reject_with_and_without_scar(make_agent, guard) -> None:
    agent = make_agent(BASIC)
    agent.request("pay")
    agent.request("pay")
    first = guard.reject(agent.agent_id, "act-1", "alice", "not today")
    assert first == {
        "decision": "denied",
        "action_id": "act-1",
        "reason": {"code": "rejected", "by": "alice", "reason": "not today"},
    }
    assert agent.status()["scar_score"] == 0
    guard.reject(agent.agent_id, "act-2", "alice", "IBAN mismatch", scar="moderate")
    assert agent.status()["scars"][-1]["reason"] == "rejected by alice: IBAN mismatch"
    assert agent.action("act-2")["reason"]["code"] == "rejected"
    with pytest.raises(InvalidState):
        guard.reject(agent.agent_id, "act-2", "alice", "again")
    with pytest.raises(InvalidInput):
        guard.reject(agent.agent_id, "act-2", "alice", "x", scar="tiny")


def test_wait_for_approval_wakes_on_approval_in_process(make_agent, guard) -> None:
    import threading

    agent = make_agent(BASIC)
    action_id = agent.request("pay")["action_id"]
    timer = threading.Timer(0.05, guard.approve, args=(agent.agent_id, action_id, "alice"))
    timer.start()
    assert agent.wait_for_approval(action_id, timeout=10, poll=30) == "allowed"
    timer.join()


def test_wait_for_approval_times_out(make_agent) -> None:
    from guardkit import ApprovalTimeout

    agent = make_agent(BASIC)
    action_id = agent.request("pay")["action_id"]
    with pytest.raises(TimeoutError):
        agent.wait_for_approval(action_id, timeout=0.05, poll=0.01)
    with pytest.raises(ApprovalTimeout):
        agent.wait_for_approval(action_id, timeout=0, poll=0.01)


def test_authorize(make_agent, guard) -> None:
    from guardkit import ActionDenied

    agent = make_agent(BASIC)
    assert agent.authorize("search") == "act-1"
    with pytest.raises(ActionDenied) as info:
        agent.authorize("nope")
    assert info.value.reason == {"code": "tool_not_allowed", "tool": "nope"}
    with pytest.raises(ActionDenied) as info:
        agent.authorize("pay", wait_for_approval=False)
    assert info.value.reason == {"code": "pending_approval"}


def test_terminate_once(make_agent, guard) -> None:
    agent = make_agent(BASIC)
    status = guard.terminate(agent.agent_id, "enough", "alice")
    assert status["alive"] is False
    assert status["termination_reason"] == "enough"
    with pytest.raises(AlreadyTerminated) as info:
        guard.terminate(agent.agent_id, "again", "alice")
    assert info.value.status == 409


def test_operator_scar_checks_action(make_agent, guard) -> None:
    agent = make_agent(BASIC)
    with pytest.raises(UnknownAction):
        guard.scar(agent.agent_id, "minor", "x", action_id="act-3")
    with pytest.raises(InvalidInput):
        guard.scar(agent.agent_id, "huge", "x")
    agent.request("search")
    assert guard.scar(agent.agent_id, "minor", "odd", action_id="act-1")["scar_score"] == 1


def test_unknown_agents_and_bad_ids(guard) -> None:
    with pytest.raises(NotFound) as info:
        guard.status("ghost")
    assert info.value.status == 404
    assert info.value.code == "not_found"
    with pytest.raises(NotFound):
        guard.agent("ghost")
    with pytest.raises(InvalidInput):
        guard.create_agent("bad id!", BASIC)
    with pytest.raises(InvalidInput):
        guard.create_agent("x" * 65, BASIC)
    guard.create_agent("a", BASIC)
    with pytest.raises(AgentExists):
        guard.create_agent("a", BASIC)


def test_bad_tool_names(make_agent) -> None:
    agent = make_agent(BASIC)
    for name in ("", "x" * 129, 5):
        with pytest.raises(InvalidInput):
            agent.request(name)


def test_approval_ttl_expires(make_agent, guard, clock) -> None:
    agent = make_agent(
        {"budget": 10, "approval_ttl": 60, "tools": {"p": {"cost": 1, "requires_approval": True}}}
    )
    agent.request("p")
    agent.request("p")
    clock.advance(30)
    assert guard.approve(agent.agent_id, "act-2", "alice")["decision"] == "allowed"
    clock.advance(31)
    assert agent.action("act-1")["status"] == "denied"
    assert agent.action("act-1")["reason"] == {"code": "approval_expired", "ttl": 60}
    assert guard.pending(agent.agent_id) == []
    with pytest.raises(InvalidState):
        guard.approve(agent.agent_id, "act-1", "alice")
    agent.request("p")
    clock.advance(100)
    expired = guard.approve(agent.agent_id, "act-3", "alice")
    assert expired["reason"]["code"] == "approval_expired"
    assert agent.status()["scar_score"] == 0


def test_spawn_narrows_carves_and_cascades(guard) -> None:
    from guardkit import PolicyError

    guard.create_agent("parent", BASIC)
    with pytest.raises(PolicyError):
        guard.spawn("parent", "child", {"budget": 1, "tools": {"rm": {"cost": 0}}}, budget=5)
    with pytest.raises(InvalidState):
        guard.spawn("parent", "child", {"budget": 1, "tools": {"search": {"cost": 0}}}, budget=50)
    created = guard.spawn(
        "parent",
        "child",
        {"budget": 999, "scar_limit": 5, "tools": {"search": {"cost": 0}}},
        budget=8,
    )
    assert created["agent"]["budget"] == 8
    assert created["agent"]["parent_id"] == "parent"
    assert created["token"].startswith("agt_child.")
    parent = guard.status("parent")
    assert parent["spent"] == 8
    child = guard.agent("child")
    assert child.request("search")["decision"] == "allowed"
    assert child.request("pay")["reason"]["code"] == "tool_not_allowed"
    guard.scar("child", "severe", "exfiltrated data")
    parent = guard.status("parent")
    assert parent["scars"][-1]["severity"] == "moderate"
    assert parent["scars"][-1]["reason"] == "sub-agent child: exfiltrated data"
    guard.create_agent("p2", BASIC)
    guard.spawn("p2", "c2", {"budget": 1, "tools": {"search": {"cost": 0}}}, budget=2)
    guard.spawn("c2", "g2", {"budget": 1, "tools": {"search": {"cost": 0}}}, budget=1)
    guard.terminate("p2", "shut down", "alice")
    assert guard.status("c2")["alive"] is False
    assert guard.status("g2")["termination_reason"] == (
        "parent c2 terminated: parent p2 terminated: shut down"
    )


def test_consume_once_with_exact_input(make_agent, guard) -> None:
    from guardkit import AlreadyConsumed, ConsumeMismatch

    agent = make_agent(BASIC)
    payment = {"invoice": "INV-1", "iban": "DE89370400440532013000", "amount": 7}
    action_id = agent.request("pay", payment, cost=7)["action_id"]
    with pytest.raises(InvalidState):
        guard.consume(agent.agent_id, action_id, "pay", payment)  # still pending
    guard.approve(agent.agent_id, action_id, "alice")
    with pytest.raises(ConsumeMismatch):
        guard.consume(agent.agent_id, action_id, "search", payment)
    with pytest.raises(ConsumeMismatch):
        guard.consume(agent.agent_id, action_id, "pay", {**payment, "iban": "GB00EVIL"})
    with pytest.raises(ConsumeMismatch):
        guard.consume(agent.agent_id, action_id, "pay", {**payment, "amount": 7.0})
    with pytest.raises(ConsumeMismatch):
        guard.consume(agent.agent_id, action_id, "pay", payment, cost=8)
    with pytest.raises(UnknownAction):
        guard.consume(agent.agent_id, "act-42", "pay", payment)
    consumed = guard.consume(agent.agent_id, action_id, "pay", dict(payment), cost=7)
    assert consumed["consumed"] is True
    assert consumed["status"] == "allowed"
    with pytest.raises(AlreadyConsumed):
        guard.consume(agent.agent_id, action_id, "pay", payment)


def test_tokens_are_lineage_shaped_and_stable(guard) -> None:
    created = guard.create_agent("bot", BASIC)
    token = created["token"]
    assert token.startswith("agt_bot.")
    assert len(token.split(".")[1]) == 64
    assert guard.token("bot") == token


def test_agents_listing(guard) -> None:
    guard.create_agent("b", BASIC)
    guard.create_agent("a", BASIC)
    listing = guard.agents()
    assert [item["agent_id"] for item in listing] == ["a", "b"]
    assert listing[0]["state"] == "active"
    assert listing[0]["status"]["budget"] == 20


def test_log_paging(make_agent, guard) -> None:
    agent = make_agent(BASIC)
    for _ in range(3):
        agent.request("search")
    page = guard.log(agent.agent_id, after=1, limit=2)
    assert [r["seq"] for r in page["records"]] == [2, 3]
    assert page["head"]["seq"] == 7
    with pytest.raises(InvalidInput):
        guard.log(agent.agent_id, limit=0)
    with pytest.raises(InvalidInput):
        guard.log(agent.agent_id, limit=5001)


def test_a_check_can_ask_a_human_for_one_call(make_agent, guard) -> None:
    """guardkit: ``approval_reason`` sends one call of a tool without requires_approval to a
    human; the ledger carries why, and a denial still wins over it."""
    agent = make_agent(BASIC)
    why = {"code": "untrusted_provenance", "argument": "to", "sources": ["untrusted:web:act-9"]}
    decision = agent.request_approval("search", {"q": "x"}, None, why)
    assert decision == {"decision": "pending_approval", "action_id": "act-1"}
    assert agent.action("act-1")["approval_reason"] == why
    (item,) = guard.pending(agent.agent_id)
    assert item["action"]["approval_reason"] == why
    records = guard.log(agent.agent_id)["records"]
    assert records[-1]["kind"] == "approval_required"
    assert records[-1]["payload"] == {"action_id": "act-1", "reason": why}
    assert guard.approve(agent.agent_id, "act-1", "alice")["decision"] == "allowed"
    assert agent.action("act-1")["approval_reason"] == why  # kept for the audit
    # the policy's own approvals carry no reason; an unlisted tool is still denied
    agent.request("pay", {})
    assert "approval_reason" not in guard.pending(agent.agent_id)[0]["action"]
    assert agent.request_approval("rm", {}, None, why)["decision"] == "denied"
    # plain requests read exactly as Lineage's
    assert "approval_reason" not in agent.action("act-2")
    with pytest.raises(InvalidInput):
        agent.request_approval("search", {}, None, {"argument": "no code"})  # type: ignore[typeddict-item]


def test_an_action_decided_in_the_same_transaction_reads_back(guard, clock) -> None:
    """A write that expires approvals and then reads an older action sees its own records."""
    guard.create_agent(
        "ttl",
        {"budget": 10, "approval_ttl": 5, "tools": {"p": {"cost": 1, "requires_approval": True}}},
    )
    agent = guard.agent("ttl")
    agent.request("p")
    agent.request("p")
    guard.approve("ttl", "act-1", "alice")
    guard.store.actions.clear()  # as after a restart: nothing read yet
    clock.advance(10)
    assert agent.action("act-1")["status"] == "allowed"  # act-2 expires in the same write
    assert agent.action("act-2")["reason"] == {"code": "approval_expired", "ttl": 5}
    assert guard.quarantined == {}
