"""The ``AgentGuard`` contract: ``LocalAgent`` and ``AgentClient`` behave the same, call by call."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from guardkit import (
    ActionDenied,
    AgentGuard,
    ApprovalTimeout,
    Forbidden,
    InvalidInput,
    InvalidState,
    NotFound,
    UnknownAction,
)
from guardkit._agent_api import AgentConveniences

Pair = tuple[Any, Any]


def test_is_an_agent_guard(guard_pair: Pair) -> None:
    agent, _ = guard_pair
    assert isinstance(agent, AgentGuard)
    assert isinstance(agent, AgentConveniences)


def test_decisions_have_lineage_shapes(guard_pair: Pair) -> None:
    agent, _ = guard_pair
    assert agent.request("llm_turn", {"n": 1}, cost=2) == {
        "decision": "allowed",
        "action_id": "act-1",
        "cost": 2,
        "remaining": 8,
    }
    assert agent.request("shell", {"cmd": "rm -rf /"}) == {
        "decision": "denied",
        "action_id": "act-2",
        "reason": {"code": "tool_not_allowed", "tool": "shell"},
    }
    assert agent.request("pay", {"amount": 5}) == {
        "decision": "pending_approval",
        "action_id": "act-3",
    }
    assert agent.request("llm_turn", cost=99)["reason"] == {
        "code": "insufficient_budget",
        "cost": 99,
        "remaining": 8,
    }


def test_action_and_status_shapes(guard_pair: Pair) -> None:
    agent, _ = guard_pair
    agent.request("read", {"path": "/etc/hosts"})
    action = agent.action("act-1")
    assert {k: action[k] for k in ("action_id", "tool", "input", "cost", "status", "outcome")} == {
        "action_id": "act-1",
        "tool": "read",
        "input": {"path": "/etc/hosts"},
        "cost": 0,
        "status": "allowed",
        "outcome": None,
    }
    status = agent.status()
    assert (status["alive"], status["spent"], status["actions_allowed"]) == (True, 0, 1)
    assert status["head"]["seq"] == 3


def test_report_outcomes(guard_pair: Pair) -> None:
    agent, _ = guard_pair
    agent.request("read")
    agent.request("read")
    assert agent.report("act-1", "success")["scar_score"] == 0
    assert agent.report("act-2", "failure", "disk full")["scars"][0]["reason"] == (
        "action failed: disk full"
    )
    assert agent.action("act-1")["status"] == "completed"
    with pytest.raises(InvalidState) as twice:
        agent.report("act-1", "success")
    assert (twice.value.status, twice.value.code) == (409, "invalid_state")
    with pytest.raises(UnknownAction):
        agent.report("act-9", "success")
    with pytest.raises(UnknownAction):
        agent.action("act-9")


def test_a_failure_that_was_not_the_agents_leaves_no_scar(guard_pair: Pair) -> None:
    agent, operator = guard_pair
    for _ in range(4):
        agent.request("read")
    assert agent.report("act-1", "failure", "upstream timed out", fault="upstream")["scars"] == []
    assert agent.report("act-2", "failure", "client cancelled", fault="caller")["scars"] == []
    with pytest.raises(InvalidInput, match="fault='upstream' is for a failure"):
        agent.report("act-3", "success", fault="upstream")
    with pytest.raises(InvalidInput, match="fault must be agent, upstream or caller"):
        agent.report("act-3", "failure", fault="nobody")
    assert agent.report("act-3", "failure", "bad arguments", fault="agent")["scar_score"] == 1
    assert agent.action("act-1")["outcome"] == "failure"
    outcomes = [
        r["payload"] for r in operator.log(agent.agent_id)["records"] if r["kind"] == "outcome"
    ]
    assert [o.get("fault") for o in outcomes] == ["upstream", "caller", None]
    assert operator.verify(agent.agent_id)["ok"]


def test_an_agent_may_not_report_harm_but_the_operator_may(guard_pair: Pair) -> None:
    agent, operator = guard_pair
    agent.request("read")
    with pytest.raises(Forbidden) as refused:
        agent.report("act-1", "harmful", "I did harm")
    assert (refused.value.status, refused.value.code) == (403, "forbidden")
    status = operator.report_harm(agent.agent_id, "act-1", "leaked a key")
    assert status["scars"][-1]["severity"] == "severe"


def test_wait_for_approval_wakes_on_the_operator(guard_pair: Pair) -> None:
    agent, operator = guard_pair
    action_id = agent.request("pay", {"amount": 5})["action_id"]
    timer = threading.Timer(0.1, operator.approve, (agent.agent_id, action_id, "alice"))
    timer.start()
    assert agent.wait_for_approval(action_id, timeout=30, poll=0.05) == "allowed"
    timer.join()
    assert agent.action(action_id)["approved_by"] == "alice"


def test_wait_for_approval_times_out(guard_pair: Pair) -> None:
    agent, _ = guard_pair
    action_id = agent.request("pay", {"amount": 5})["action_id"]
    with pytest.raises(ApprovalTimeout) as late:
        agent.wait_for_approval(action_id, timeout=0.1, poll=0.05)
    assert isinstance(late.value, TimeoutError)


def test_authorize_and_rejection(guard_pair: Pair) -> None:
    agent, operator = guard_pair
    assert agent.authorize("read", {"q": 1}) == "act-1"
    with pytest.raises(ActionDenied) as pending:
        agent.authorize("pay", {"amount": 1}, wait_for_approval=False)
    assert pending.value.reason == {"code": "pending_approval"}
    operator.reject(agent.agent_id, "act-2", "bob", "no", "minor")
    assert agent.authorize("capped") == "act-3"
    with pytest.raises(ActionDenied) as denied:
        agent.authorize("capped")
    assert denied.value.reason["code"] == "tool_call_limit"
    assert agent.status()["scar_score"] == 2


def test_tool_decorator_runs_reports_and_reraises(guard_pair: Pair) -> None:
    agent, _ = guard_pair

    @agent.tool("read")
    def read(path: str) -> str:
        if path == "/missing":
            raise FileNotFoundError(path)
        return "contents"

    assert read("/ok") == "contents"
    with pytest.raises(FileNotFoundError):
        read("/missing")
    # The decorator's input shape belongs to the shared mixin; both guards record it verbatim.
    assert "/ok" in json.dumps(agent.action("act-1")["input"])
    assert [agent.action(a)["outcome"] for a in ("act-1", "act-2")] == ["success", "failure"]


def test_budget_exhaustion_terminates(guard_pair: Pair) -> None:
    agent, _ = guard_pair
    assert agent.request("llm_turn", cost=10)["remaining"] == 0
    assert agent.status()["termination_reason"] == "budget exhausted"
    assert agent.request("read")["reason"]["code"] == "terminated"


def test_operator_terminate_and_unknown_agent(guard_pair: Pair) -> None:
    agent, operator = guard_pair
    operator.terminate(agent.agent_id, "incident", "oncall")
    assert agent.status()["alive"] is False
    with pytest.raises(NotFound) as missing:
        operator.status("nobody-here")
    assert (missing.value.status, missing.value.code) == (404, "not_found")


def test_deny_local_lands_in_the_ledger(guard_pair: Pair) -> None:
    agent, _ = guard_pair
    reason = {"code": "path_denied", "path": "/etc/shadow"}
    decision = agent.deny_local("read", {"path": "/etc/shadow"}, reason)
    assert decision == {"decision": "denied", "action_id": "act-1", "reason": reason}
    assert agent.action("act-1")["status"] == "denied"
    assert agent.status()["scars"][0]["severity"] == "moderate"
    assert agent.deny_local("read", {}, {"code": "egress_denied"}, None)["action_id"] == "act-2"
    assert agent.status()["scar_score"] == 3
