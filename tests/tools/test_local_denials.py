"""Engine.deny / LocalAgent.deny_local: local-check denials land in the ledger like any other."""

from __future__ import annotations

from typing import Any

import pytest

import guardkit
from guardkit import InvalidInput, ToolDenied
from guardkit.decisions import Severity
from guardkit.tools.pipeline import LOCAL_DENIAL_TOOL


def test_engine_deny_records_request_denial_and_scar(guard, agent, ledger):
    decision = guard.engine.deny(
        agent.agent_id,
        "read",
        {"path": "/etc"},
        {"code": "path_denied", "message": "outside"},
        Severity.MODERATE,
    )
    assert decision.to_dict() == {
        "decision": "denied",
        "action_id": "act-1",
        "reason": {"code": "path_denied", "message": "outside"},
    }
    kinds = [r["kind"] for r in guard.log(agent.agent_id)["records"]][2:]
    assert kinds == ["action_requested", "action_denied", "scar"]
    assert ledger(agent, "scar")[0] == {
        "action_id": "act-1",
        "severity": "moderate",
        "reason": "path_denied: outside",
    }
    status = agent.status()
    assert (status["actions_denied"], status["scar_score"], status["spent"]) == (1, 3, 0)
    assert agent.action("act-1")["status"] == "denied"
    assert guard.verify(agent.agent_id)["ok"]


def test_deny_without_severity_leaves_no_scar(agent, ledger):
    agent.deny_local("read", {}, {"code": "untrusted_provenance"}, None)
    assert ledger(agent, "scar") == []


def test_deny_on_terminated_agent_says_terminated(guard, agent):
    guard.terminate(agent.agent_id, "done", "ops")
    decision = agent.deny_local("read", {}, {"code": "path_denied"})
    assert decision["reason"] == {"code": "terminated", "reason": "done"}


def test_deny_scars_can_terminate(make_agent):
    agent = make_agent(scar_limit=3)
    agent.deny_local("read", {}, {"code": "egress_denied"}, "moderate")
    assert not agent.status()["alive"]


@pytest.mark.parametrize("reason", [{}, {"code": 3}, "path_denied", {"code": "x", "v": {1, 2}}])
def test_deny_validates_the_reason(agent, reason):
    with pytest.raises(InvalidInput):
        agent.deny_local("read", {}, reason)


def test_deny_validates_tool_name(agent):
    with pytest.raises(InvalidInput):
        agent.deny_local("", {}, {"code": "x"})


def test_deny_survives_reopening(tmp_path):
    path = tmp_path / "g.db"
    with guardkit.Guard(path) as guard:
        guard.create_agent("a", {"budget": 5, "tools": {}})
        guard.agent("a").deny_local("t", {"x": 1}, {"code": "path_denied"})
    with guardkit.Guard(path) as guard:
        assert guard.quarantined == {}
        assert guard.status("a")["scar_score"] == 3


class _RemoteLike:
    """An agent guard without deny_local (like the HTTP client today)."""

    @property
    def agent_id(self) -> str:
        return self.inner.agent_id

    def __init__(self, inner: guardkit.LocalAgent) -> None:
        self.inner = inner

    def request(self, tool: str, input: Any = None, cost: Any = None) -> dict[str, Any]:
        return self.inner.request(tool, input, cost)

    def report(self, action_id: str, status: str, detail: str = "") -> dict[str, Any]:
        return self.inner.report(action_id, status, detail)

    def status(self) -> dict[str, Any]:
        return self.inner.status()

    def action(self, action_id: str) -> dict[str, Any]:
        return self.inner.action(action_id)

    def wait_for_approval(self, action_id: str, timeout: float = 300, poll: float = 2.0) -> str:
        return self.inner.wait_for_approval(action_id, timeout, poll)


@pytest.mark.parametrize("default_rule", [None, {"cost": 0}])
def test_agent_without_deny_local_still_records_the_denial(
    make_agent, ledger, tmp_path, calls, default_rule
):
    agent = make_agent(tools={"read": {"cost": 0}}, default_rule=default_rule)
    remote = _RemoteLike(agent)

    @guardkit.tool(guard=remote, paths={"path": guardkit.PathRule(allow=[str(tmp_path)])})
    def read(path: str) -> None:
        calls(path)

    with pytest.raises(ToolDenied) as info:
        read("/etc/passwd")
    assert calls.count == 0
    assert info.value.reason["code"] == "path_denied"
    (request,) = ledger(agent, "action_requested")
    assert request["tool"] == LOCAL_DENIAL_TOOL
    assert request["input"]["reason"]["code"] == "path_denied"
    assert agent.status()["scar_score"] >= 1
