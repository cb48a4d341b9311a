"""The async guard API: the same answers as the blocking calls, and an event loop that never waits.

Runs over ``LocalAgent`` (SQLite) and ``AgentClient`` (SQLite and PostgreSQL servers). Each
``asyncio.run`` closes the agent's async connections before its loop ends (``aclose``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from guardkit import ApprovalTimeout, AsyncAgentGuard

Pair = tuple[Any, Any]
T = TypeVar("T")


def run(agent: Any, main: Callable[[], Awaitable[T]]) -> T:
    async def scoped() -> T:
        try:
            return await main()
        finally:
            if hasattr(agent, "aclose"):
                await agent.aclose()

    return asyncio.run(scoped())


def test_is_an_async_agent_guard(guard_pair: Pair) -> None:
    agent, _ = guard_pair
    assert isinstance(agent, AsyncAgentGuard)


def test_async_answers_equal_the_blocking_ones(guard_pair: Pair) -> None:
    agent, _ = guard_pair

    async def main() -> None:
        allowed = await agent.arequest("llm_turn", {"n": 1}, cost=2)
        assert allowed == {"decision": "allowed", "action_id": "act-1", "cost": 2, "remaining": 8}
        denied = await agent.arequest("shell", {"cmd": "rm"})
        assert denied["reason"] == {"code": "tool_not_allowed", "tool": "shell"}
        status = await agent.areport("act-1", "success")
        assert status == agent.status() == await agent.astatus()
        assert await agent.aaction("act-1") == agent.action("act-1")
        assert (await agent.aaction("act-1"))["status"] == "completed"

    run(agent, main)


def test_await_for_approval_is_woken_by_a_human_and_the_loop_keeps_running(
    guard_pair: Pair,
) -> None:
    agent, operator = guard_pair
    ticks = 0

    async def ticker(stop: asyncio.Event) -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.005)

    async def main() -> str:
        action_id = (await agent.arequest("pay", {"amount": 5}))["action_id"]
        approver = threading.Timer(0.3, operator.approve, args=(agent.agent_id, action_id, "alice"))
        stop = asyncio.Event()
        tick = asyncio.create_task(ticker(stop))
        approver.start()
        try:
            return await agent.await_for_approval(action_id, timeout=30, poll=0.05)
        finally:
            stop.set()
            await tick
            approver.join()

    assert run(agent, main) == "allowed"
    # The loop ran other work while the agent waited for the human (no thread was blocked on it).
    assert ticks > 10


def test_a_timed_out_wait_leaves_the_action_pending_until_withdrawn(guard_pair: Pair) -> None:
    agent, _ = guard_pair

    async def main() -> None:
        action_id = (await agent.arequest("pay", {"amount": 5}))["action_id"]
        with pytest.raises(ApprovalTimeout):
            await agent.await_for_approval(action_id, timeout=0.05, poll=0.01)
        assert (await agent.aaction(action_id))["status"] == "pending_approval"
        final = await agent.awithdraw(action_id, 0.05)
        assert final["status"] == "denied"
        assert final["reason"] == {"code": "approval_timeout", "timeout": 0.05}
        assert (await agent.astatus())["scar_score"] == 0

    run(agent, main)


def test_withdraw_keeps_a_decision_a_human_made_first(guard_pair: Pair) -> None:
    agent, operator = guard_pair
    action_id = agent.request("pay", {"amount": 5})["action_id"]
    operator.approve(agent.agent_id, action_id, "alice")
    assert agent.withdraw(action_id, 10)["status"] == "allowed"
    assert agent.action(action_id)["status"] == "allowed"


def test_async_local_denial_lands_in_the_ledger(guard_pair: Pair) -> None:
    agent, _ = guard_pair

    async def main() -> dict[str, Any]:
        reason = {"code": "path_denied", "argument": "path", "message": "outside /srv"}
        decision: dict[str, Any] = await agent.adeny_local("read", {"path": "/etc"}, reason)
        return decision

    decision = run(agent, main)
    assert decision["decision"] == "denied"
    assert decision["reason"]["code"] == "path_denied"
    assert agent.status()["actions_denied"] == 1
