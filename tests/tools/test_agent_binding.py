"""use_agent/current_agent, agent.tool delegation, and failing closed with no agent."""

from __future__ import annotations

import asyncio
import pickle
import threading

import pytest

import guardkit
from guardkit import NoAgentConfigured


def test_no_agent_fails_closed(calls):
    @guardkit.tool()
    def send(to: str) -> None:
        calls(to)

    with pytest.raises(NoAgentConfigured, match="use_agent") as info:
        send("bob")
    assert calls.count == 0
    # A stop, not an error: except-Exception handlers and retry wrappers let it through.
    assert isinstance(info.value, guardkit.GuardStop)
    assert "tool call" in info.value.message
    with pytest.raises(NoAgentConfigured, match="model turn"):
        guardkit.current_agent("model turn")


def test_the_environment_configures_an_embedded_guard(calls, tmp_path, monkeypatch):
    policy = tmp_path / "policy.toml"
    policy.write_text("budget = 5\n[tools.send]\ncost = 1\n", encoding="utf-8")
    monkeypatch.setenv("GUARDKIT_AGENT", "env-bot")
    monkeypatch.setenv("GUARDKIT_DB", str(tmp_path / "env.db"))
    monkeypatch.setenv("GUARDKIT_POLICY", str(policy))

    @guardkit.tool()
    def send(to: str) -> str:
        calls(to)
        return to

    assert send("bob") == "bob"
    agent = guardkit.current_agent()
    assert agent.agent_id == "env-bot"
    assert agent.status()["spent"] == 1
    with guardkit.Guard(str(tmp_path / "env.db")) as again:  # the same ledger, reopened
        assert again.status("env-bot")["actions_allowed"] == 1
    assert isinstance(agent, guardkit.LocalAgent)
    agent.guard.close()


def test_an_environment_that_cannot_work_says_what_to_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("GUARDKIT_AGENT", "ghost")
    monkeypatch.setenv("GUARDKIT_DB", str(tmp_path / "empty.db"))
    with pytest.raises(NoAgentConfigured, match="GUARDKIT_POLICY"):
        guardkit.current_agent()
    monkeypatch.setenv("GUARDKIT_URL", "http://127.0.0.1:9")
    with pytest.raises(NoAgentConfigured, match="GUARDKIT_TOKEN"):
        guardkit.current_agent()


def test_plain_call_sets_the_process_default(agent):
    guardkit.use_agent(agent)
    assert guardkit.current_agent() is agent
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.append(guardkit.current_agent()))
    thread.start()
    thread.join()
    assert seen == [agent]


def test_context_manager_scopes_and_restores(make_agent):
    outer, inner = make_agent(), make_agent()
    guardkit.use_agent(outer)
    with guardkit.use_agent(inner) as active:
        assert active is inner
        assert guardkit.current_agent() is inner
    assert guardkit.current_agent() is outer


def test_context_manager_without_default_leaves_none(agent):
    with guardkit.use_agent(agent):
        assert guardkit.current_agent() is agent
    with pytest.raises(NoAgentConfigured):
        guardkit.current_agent()


def test_scopes_are_isolated_between_asyncio_tasks(make_agent):
    first, second = make_agent(), make_agent()

    async def run(agent: guardkit.LocalAgent) -> guardkit.AgentGuard:
        with guardkit.use_agent(agent):
            await asyncio.sleep(0.01)
            return guardkit.current_agent()

    async def main() -> list[guardkit.AgentGuard]:
        return list(await asyncio.gather(run(first), run(second)))

    assert asyncio.run(main()) == [first, second]


def test_use_agent_rejects_non_agents():
    with pytest.raises(TypeError):
        guardkit.use_agent(object())  # type: ignore[arg-type]


def test_decorator_guard_wins_over_default(make_agent, ledger):
    default, explicit = make_agent(), make_agent()
    guardkit.use_agent(default)

    @guardkit.tool(guard=explicit)
    def f() -> int:
        return 1

    f()
    assert len(ledger(explicit, "action_requested")) == 1
    assert ledger(default, "action_requested") == []


def test_agent_tool_is_the_same_decorator(agent, ledger):
    @agent.tool("search", cost=2, wait_for_approval=False, output="trusted")
    def search(query: str) -> list[str]:
        return [query]

    assert search("q") == ["q"]
    (request,) = ledger(agent, "action_requested")
    assert request == {"action_id": "act-1", "tool": "search", "cost": 2, "input": {"query": "q"}}
    assert type(search).__name__ == "FunctionWrapper"


def test_no_agent_error_pickles():
    error = NoAgentConfigured("none")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is NoAgentConfigured
    assert again.code == "no_agent"
