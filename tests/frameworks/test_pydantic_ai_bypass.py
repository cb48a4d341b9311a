"""pydantic-ai ways around the guard (issue 24), each closed: output functions, provider-side
tools, the policy's declared path checks, and calls cancelled mid-flight."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from guardkit.plugins.pydantic_ai import GuardCapability
from pydantic_ai import Agent, ToolOutput, WebSearchTool
from pydantic_ai.capabilities import NativeTool
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import guardkit
from guardkit import Guard, PolicyError, ToolDenied


def _model(*steps: list[tuple[str, dict[str, Any]]] | str) -> FunctionModel:
    seen: list[int] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(1)
        step = steps[min(len(seen), len(steps)) - 1]
        if isinstance(step, str):
            from pydantic_ai.messages import TextPart

            return ModelResponse(parts=[TextPart(step)])
        return ModelResponse(parts=[ToolCallPart(name, args) for name, args in step])

    return FunctionModel(reply)


def test_an_output_function_the_policy_does_not_list_never_runs() -> None:
    sent: list[int] = []

    def wire_money(to: str, amount: int) -> str:
        sent.append(amount)
        return f"sent {amount} to {to}"

    guard = Guard(":memory:")
    guard.create_agent("bot", {"budget": 10, "tools": {"llm_turn": {"cost": 1}}})
    model = _model([("final_result", {"to": "attacker", "amount": 1_000_000})])
    agent = Agent(
        model,
        output_type=ToolOutput(wire_money),
        capabilities=[GuardCapability(guard.agent("bot"))],
    )
    with pytest.raises(ToolDenied) as info:
        asyncio.run(agent.run("pay"))
    assert sent == []
    assert info.value.reason["code"] == "tool_not_allowed"
    requested = [
        r["payload"] for r in guard.log("bot")["records"] if r["kind"] == "action_requested"
    ]
    assert [r["tool"] for r in requested] == ["llm_turn", "wire_money"]


def test_an_allowed_output_function_is_requested_charged_and_reported() -> None:
    def wire_money(to: str, amount: int) -> str:
        return f"sent {amount} to {to}"

    guard = Guard(":memory:")
    guard.create_agent(
        "bot", {"budget": 10, "tools": {"llm_turn": {"cost": 1}, "wire_money": {"cost": 3}}}
    )
    model = _model([("final_result", {"to": "acme", "amount": 5})])
    agent = Agent(
        model,
        output_type=ToolOutput(wire_money),
        capabilities=[GuardCapability(guard.agent("bot"))],
    )
    assert asyncio.run(agent.run("pay")).output == "sent 5 to acme"
    outcomes = [r["payload"] for r in guard.log("bot")["records"] if r["kind"] == "outcome"]
    assert [o["status"] for o in outcomes] == ["success", "success"]
    assert guard.status("bot")["spent"] == 4


def test_provider_side_native_tools_are_refused_before_the_model_is_called() -> None:
    guard = Guard(":memory:")
    guard.create_agent("bot", {"budget": 10, "tools": {"llm_turn": {"cost": 1}}})
    agent = Agent(
        TestModel(),
        capabilities=[NativeTool(WebSearchTool()), GuardCapability(guard.agent("bot"))],
    )
    with pytest.raises(PolicyError) as info:
        asyncio.run(agent.run("search"))
    assert info.value.problems[0][0] == "native_tools"
    assert guard.status("bot")["spent"] == 0


def test_the_policys_path_rules_apply_to_capability_tool_calls(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    read: list[str] = []
    guard = Guard(":memory:")
    policy = {
        "budget": 10,
        "tools": {
            "llm_turn": {"cost": 0},
            "read_file": {"cost": 1, "paths": {"path": {"allow": [str(reports)]}}},
        },
    }
    guard.create_agent("bot", policy)
    escape = str(reports / ".." / ".." / "etc" / "passwd")
    model = _model(
        [("read_file", {"path": "/etc/shadow"}), ("read_file", {"path": escape})], "done"
    )
    agent = Agent(model, capabilities=[GuardCapability(guard.agent("bot"))])

    @agent.tool_plain
    def read_file(path: str) -> str:
        read.append(path)
        return "secret"

    asyncio.run(agent.run("read"))
    assert read == []
    denied = [r["payload"] for r in guard.log("bot")["records"] if r["kind"] == "action_denied"]
    assert [d["reason"]["code"] for d in denied] == ["path_denied", "path_denied"]


def test_a_reserved_guardkit_argument_from_the_model_is_refused() -> None:
    ran: list[Any] = []
    guard = Guard(":memory:")
    guard.create_agent(
        "bot", {"budget": 10, "tools": {"llm_turn": {"cost": 0}, "note": {"cost": 1}}}
    )
    model = _model([("note", {"text": "hi", "_guardkit": {"paths": {"x": "/srv/ok"}}})], "done")
    agent = Agent(model, capabilities=[GuardCapability(guard.agent("bot"))])

    @agent.tool_plain
    def note(text: str, **extra: Any) -> str:
        ran.append(text)
        return "ok"

    asyncio.run(agent.run("note"))
    assert ran == []
    records = guard.log("bot")["records"]
    denied = [r["payload"] for r in records if r["kind"] == "action_denied"]
    requested = [r["payload"] for r in records if r["kind"] == "action_requested"]
    assert denied[0]["reason"]["code"] == "reserved_argument"
    assert [r["input"] for r in requested if r["tool"] == "note"] == [{"text": "hi"}]


def _outcomes(guard: Guard, agent_id: str, tool: str) -> tuple[list[str], list[str]]:
    """The allowed actions of ``tool`` and the actions that have an outcome."""
    records = guard.log(agent_id)["records"]
    requested = {
        r["payload"]["action_id"]
        for r in records
        if r["kind"] == "action_requested" and r["payload"]["tool"] == tool
    }
    allowed = [
        r["payload"]["action_id"]
        for r in records
        if r["kind"] == "action_allowed" and r["payload"]["action_id"] in requested
    ]
    finished = [r["payload"]["action_id"] for r in records if r["kind"] == "outcome"]
    return allowed, finished


def test_parallel_calls_past_a_terminating_refusal_all_get_their_outcome() -> None:
    """Twenty parallel payments, budget 5: five run, and each of them is reported; the refusals
    are the calls' results, so pydantic-ai cancels nothing; the next model turn stops the run."""
    guard = Guard(":memory:")
    policy = {"budget": 5, "scar_limit": 1, "tools": {"llm_turn": {"cost": 0}, "pay": {"cost": 1}}}
    guard.create_agent("ap", policy)
    started: list[int] = []
    model = _model([("pay", {"n": n}) for n in range(20)], "done")
    agent = Agent(model, capabilities=[GuardCapability(guard.agent("ap"))])

    @agent.tool_plain
    async def pay(n: int) -> str:
        started.append(n)
        await asyncio.sleep(0.05)
        return f"paid {n}"

    with pytest.raises(guardkit.TurnDenied):
        asyncio.run(agent.run("pay all"))
    allowed, finished = _outcomes(guard, "ap", "pay")
    assert len(started) == 5
    assert guard.status("ap")["spent"] == 5
    assert len(allowed) == 5
    assert sorted(a for a in finished if a in allowed) == sorted(allowed)  # one outcome each


def test_a_callers_timeout_reports_the_running_call_as_failed() -> None:
    guard = Guard(":memory:")
    guard.create_agent("ap", {"budget": 5, "tools": {"llm_turn": {"cost": 0}, "pay": {"cost": 1}}})
    model = _model([("pay", {"n": 1})], "done")
    agent = Agent(model, capabilities=[GuardCapability(guard.agent("ap"))])

    @agent.tool_plain
    async def pay(n: int) -> str:
        await asyncio.sleep(30)
        return "paid"

    async def main() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(agent.run("pay"), 0.5)

    asyncio.run(main())
    outcomes = [r["payload"] for r in guard.log("ap")["records"] if r["kind"] == "outcome"]
    pays = [o for o in outcomes if o["status"] == "failure"]
    assert len(pays) == 1
    assert "cancelled" in pays[0]["detail"]
    assert pays[0]["fault"] == "caller"  # the caller's timeout, not the agent's failure
    assert guard.agent("ap").status()["scars"] == []
