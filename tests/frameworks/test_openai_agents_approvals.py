"""The SDK's ``needs_approval`` interruptions answered by guardkit's pending approvals.

A run pauses with ``result.interruptions``; ``resolve_interruptions`` asks the guard (one pending
action a human decides in the console or the CLI) and approves or rejects the interruption; the
resumed run executes the approved call under that same action.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agents")

from agents import FunctionTool, RunConfig, ToolExecutionConfig, function_tool
from guardkit.plugins.openai_agents import GuardHooks, guard_tools, resolve_interruptions

import guardkit
from tests.frameworks.openai_agents_kit import (  # noqa: F401 - the *_fixture names are fixtures
    Guards,
    ScriptedModel,
    guard_server_fixture,
    guards_fixture,
    make_agent,
    run,
)


def pay_tool(ran: list[int], **options: Any) -> FunctionTool:
    @function_tool(needs_approval=True, **options)
    def pay(amount: int) -> str:
        """Pay an invoice."""
        ran.append(amount)
        return f"paid {amount}"

    return pay


async def pause_then_resume(
    g: Guards, model: ScriptedModel, tools: list[Any], **options: Any
) -> tuple[Any, Any]:
    """Run until the SDK pauses, answer its interruptions with the guard, resume: both results."""
    options = {"poll": 0.02, "approval_timeout": 20, **options}
    sdk_agent = guard_tools(make_agent(model, tools), g.agent, **options)
    hooks = GuardHooks(g.agent)
    paused = await run(sdk_agent, hooks=hooks)
    state = await resolve_interruptions(paused, g.agent)
    return paused, await run(sdk_agent, state, hooks=hooks)


def test_a_human_approves_in_the_console_and_the_call_runs_once(guards: Guards) -> None:
    ran: list[int] = []
    model = ScriptedModel([("pay", {"amount": 120})], "Paid.")
    human = guards.decide_when_pending(guards.approve)
    paused, resumed = guards.play(pause_then_resume(guards, model, [pay_tool(ran)]))
    human.join()

    (item,) = paused.interruptions
    assert item.tool_name == "pay"
    assert resumed.final_output == "Paid."
    assert ran == [120]
    (action,) = guards.requested("pay")
    assert action["input"] == {"amount": 120}
    assert guards.operator.action(guards.agent_id, action["action_id"])["approved_by"] == "alice"
    assert guards.outcomes("pay") == [("success", "")]
    assert model.only_output(1) == "paid 120"


def test_the_paused_run_asks_nothing_before_it_is_resolved(guards: Guards) -> None:
    ran: list[int] = []
    model = ScriptedModel([("pay", {"amount": 5})], "Paid.")
    sdk_agent = guard_tools(make_agent(model, [pay_tool(ran)]), guards.agent)
    paused = guards.play(run(sdk_agent, hooks=GuardHooks(guards.agent)))
    assert len(paused.interruptions) == 1
    assert guards.requested("pay") == []
    assert ran == []


def test_a_rejection_reaches_the_model_as_the_denial(guards: Guards) -> None:
    ran: list[int] = []
    model = ScriptedModel([("pay", {"amount": 9000})], "Not paid.")
    human = guards.decide_when_pending(guards.reject)
    _, resumed = guards.play(pause_then_resume(guards, model, [pay_tool(ran)]))
    human.join()

    assert resumed.final_output == "Not paid."
    assert ran == []
    told = model.only_output(1)
    assert told.startswith("Denied by the policy guard: rejected by alice: not today.")
    assert told.endswith("Do not retry; choose another approach or ask a human.")
    assert guards.outcomes("pay") == []


def test_nobody_decides_in_time(guards: Guards) -> None:
    ran: list[int] = []
    model = ScriptedModel([("pay", {"amount": 1})], "Gave up.")
    guards.play(pause_then_resume(guards, model, [pay_tool(ran)], approval_timeout=0.3))

    assert ran == []
    assert model.only_output(1).startswith("Denied by the policy guard: no approval within 0.3s.")
    (action,) = guards.requested("pay")
    assert guards.operator.action(guards.agent_id, action["action_id"])["status"] == "denied"


def test_a_call_the_policy_allows_needs_no_human(guards: Guards) -> None:
    ran: list[str] = []

    @function_tool(needs_approval=True)
    def note(text: str) -> str:
        """Take a note."""
        ran.append(text)
        return "noted"

    model = ScriptedModel([("note", {"text": "hi"})], "ok")
    guards.play(pause_then_resume(guards, model, [note]))
    assert ran == ["hi"]
    assert len(guards.requested("note")) == 1
    assert guards.outcomes("note") == [("success", "")]


def test_a_guarded_function_asks_once_when_it_runs(guards: Guards) -> None:
    ran: list[int] = []

    @function_tool(needs_approval=True)
    @guardkit.tool(guard=guards.agent, poll=0.02, approval_timeout=20)
    def pay(amount: int) -> str:
        """Pay an invoice."""
        ran.append(amount)
        return "paid"

    model = ScriptedModel([("pay", {"amount": 3})], "ok")
    human = guards.decide_when_pending(guards.approve)
    guards.play(pause_then_resume(guards, model, [pay]))
    human.join()
    assert ran == [3]
    assert len(guards.requested("pay")) == 1
    assert guards.outcomes("pay") == [("success", "")]


def test_pre_approval_guardrails_ask_once(guards: Guards) -> None:
    """With the SDK's pre-approval guardrails the guard is asked before the pause, and only then."""
    ran: list[int] = []
    config = RunConfig(
        tracing_disabled=True,
        tool_execution=ToolExecutionConfig(pre_approval_tool_input_guardrails=True),
    )
    model = ScriptedModel([("pay", {"amount": 7})], "ok")
    sdk_agent = guard_tools(
        make_agent(model, [pay_tool(ran)]), guards.agent, poll=0.02, approval_timeout=20
    )
    hooks = GuardHooks(guards.agent)

    async def main() -> Any:
        paused = await run(sdk_agent, hooks=hooks, run_config=config)
        assert len(paused.interruptions) == 1
        assert len(guards.requested("pay")) == 1  # asked (and approved) before the pause
        state = await resolve_interruptions(paused)
        return await run(sdk_agent, state, hooks=hooks, run_config=config)

    human = guards.decide_when_pending(guards.approve)
    guards.play(main())
    human.join()
    assert ran == [7]
    assert len(guards.requested("pay")) == 1
    assert guards.outcomes("pay") == [("success", "")]


def test_interruptions_of_unguarded_tools_are_left_alone(guards: Guards) -> None:
    ran: list[int] = []
    unguarded = pay_tool(ran)
    model = ScriptedModel([("pay", {"amount": 2})], "ok")
    sdk_agent = make_agent(model, [unguarded])

    async def main() -> Any:
        paused = await run(sdk_agent)
        state = await resolve_interruptions(paused.to_state(), guards.agent)
        return await run(sdk_agent, state)

    again = guards.play(main())
    assert [i.tool_name for i in again.interruptions] == ["pay"]
    assert ran == []
    assert guards.requested() == []
