"""``guardkit.model_turn``: a model call gated by ``llm_turn``, sync and async."""

from __future__ import annotations

import asyncio

import pytest

import guardkit
from guardkit import Guard, GuardStop, TurnDenied

POLICY = {"budget": 10, "tools": {"llm_turn": {"cost": 1, "max_calls": 2}}}


@pytest.fixture
def agent():
    with Guard(":memory:") as guard:
        guard.create_agent("bot", POLICY)
        yield guard.agent("bot")


def test_turns_are_requested_reported_and_capped(agent) -> None:
    with guardkit.model_turn(agent) as turn:
        assert turn["decision"] == "allowed"
    with pytest.raises(ZeroDivisionError), guardkit.model_turn(agent):
        1 / 0  # noqa: B018 - the model call failing
    with pytest.raises(TurnDenied) as info, guardkit.model_turn(agent):
        pytest.fail("a refused turn must not run")
    assert info.value.reason["code"] == "tool_call_limit"
    assert isinstance(info.value, GuardStop)
    assert not isinstance(info.value, Exception)
    assert [agent.action(a)["outcome"] for a in ("act-1", "act-2")] == ["success", "failure"]
    assert agent.action("act-3")["status"] == "denied"


def test_async_turns_use_the_async_guard_api(agent) -> None:
    async def main() -> str:
        async with guardkit.model_turn(agent) as turn:
            await asyncio.sleep(0)
        return turn["action_id"]

    assert asyncio.run(main()) == "act-1"
    assert agent.action("act-1")["outcome"] == "success"


def test_a_terminated_agent_gets_no_turn(agent) -> None:
    agent.guard.terminate("bot", "operator stop", "alice")
    refused = pytest.raises(TurnDenied, match="agent is terminated: operator stop")
    with refused, guardkit.model_turn(agent):
        pytest.fail("must not run")


def test_the_current_agent_is_used_when_none_is_given(agent) -> None:
    with guardkit.use_agent(agent), guardkit.model_turn():
        pass
    assert agent.status()["actions_allowed"] == 1
