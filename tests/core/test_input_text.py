"""Bad text and numbers handed to the guard in-process: a GuardError naming the field, never a
UnicodeEncodeError or an overflow from deep inside the store (issue 14)."""

from __future__ import annotations

from typing import Any

import pytest

import guardkit
from guardkit import GuardError, Idempotency, InvalidInput, PolicyError

LONE = "\ud800"
POLICY = {
    "budget": 10,
    "scar_limit": 10,
    "tools": {"t": {"cost": 0}, "p": {"cost": 0, "requires_approval": True}},
}


@pytest.fixture
def agent(make_agent) -> guardkit.LocalAgent:
    return make_agent(POLICY)


def _refused(call: Any, *names: str) -> GuardError:
    with pytest.raises(GuardError) as info:
        call()
    error = info.value
    assert error.status == 400
    for name in names:
        assert name in error.message
    str(error).encode("utf-8")  # the error itself can be printed and sent
    return error


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("input.to", {"to": LONE}),
        ("input.deep[1].x", {"deep": [1, {"x": "ok" + LONE}]}),
        ("input.\\ud800", {LONE: 1}),
        ("input.n", {"n": 2**64}),
        ("input.n", {"n": -(2**63) - 1}),
    ],
)
def test_bad_input_names_the_field(agent, where, value) -> None:
    error = _refused(lambda: agent.request("t", value), where)
    assert isinstance(error, InvalidInput)
    assert agent.status()["head"]["seq"] == 1  # nothing was recorded


def test_integers_at_lineages_limits_are_fine(agent) -> None:
    for n in (2**64 - 1, -(2**63)):
        assert agent.request("t", {"n": n})["decision"] == "allowed"


def test_every_text_argument(agent, guard) -> None:
    _refused(lambda: agent.request(LONE), "tool name")
    _refused(lambda: agent.deny_local("t", {}, {"code": "x", "message": LONE}), "input.message")
    decision = agent.request("p", {})
    _refused(lambda: guard.approve(agent.agent_id, decision["action_id"], LONE), "approver")
    _refused(lambda: guard.reject(agent.agent_id, decision["action_id"], "alice", LONE), "reason")
    _refused(lambda: guard.scar(agent.agent_id, "minor", "odd " + LONE), "reason")
    _refused(lambda: guard.terminate(agent.agent_id, "done", LONE), "by")
    allowed = agent.request("t", {})
    _refused(lambda: agent.report(allowed["action_id"], "failure", LONE), "detail")
    _refused(lambda: guard.consume(agent.agent_id, allowed["action_id"], "t", {"x": LONE}))


def test_a_policy_with_a_lone_surrogate_in_a_tool_name(guard) -> None:
    policy = {"budget": 1, "tools": {"pay" + LONE: {"cost": 1}}}
    error = _refused(lambda: guard.create_agent("bad", policy), "tools.pay\\ud800")
    assert isinstance(error, PolicyError)
    error = _refused(lambda: guard.create_agent("big", {"budget": 10**30, "tools": {}}))
    assert isinstance(error, PolicyError)


def test_a_guarded_tool_with_a_lone_surrogate_argument(agent) -> None:
    ran: list[str] = []

    @guardkit.tool("t", guard=agent)
    def plain(to: str) -> str:
        ran.append(to)
        return "ok"

    @guardkit.tool("t", guard=agent, idempotency=Idempotency(key=["to"]))
    def keyed(to: str) -> str:
        ran.append(to)
        return "ok"

    for tool in (plain, keyed):
        _refused(lambda tool=tool: tool("x" + LONE), "input.to")
    assert ran == []
