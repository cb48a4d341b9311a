"""pydantic-ai's own approvals and deferred tools mapped onto guardkit; already-guarded tools.

A call that needs a human in pydantic-ai and/or in the guard's policy is ONE guardkit pending
action, approved in the console or the CLI; the run never pauses with ``DeferredToolRequests``.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from guardkit.plugins.pydantic_ai import ACTION_ID_KEY, GuardCapability, GuardedToolset
from pydantic_ai import Agent, ApprovalRequired, CallDeferred, DeferredToolRequests, RunContext
from pydantic_ai.toolsets import FunctionToolset

import guardkit
from guardkit import PolicyError
from tests.frameworks._pydantic_ai_support import (
    POLICY,
    Script,
    backend,
    backend_kind,
    http_url,
    make_backend,
)

__all__ = ["backend", "backend_kind", "http_url", "make_backend"]  # fixtures

OUTPUT = [str, DeferredToolRequests]


def paying(ran: list[Any], *, requires_approval: bool = False) -> FunctionToolset[Any]:
    toolset: FunctionToolset[Any] = FunctionToolset()

    @toolset.tool_plain(requires_approval=requires_approval)
    def pay(amount: int) -> str:
        ran.append(amount)
        return f"paid {amount}"

    @toolset.tool_plain(requires_approval=requires_approval)
    def add(a: int, b: int) -> int:
        ran.append((a, b))
        return a + b

    return toolset


def one_action(backend: Any, tool: str) -> str:
    [requested] = backend.requested(tool)
    return str(requested["action_id"])


@pytest.mark.parametrize("pydantic_ai_approval", [False, True], ids=["guard-only", "both"])
def test_one_console_approval_covers_both_systems(backend, pydantic_ai_approval):
    ran: list[Any] = []
    script = Script([[("pay", {"amount": 5})], "paid"])
    toolset = paying(ran, requires_approval=pydantic_ai_approval)
    agent = Agent(
        script.model,
        output_type=OUTPUT,
        toolsets=[toolset],
        capabilities=[GuardCapability(backend.agent, poll=0.05)],
    )
    decider = backend.decide_when_pending(approve=True)
    assert backend.run(agent, "pay") == "paid"
    decider.join()
    assert ran == [5]
    action_id = one_action(backend, "pay")
    assert decider.decided == action_id
    assert backend.outcome(action_id)["status"] == "success"
    [allowed] = [r for r in backend.records("action_allowed") if r["action_id"] == action_id]
    assert allowed["approved_by"] == "alice"


def test_approval_required_toolset_and_tools_that_ask_at_run_time(make_backend):
    backend = make_backend()
    ran: list[Any] = []
    toolset: FunctionToolset[Any] = FunctionToolset()

    @toolset.tool
    def pay(ctx: RunContext[None], amount: int) -> str:
        if not ctx.tool_call_approved:
            raise ApprovalRequired
        ran.append(amount)
        return f"paid {amount}"

    script = Script([[("pay", {"amount": 3})], [("add", {"a": 1, "b": 2})], "done"])
    approval_wrapped = paying(ran).filtered(lambda ctx, d: d.name == "add").approval_required()
    agent = Agent(
        script.model,
        output_type=OUTPUT,
        toolsets=[GuardedToolset(toolset, backend.agent, poll=0.05)],
    )
    decider = backend.decide_when_pending(approve=True)
    assert backend.run(agent, "pay") == "done"
    decider.join()
    assert ran == [3]
    # ApprovalRequiredToolset under a guard that requires approval: the same single approval.
    rules = {**POLICY["tools"], "add": {"cost": 1, "requires_approval": True}}
    guarded = make_backend({**POLICY, "tools": rules})
    agent = Agent(
        Script([[("add", {"a": 1, "b": 2})], "3"]).model,
        output_type=OUTPUT,
        toolsets=[GuardedToolset(approval_wrapped, guarded.agent, poll=0.05)],
    )
    decider = guarded.decide_when_pending(approve=True)
    assert guarded.run(agent, "add") == "3"
    decider.join()
    assert ran == [3, (1, 2)]
    assert guarded.outcome(one_action(guarded, "add"))["status"] == "success"


@pytest.mark.parametrize("how", ["requires_approval", "approval_required_toolset"])
def test_a_pydantic_ai_approval_the_policy_does_not_ask_for_fails_closed(backend, how):
    ran: list[Any] = []
    if how == "requires_approval":
        toolset: Any = paying(ran, requires_approval=True)
    else:
        toolset = paying(ran).approval_required()
    script = Script([[("add", {"a": 1, "b": 1})], "never"])
    agent = Agent(
        script.model, output_type=OUTPUT, toolsets=[GuardedToolset(toolset, backend.agent)]
    )
    with pytest.raises(PolicyError, match=r"tools\.add\.requires_approval"):
        backend.run(agent, "add")
    assert ran == []
    outcome = backend.outcome(one_action(backend, "add"))
    assert outcome["status"] == "failure"
    assert outcome["detail"].startswith("not run: pydantic-ai requires a human approval")


def test_a_call_deferred_by_its_tool_carries_its_action_id(backend):
    toolset: FunctionToolset[Any] = FunctionToolset()

    @toolset.tool_plain
    def lookup(key: str) -> str:
        raise CallDeferred(metadata={"queue": "batch"})

    script = Script([[("lookup", {"key": "k1"})], "never"])
    agent = Agent(
        script.model, output_type=OUTPUT, toolsets=[GuardedToolset(toolset, backend.agent)]
    )
    output = backend.run(agent, "look")
    assert isinstance(output, DeferredToolRequests)
    [call] = output.calls
    action_id = one_action(backend, "lookup")
    assert output.metadata[call.tool_call_id] == {"queue": "batch", ACTION_ID_KEY: action_id}
    assert backend.outcome(action_id) is None  # whoever runs it reports
    backend.agent.report(action_id, "success")
    assert backend.outcome(action_id)["status"] == "success"


# -- already-guarded tools: handed the call, one action each ------------------------------------


def guarded_tools(ran: list[Any]) -> FunctionToolset[Any]:
    toolset: FunctionToolset[Any] = FunctionToolset()

    @toolset.tool_plain
    @guardkit.tool()
    def lookup(key: str) -> str:
        ran.append(key)
        return key.upper()

    @toolset.tool_plain
    @guardkit.tool()
    async def greet(name: str) -> str:
        ran.append(name)
        return f"hi {name}"

    @toolset.tool_plain
    @guardkit.tool()
    def rm(path: str) -> str:
        ran.append(path)
        return "removed"

    @toolset.tool_plain
    @guardkit.tool(poll=0.05)
    def pay(amount: int) -> str:
        ran.append(amount)
        return f"paid {amount}"

    return toolset


def test_already_guarded_tools_are_asked_once(backend):
    ran: list[Any] = []
    calls = [("lookup", {"key": "k"}), ("greet", {"name": "Ada"}), ("rm", {"path": "/"})]
    script = Script([calls, "done"])
    agent = Agent(script.model, capabilities=[GuardCapability(backend.agent)])
    assert backend.run(agent, "go", toolsets=[guarded_tools(ran)]) == "done"
    assert sorted(ran) == ["Ada", "k"]
    told = script.tool_results()
    assert told["lookup"] == "K"
    assert told["greet"] == "hi Ada"
    assert told["rm"].startswith("Denied by the policy guard: tool 'rm' is not allowed")
    for tool in ("lookup", "greet"):
        assert backend.outcome(one_action(backend, tool))["status"] == "success"
    assert len(backend.requested("rm")) == 1


def test_an_already_guarded_tool_waits_for_the_console_once(backend):
    ran: list[Any] = []
    script = Script([[("pay", {"amount": 9})], "paid"])
    agent = Agent(script.model, toolsets=[GuardedToolset(guarded_tools(ran), backend.agent)])
    decider = backend.decide_when_pending(approve=True)
    assert backend.run(agent, "pay") == "paid"
    decider.join()
    assert ran == [9]
    assert backend.outcome(one_action(backend, "pay"))["status"] == "success"


# -- an approval from another process: the CLI ---------------------------------------------------


def test_an_approval_from_the_cli_in_another_process(make_backend, backend_kind):
    if backend_kind != "sqlite":
        pytest.skip("the CLI approves in a SQLite ledger by path")
    guarded = make_backend()
    ran: list[Any] = []
    script = Script([[("pay", {"amount": 4})], "paid"])
    agent = Agent(script.model, toolsets=[GuardedToolset(paying(ran), guarded.agent, poll=0.05)])
    approved: list[subprocess.CompletedProcess[str]] = []

    def approve_from_cli() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not guarded.operator.pending(guarded.agent_id):
            time.sleep(0.02)
        [item] = guarded.operator.pending(guarded.agent_id)
        command = [sys.executable, "-m", "guardkit", "approve", guarded.agent_id]
        command += [item["action"]["action_id"], "--by", "bob", "--db", guarded.db]
        approved.append(subprocess.run(command, capture_output=True, text=True, check=False))

    thread = threading.Thread(target=approve_from_cli, daemon=True)
    thread.start()
    assert guarded.run(agent, "pay") == "paid"
    thread.join()
    assert approved[0].returncode == 0, approved[0].stderr
    assert ran == [4]
    [allowed] = guarded.records("action_allowed")
    assert allowed["approved_by"] == "bob"
