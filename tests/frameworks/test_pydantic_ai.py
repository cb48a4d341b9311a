"""The pydantic-ai integration against the real package, driven by its own FunctionModel/TestModel.

Every test runs over ``LocalAgent`` (``:memory:`` and a SQLite file) and ``AgentClient`` against
a real server on loopback.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from guardkit.plugins.pydantic_ai import GuardCapability, GuardedModel, GuardedToolset
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import FunctionToolset

import guardkit
from guardkit import TurnDenied
from guardkit.refusals import GUARD_UNREACHABLE
from tests.frameworks._pydantic_ai_support import (
    POLICY,
    Script,
    backend,
    backend_kind,
    http_url,
    make_backend,
    run_closing,
)

__all__ = ["backend", "backend_kind", "http_url", "make_backend"]  # fixtures


class Calls:
    def __init__(self) -> None:
        self.args: list[Any] = []

    def __call__(self, *args: Any) -> None:
        self.args.append(args)

    @property
    def count(self) -> int:
        return len(self.args)


def tools(calls: Calls, *, is_async: bool = False) -> FunctionToolset[Any]:
    """``add`` (sync or async), ``fail`` (raises) and ``greet`` (takes the RunContext)."""
    toolset: FunctionToolset[Any] = FunctionToolset()

    if is_async:

        @toolset.tool_plain
        async def add(a: int, b: int) -> int:
            await asyncio.sleep(0)
            calls("add", a, b)
            return a + b
    else:

        @toolset.tool_plain
        def add(a: int, b: int) -> int:
            calls("add", a, b)
            return a + b

    @toolset.tool_plain
    def fail(why: str) -> str:
        calls("fail", why)
        raise ValueError(why)

    @toolset.tool
    def greet(ctx: RunContext[str], name: str) -> str:
        calls("greet", name)
        return f"{ctx.deps} greets {name}"

    @toolset.tool_plain
    def rm(path: str) -> str:
        calls("rm", path)
        return "removed"

    @toolset.tool_plain
    def pay(amount: int) -> str:
        calls("pay", amount)
        return f"paid {amount}"

    return toolset


@pytest.mark.parametrize("is_async", [False, True], ids=["sync-tool", "async-tool"])
def test_allowed_call_runs_once_and_is_reported(backend, is_async):
    calls = Calls()
    script = Script([[("add", {"a": 2, "b": 3})], "5"])
    agent = Agent(
        script.model,
        toolsets=[tools(calls, is_async=is_async)],
        capabilities=[GuardCapability(backend.agent)],
    )
    assert backend.run(agent, "add") == "5"
    assert calls.args == [("add", 2, 3)]
    assert script.tool_results() == {"add": 5}
    [requested] = backend.requested("add")
    assert requested["input"] == {"a": 2, "b": 3}
    assert backend.outcome(requested["action_id"])["status"] == "success"
    turns = backend.requested("llm_turn")
    assert len(turns) == 2 == len(script.requests)
    assert all(backend.outcome(t["action_id"])["status"] == "success" for t in turns)


def test_denied_call_never_runs_and_the_model_reads_the_denial(backend):
    calls = Calls()
    script = Script([[("rm", {"path": "/"}), ("add", {"a": 1, "b": 1})], "ok"])
    agent = Agent(script.model, toolsets=[GuardedToolset(tools(calls), backend.agent)])
    assert backend.run(agent, "clean up") == "ok"
    assert calls.args == [("add", 1, 1)]
    told = script.tool_results()
    assert (
        told["rm"]
        == guardkit.refusal(
            {"decision": "denied", "reason": {"code": "tool_not_allowed", "tool": "rm"}}
        ).text
    )
    assert "Do not retry" in told["rm"]
    assert told["add"] == 2
    assert script.retry_prompts() == []  # never ModelRetry
    [denied] = backend.records("action_denied")
    assert denied["reason"]["code"] == "tool_not_allowed"


@pytest.mark.parametrize("approve", [True, False], ids=["approved", "rejected"])
def test_pending_approval_waits_for_a_human_in_another_thread(backend, approve):
    calls = Calls()
    script = Script([[("pay", {"amount": 7})], "done"])
    toolset = GuardedToolset(tools(calls), backend.agent, poll=0.05)
    agent = Agent(script.model, toolsets=[toolset])
    decider = backend.decide_when_pending(approve)
    assert backend.run(agent, "pay") == "done"
    decider.join()
    [requested] = backend.requested("pay")
    if approve:
        assert calls.args == [("pay", 7)]
        assert script.tool_results() == {"pay": "paid 7"}
        assert backend.outcome(requested["action_id"])["status"] == "success"
    else:
        assert calls.count == 0
        told = script.tool_results()["pay"]
        assert told.startswith("Denied by the policy guard")
        assert "not today" in told
        assert backend.outcome(requested["action_id"]) is None


@pytest.mark.parametrize("when", ["during-a-tool-call", "before-the-run"])
def test_termination_stops_the_run_before_another_model_request(backend, when):
    """Terminated mid-run: the next turn is refused. Before: the tool call's refusal stops it."""
    calls = Calls()
    toolset = tools(calls)

    @toolset.tool_plain
    def lookup(key: str) -> str:
        backend.operator.terminate(backend.agent_id, "runaway spending", "ops")
        return key

    first = (
        [("lookup", {"key": "k"})] if when == "during-a-tool-call" else [("add", {"a": 1, "b": 1})]
    )
    script = Script([first, [("add", {"a": 1, "b": 1})], "never"])
    if when == "before-the-run":
        backend.operator.terminate(backend.agent_id, "compromised", "ops")
        agent = Agent(script.model, toolsets=[GuardedToolset(toolset, backend.agent)])
    else:
        agent = Agent(
            script.model, toolsets=[toolset], capabilities=[GuardCapability(backend.agent)]
        )
    with pytest.raises(TurnDenied) as info:
        backend.run(agent, "go")
    assert info.value.reason["code"] == "terminated"
    assert len(script.requests) == 1
    assert calls.count == 0


def test_llm_turn_cap_ends_a_runaway_agent(make_backend):
    policy = {**POLICY, "tools": {**POLICY["tools"], "llm_turn": {"cost": 1, "max_calls": 3}}}
    guarded = make_backend(policy)
    calls = Calls()
    script = Script([[("add", {"a": 1, "b": 2})]])  # calls a tool forever
    agent = Agent(
        GuardedModel(script.model, guarded.agent), toolsets=[GuardedToolset(tools(calls))]
    )
    with guardkit.use_agent(guarded.agent), pytest.raises(TurnDenied) as info:
        guarded.run(agent, "loop")
    assert info.value.reason["code"] == "tool_call_limit"
    assert len(script.requests) == 3
    assert calls.count == 3


def test_a_tool_exception_is_a_failure_outcome_with_a_minor_scar(backend):
    calls = Calls()
    script = Script([[("fail", {"why": "disk full"})], "never"])
    guard = GuardCapability(backend.agent)
    agent = Agent(script.model, toolsets=[tools(calls)], capabilities=[guard])
    with pytest.raises(ValueError, match="disk full"):
        backend.run(agent, "go")
    [requested] = backend.requested("fail")
    outcome = backend.outcome(requested["action_id"])
    assert outcome == {**outcome, "status": "failure", "detail": "ValueError: disk full"}
    scars = backend.operator.status(backend.agent_id)["scars"]
    assert [s["severity"] for s in scars] == ["minor"]


def test_run_context_tools_get_their_context_and_record_only_their_arguments(backend):
    calls = Calls()
    script = Script([[("greet", {"name": "Ada"})], "hi"])
    agent = Agent(
        script.model, deps_type=str, toolsets=[GuardedToolset(tools(calls), backend.agent)]
    )
    assert backend.run(agent, "greet", deps="guardkit") == "hi"
    assert script.tool_results() == {"greet": "guardkit greets Ada"}
    assert [r["input"] for r in backend.requested("greet")] == [{"name": "Ada"}]


def test_the_agents_own_tools_are_guarded_by_the_capability(backend):
    agent = Agent(TestModel(), capabilities=[GuardCapability(backend.agent)])
    ran: list[str] = []

    @agent.tool_plain
    def lookup(key: str) -> str:
        ran.append(key)
        return key

    @agent.tool_plain
    def unlisted() -> str:
        ran.append("unlisted")
        return "x"

    backend.run(agent, "go")
    assert ran == ["a"]  # TestModel's argument for a str
    assert [r["tool"] for r in backend.records("action_requested")].count("lookup") == 1
    assert [d["reason"]["code"] for d in backend.records("action_denied")] == ["tool_not_allowed"]


def test_streamed_runs_gate_each_model_request(backend):
    calls = Calls()
    model = TestModel(call_tools=["add"], custom_output_text="two")
    agent = Agent(model, toolsets=[tools(calls)], capabilities=[GuardCapability(backend.agent)])

    async def main() -> str:
        async with agent.run_stream("add") as result:
            return await result.get_output()

    assert backend.loop.run(main()) == "two"
    assert len(backend.requested("llm_turn")) == 2
    assert calls.count == 1


def test_the_current_agent_is_asked_when_none_is_given(backend):
    calls = Calls()
    script = Script([[("add", {"a": 1, "b": 1})], "ok"])
    agent = Agent(script.model, capabilities=[GuardCapability()], toolsets=[tools(calls)])
    with guardkit.use_agent(backend.agent):
        backend.run(agent, "go")
    assert len(backend.requested("add")) == 1
    assert len(backend.requested("llm_turn")) == 2


def test_an_unreachable_guard_is_refused_not_retried():
    from guardkit.client import AgentClient

    calls = Calls()
    script = Script([[("add", {"a": 1, "b": 1})], "ok"])
    with AgentClient("http://127.0.0.1:9", "nobody", "t" * 40, timeout=2) as unreachable:
        agent = Agent(script.model, toolsets=[GuardedToolset(tools(calls), unreachable)])
        assert asyncio.run(run_closing(unreachable, agent.run("go"))).output == "ok"
    assert calls.count == 0
    assert script.tool_results() == {"add": GUARD_UNREACHABLE}


def test_importing_without_pydantic_ai_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    monkeypatch.delitem(sys.modules, "guardkit.plugins.pydantic_ai")
    with pytest.raises(ImportError, match=r"guardkit\[pydantic-ai\]"):
        import guardkit.plugins.pydantic_ai  # noqa: F401


def test_a_guard_that_cannot_record_stops_the_run_and_is_never_a_result(tmp_path):
    """A store that fails (here: closed under the agent) is not a tool result the model reads:
    the run ends with GuardFailed, which ``except Exception`` lets through, and nothing ran."""
    calls = Calls()
    script = Script([[("add", {"a": 1, "b": 1})], "ok"])
    guard = guardkit.Guard(str(tmp_path / "guard.db"))
    guard.create_agent("bot", {"budget": 10, "tools": {"add": {"cost": 1}}})
    closed = guard.agent("bot")
    guard.close()
    agent = Agent(script.model, toolsets=[GuardedToolset(tools(calls), closed)])
    with pytest.raises(guardkit.GuardFailed, match="the agent must stop"):
        asyncio.run(agent.run("go"))
    assert calls.count == 0
