"""``loop.run``/``arun`` with tools that are already guarded: one action per call, whichever way
the decorator and the loop are composed, the decorator's local checks still applied."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import guardkit
from guardkit import Guard, PathRule
from guardkit.loop import arun, denial_message, run
from guardkit.testing import ScriptedModel

POLICY = {
    "budget": 50,
    "scar_limit": 20,
    "tools": {
        "llm_turn": {"cost": 1},
        "search": {"cost": 2},
        "pay": {"cost": 1, "requires_approval": True},
        "read": {"cost": 0},
        "flaky": {"cost": 0},
    },
}


@pytest.fixture
def guard():
    with Guard(":memory:") as g:
        g.create_agent("bot", POLICY)
        yield g


def _actions(guard: Guard, tool: str) -> list[str]:
    records = guard.log("bot")["records"]
    return [
        r["payload"]["action_id"]
        for r in records
        if r["kind"] == "action_requested" and r["payload"]["tool"] == tool
    ]


def _kept(func: Callable[..., Any]) -> Callable[..., Any]:
    """A decorator of the user's own above the guard (keeps ``__wrapped__``)."""

    @functools.wraps(func)
    def outer(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return outer


COMPOSITIONS: dict[str, Callable[[Any, Callable[..., Any]], Callable[..., Any]]] = {
    "guardkit.tool()": lambda agent, f: guardkit.tool()(f),
    "guardkit.tool(guard=)": lambda agent, f: guardkit.tool(guard=agent)(f),
    "agent.tool()": lambda agent, f: agent.tool()(f),
    "user decorator over guardkit.tool": lambda agent, f: _kept(guardkit.tool()(f)),
}


@pytest.mark.parametrize("compose", list(COMPOSITIONS))
def test_a_guarded_tool_is_requested_once_and_charged_once(guard, compose) -> None:
    agent = guard.agent("bot")
    calls: list[str] = []

    def search(q: str) -> str:
        calls.append(q)
        return f"found {q}"

    tool = COMPOSITIONS[compose](agent, search)
    model = ScriptedModel([[("search", {"q": "invoices"})], "done"])
    result = run(model, agent, {"search": tool}, [])
    assert result.outcome == "done"
    assert calls == ["invoices"]
    assert _actions(guard, "search") == ["act-2"]
    assert result.calls == [("search", "act-2", "allowed")]
    status = agent.status()
    assert status["spent"] == 2 + 2  # two turns, one search
    assert status["actions_allowed"] == 3
    assert model.seen[1][-1]["content"] == "found invoices"


def test_a_denied_guarded_tool_gives_the_model_the_denial_sentence_and_no_extra_scar(
    guard, tmp_path: Path
) -> None:
    agent = guard.agent("bot")
    ran: list[str] = []

    @guardkit.tool(paths={"path": PathRule(allow=[str(tmp_path)])})
    def read(path: str) -> str:
        ran.append(path)
        return "secret"

    model = ScriptedModel([[("read", {"path": "/etc/shadow"})], "ok"])
    result = run(model, agent, {"read": read}, [])
    assert ran == []
    reply = model.seen[1][-1]
    assert reply["is_error"] is True
    assert reply["content"].startswith("Denied by the policy guard: path_denied:")
    assert reply["content"].endswith("Do not retry; choose another approach or ask a human.")
    assert "ToolDenied" not in reply["content"]
    assert result.calls[0][2] == "denied"
    # One denial, one moderate scar (the path check's), no minor scar for a "failure".
    status = agent.status()
    assert status["actions_denied"] == 1
    assert [s["severity"] for s in status["scars"]] == ["moderate"]


def test_a_guarded_tool_that_fails_reports_one_failure(guard) -> None:
    agent = guard.agent("bot")

    @guardkit.tool()
    def flaky() -> str:
        raise RuntimeError("upstream 503")

    model = ScriptedModel([[("flaky", {})], "ok"])
    result = run(model, agent, {"flaky": flaky}, [])
    assert result.calls == [("flaky", "act-2", "failed")]
    assert model.seen[1][-1]["content"] == "Error: RuntimeError: upstream 503"
    status = agent.status()
    assert [s["severity"] for s in status["scars"]] == ["minor"]
    assert agent.action("act-2")["outcome"] == "failure"


def test_loop_costs_apply_to_a_guarded_tool_without_a_cost_of_its_own(guard) -> None:
    agent = guard.agent("bot")

    @guardkit.tool()
    def search(q: str) -> str:
        return q

    @guardkit.tool(cost=lambda args: 3)
    def read(path: str) -> str:
        return path

    model = ScriptedModel([[("search", {"q": "x"}), ("read", {"path": "/x"})], "ok"])
    result = run(
        model,
        agent,
        {"search": search, "read": read},
        [],
        costs={"search": lambda args: 7, "read": lambda args: 9},
    )
    assert [c[2] for c in result.calls] == ["allowed", "allowed"]
    assert agent.action("act-2")["cost"] == 7  # the loop's cost: the tool has none
    assert agent.action("act-3")["cost"] == 3  # the tool's own cost wins


def test_a_guarded_tool_waits_for_approval_once(guard) -> None:
    agent = guard.agent("bot")
    paid: list[int] = []

    @guardkit.tool()
    def pay(amount: int) -> str:
        paid.append(amount)
        return "paid"

    def approver() -> None:
        while not guard.pending("bot"):
            pass
        guard.approve("bot", "act-2", "alice")

    thread = threading.Thread(target=approver)
    thread.start()
    result = run(
        ScriptedModel([[("pay", {"amount": 4})], "ok"]), agent, {"pay": pay}, [], poll=0.01
    )
    thread.join()
    assert paid == [4]
    assert result.calls == [("pay", "act-2", "allowed")]
    assert _actions(guard, "pay") == ["act-2"]


def test_a_timed_out_approval_ends_denied_in_the_ledger(guard) -> None:
    agent = guard.agent("bot")
    model = ScriptedModel([[("pay", {"amount": 1})], [("pay", {"amount": 2})], "ok"])

    @guardkit.tool(approval_timeout=0.05, poll=0.01)
    def pay(amount: int) -> str:
        return "paid"

    result = run(model, agent, {"pay": pay}, [])
    assert [c[2] for c in result.calls] == ["denied", "denied"]
    assert "no approval within 0.05s" in model.seen[1][-1]["content"]
    for action_id in ("act-2", "act-4"):
        action = agent.action(action_id)
        assert action["status"] == "denied"
        assert action["reason"] == {"code": "approval_timeout", "timeout": 0.05}
    assert agent.status()["actions_pending"] == 0


def test_the_loop_own_wait_also_withdraws_on_timeout(guard) -> None:
    agent = guard.agent("bot")
    model = ScriptedModel([[("pay", {"amount": 1})], "ok"])
    run(model, agent, {"pay": lambda amount: "paid"}, [], approval_timeout=0.05, poll=0.01)
    assert agent.action("act-2")["status"] == "denied"
    assert model.seen[1][-1]["content"] == denial_message(
        {"code": "approval_timeout", "timeout": 0.05}
    )


def test_arun_hands_async_and_sync_guarded_tools_the_call(guard) -> None:
    agent = guard.agent("bot")
    seen: list[str] = []

    @guardkit.tool()
    async def search(q: str) -> str:
        await asyncio.sleep(0)
        seen.append(f"async {q} {guardkit.current_action_id()}")
        return q.upper()

    @guardkit.tool()
    def read(path: str) -> str:
        seen.append(f"sync {path} {guardkit.current_action_id()}")
        return "content"

    class Async:
        def __init__(self, inner: ScriptedModel) -> None:
            self.inner = inner

        async def turn(self, messages, tools=()):
            return self.inner.turn(messages, tools)

        def assistant_message(self, reply):
            return self.inner.assistant_message(reply)

        def tool_result_message(self, call, result, *, is_error):
            return self.inner.tool_result_message(call, result, is_error=is_error)

    model = ScriptedModel([[("search", {"q": "a"}), ("read", {"path": "/x"})], "done"])
    result = asyncio.run(arun(Async(model), agent, {"search": search, "read": read}, []))
    assert result.outcome == "done"
    assert result.calls == [("search", "act-2", "allowed"), ("read", "act-3", "allowed")]
    assert seen == ["async a act-2", "sync /x act-3"]
    assert _actions(guard, "search") == ["act-2"]
    assert _actions(guard, "read") == ["act-3"]
