"""Agents SDK ways around the guard (issue 24), each closed: agents used as tools, tools added
after ``guard_tools``, clones, the policy's declared path checks, cancelled calls."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from agents import Agent, function_tool
from guardkit.plugins.openai_agents import GuardHooks, guard_tools

from guardkit import Guard
from tests.frameworks.openai_agents_kit import ScriptedModel, run

POLICY: dict[str, Any] = {
    "budget": 50,
    "scar_limit": 50,
    "tools": {"llm_turn": {"cost": 1}, "ask_helper": {"cost": 1}, "lookup": {"cost": 1}},
}


def _records(guard: Guard, agent_id: str, kind: str) -> list[dict[str, Any]]:
    return [r["payload"] for r in guard.log(agent_id)["records"] if r["kind"] == kind]


def _tools_requested(guard: Guard, agent_id: str) -> list[str]:
    return [r["tool"] for r in _records(guard, agent_id, "action_requested")]


def test_an_agent_used_as_a_tool_has_its_tools_guarded_and_its_turns_gated() -> None:
    wiped: list[str] = []

    @function_tool
    def wipe_disk(device: str) -> str:
        """Wipe a disk."""
        wiped.append(device)
        return "wiped"

    guard = Guard(":memory:")
    guard.create_agent("ops", POLICY)
    agent = guard.agent("ops")
    helper_model = ScriptedModel([("wipe_disk", {"device": "/dev/sda"})], "done")
    helper = Agent(name="helper", model=helper_model, tools=[wipe_disk])
    top_model = ScriptedModel([("ask_helper", {"input": "wipe it"})], "all done")
    top = Agent(
        name="top", model=top_model, tools=[helper.as_tool("ask_helper", "Ask the helper.")]
    )
    guard_tools(top, agent)
    asyncio.run(run(top, hooks=GuardHooks(agent)))
    assert wiped == []
    requested = _tools_requested(guard, "ops")
    # two top turns, the helper tool, two helper turns, and the denied wipe_disk
    assert requested.count("llm_turn") == 4
    assert "wipe_disk" in requested
    denied = _records(guard, "ops", "action_denied")
    assert [d["reason"]["code"] for d in denied] == ["tool_not_allowed"]


def test_a_tool_appended_after_guard_tools_is_guarded_at_the_hook() -> None:
    dropped: list[str] = []

    @function_tool
    def drop_db(name: str) -> str:
        """Drop a database."""
        dropped.append(name)
        return "dropped"

    guard = Guard(":memory:")
    guard.create_agent("ops", POLICY)
    agent = guard.agent("ops")
    model = ScriptedModel([("drop_db", {"name": "prod"})], "done")
    worker = guard_tools(Agent(name="worker", model=model, tools=[]), agent)
    worker.tools.append(drop_db)
    asyncio.run(run(worker, hooks=GuardHooks(agent)))
    assert dropped == []
    assert _records(guard, "ops", "scar")


def test_a_clones_new_tools_are_guarded_at_the_hook() -> None:
    dropped: list[str] = []

    @function_tool
    def drop_db(name: str) -> str:
        """Drop a database."""
        dropped.append(name)
        return "dropped"

    guard = Guard(":memory:")
    guard.create_agent("ops", POLICY)
    agent = guard.agent("ops")
    model = ScriptedModel([("drop_db", {"name": "prod"})], "done")
    worker = guard_tools(Agent(name="worker", model=model, tools=[]), agent)
    clone = worker.clone(tools=[drop_db])
    asyncio.run(run(clone, hooks=GuardHooks(agent)))
    assert dropped == []
    assert "drop_db" in _tools_requested(guard, "ops")


def test_the_policys_path_rules_apply_to_guarded_tools(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    read: list[str] = []

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        read.append(path)
        return "secret"

    guard = Guard(":memory:")
    policy = {
        "budget": 10,
        "tools": {
            "llm_turn": {"cost": 0},
            "read_file": {"cost": 1, "paths": {"path": {"allow": [str(reports)]}}},
        },
    }
    guard.create_agent("ops", policy)
    agent = guard.agent("ops")
    escape = str(reports / ".." / ".." / "etc" / "passwd")
    model = ScriptedModel(
        [("read_file", {"path": "/etc/shadow"}), ("read_file", {"path": escape})], "done"
    )
    worker = guard_tools(Agent(name="worker", model=model, tools=[read_file]), agent)
    asyncio.run(run(worker, hooks=GuardHooks(agent)))
    assert read == []
    denied = _records(guard, "ops", "action_denied")
    assert [d["reason"]["code"] for d in denied] == ["path_denied", "path_denied"]


def test_a_call_cancelled_by_a_callers_timeout_is_reported_failure() -> None:
    @function_tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        await asyncio.sleep(30)
        return key

    guard = Guard(":memory:")
    guard.create_agent("ops", POLICY)
    agent = guard.agent("ops")
    model = ScriptedModel([("lookup", {"key": "k"})], "done")
    worker = guard_tools(Agent(name="worker", model=model, tools=[lookup]), agent)

    async def main() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(run(worker, hooks=GuardHooks(agent)), 0.5)

    asyncio.run(main())
    lookups = [
        r["action_id"] for r in _records(guard, "ops", "action_requested") if r["tool"] == "lookup"
    ]
    outcomes = {r["action_id"]: r for r in _records(guard, "ops", "outcome")}
    assert len(lookups) == 1
    assert outcomes[lookups[0]]["status"] == "failure"
    assert outcomes[lookups[0]]["fault"] == "caller"  # the caller's timeout: no scar
    assert agent.status()["scars"] == []
