"""What guardkit.loop adds for adapters: call checks, usage charges, the action id, ``arun``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from guardkit import Guard
from guardkit.loop import arun, current_action_id, run
from guardkit.protocols import ModelReply, ToolCall
from guardkit.testing import ScriptedModel

POLICY = {
    "budget": 100,
    "scar_limit": 10,
    "tools": {
        "llm_turn": {"cost": 1, "max_calls": 4},
        "llm_tokens": {"cost": 0},
        "lookup": {"cost": 1},
        "deploy": {"cost": 5, "requires_approval": True},
    },
}


@pytest.fixture
def guard() -> Iterator[Guard]:
    with Guard() as guard:
        guard.create_agent("bot", POLICY)
        yield guard


class AsyncScripted:
    """``ScriptedModel`` behind an awaitable ``turn``."""

    def __init__(self, turns: list[Any]) -> None:
        self.inner = ScriptedModel(turns)
        self.assistant_message = self.inner.assistant_message
        self.tool_result_message = self.inner.tool_result_message

    async def turn(self, messages: list[Any], tools: Sequence[dict[str, Any]]) -> ModelReply:
        await asyncio.sleep(0)
        return self.inner.turn(messages, tools)


class Checking(ScriptedModel):
    def call_error(self, call: ToolCall) -> str | None:
        return "key: required field is missing" if "key" not in call.args else None


def test_tools_see_their_own_action_id(guard):
    seen: list[str | None] = []

    def lookup(key: str) -> str:
        seen.append(current_action_id())
        return key

    model = ScriptedModel([[("lookup", {"key": "a"}), ("lookup", {"key": "b"})], "done"])
    run(model, guard.agent("bot"), {"lookup": lookup}, [])

    assert seen == ["act-2", "act-3"]
    assert current_action_id() is None


def test_a_model_that_checks_calls_keeps_invalid_ones_from_the_guard(guard):
    model = Checking([[("lookup", {}), ("lookup", {"key": "a"})], "done"])
    result = run(model, guard.agent("bot"), {"lookup": lambda key: key}, [])

    assert result.calls == [("lookup", None, "invalid"), ("lookup", "act-2", "allowed")]
    assert model.seen[1][1]["content"].startswith("Error: invalid arguments for lookup: key:")


def test_usage_is_charged_after_the_turn_and_can_end_the_run(guard):
    big = ModelReply(tool_calls=[ToolCall(id="c1", name="lookup", args={"key": "a"})], usage=99)
    ran: list[str] = []
    result = run(
        ScriptedModel([big]),
        guard.agent("bot"),
        {"lookup": ran.append},
        [],
        usage_tool="llm_tokens",
    )

    assert result.outcome == "terminated"
    assert result.text == "budget exhausted"
    assert ran == []
    assert guard.action("bot", "act-1")["outcome"] == "success"
    assert guard.status("bot")["spent"] == 100
    assert [c["tool"] for c in (guard.action("bot", f"act-{n}") for n in (1, 2))] == [
        "llm_turn",
        "llm_tokens",
    ]


def test_too_many_tokens_is_a_denied_turn(guard):
    big = ModelReply(text="hi", usage=500)
    result = run(ScriptedModel([big]), guard.agent("bot"), {}, [], usage_tool="llm_tokens")

    assert result.outcome == "denied_turn"
    assert "cost 500 exceeds remaining budget 99" in result.text


def test_arun_leaves_the_event_loop_free_while_a_call_waits_for_approval(guard):
    async def approver() -> None:
        while not guard.pending("bot"):
            await asyncio.sleep(0.01)
        guard.approve("bot", guard.pending("bot")[0]["action"]["action_id"], "async-approver")

    async def deploy(version: str) -> str:
        await asyncio.sleep(0)
        return f"deployed {version} as {current_action_id()}"

    async def main() -> Any:
        model = AsyncScripted([[("deploy", {"version": "1.2"})], "shipped"])
        task = asyncio.create_task(approver())
        result = await arun(
            model, guard.agent("bot"), {"deploy": deploy}, [], approval_timeout=30, poll=0.05
        )
        await task
        return result, model.inner.seen

    result, seen = asyncio.run(main())
    assert (result.outcome, result.text) == ("done", "shipped")
    assert seen[1][1]["content"] == "deployed 1.2 as act-2"
    assert guard.action("bot", "act-2")["approved_by"] == "async-approver"


def test_arun_stops_on_termination_and_on_llm_turn(guard):
    def lookup(key: str) -> str:
        if key == "kill":
            guard.terminate("bot", "operator said stop", "ops")
        return key

    async def go(turns: list[Any]) -> Any:
        return await arun(AsyncScripted(turns), guard.agent("bot"), {"lookup": lookup}, [])

    loop_forever = [[("lookup", {"key": "a"})]] * 10
    first = asyncio.run(go(loop_forever))
    assert (first.outcome, first.turns) == ("denied_turn", 4)

    with Guard() as other:
        other.create_agent("bot", POLICY)
        guard = other
        second = asyncio.run(go([[("lookup", {"key": "kill"}), ("lookup", {"key": "b"})]]))
    assert (second.outcome, second.text) == ("terminated", "operator said stop")
    assert second.calls == [("lookup", "act-2", "allowed")]


def test_arun_reports_a_failed_model_call(guard):
    class Broken(AsyncScripted):
        async def turn(self, messages: list[Any], tools: Sequence[dict[str, Any]]) -> ModelReply:
            raise ConnectionError("provider down")

    with pytest.raises(ConnectionError):
        asyncio.run(arun(Broken([]), guard.agent("bot"), {}, []))
    assert guard.action("bot", "act-1")["outcome"] == "failure"
    assert guard.status("bot")["scar_score"] == 1
