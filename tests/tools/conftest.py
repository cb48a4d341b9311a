"""Shared helpers for the tool-wrapping tests: an in-memory guard, agents, ledger queries."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import guardkit
from guardkit.tools import scope

ALLOW_ALL: dict[str, Any] = {
    "budget": 1000,
    "scar_limit": 100,
    "tools": {},
    "default_rule": {"cost": 0},
}


@pytest.fixture
def guard() -> Iterator[guardkit.Guard]:
    with guardkit.Guard(":memory:") as g:
        yield g


@pytest.fixture
def make_agent(guard: guardkit.Guard) -> Callable[..., guardkit.LocalAgent]:
    """``make_agent(tools={...}, **policy_fields)``: a fresh agent (allow-all by default)."""
    counter = iter(range(10_000))

    def make(tools: dict[str, Any] | None = None, **fields: Any) -> guardkit.LocalAgent:
        policy = {**ALLOW_ALL, **fields}
        if tools is not None:
            policy["tools"] = tools
        agent_id = f"agent-{next(counter)}"
        guard.create_agent(agent_id, policy)
        return guard.agent(agent_id)

    return make


@pytest.fixture
def agent(make_agent: Callable[..., guardkit.LocalAgent]) -> guardkit.LocalAgent:
    return make_agent()


@pytest.fixture(autouse=True)
def _no_default_agent() -> Iterator[None]:
    """Every test starts and ends with no process-wide default agent."""
    scope._process_default[0] = None
    yield
    scope._process_default[0] = None


def records(agent: guardkit.LocalAgent, kind: str | None = None) -> list[dict[str, Any]]:
    """The agent's ledger records (payloads), optionally of one kind."""
    log = agent.guard.log(agent.agent_id)["records"]
    return [r["payload"] for r in log if kind is None or r["kind"] == kind]


def last_input(agent: guardkit.LocalAgent) -> dict[str, Any]:
    return records(agent, "action_requested")[-1]["input"]


class Calls:
    """Counts how often a tool body ran."""

    def __init__(self) -> None:
        self.count = 0
        self.args: list[Any] = []

    def __call__(self, *args: Any) -> None:
        self.count += 1
        self.args.append(args)


@pytest.fixture
def calls() -> Calls:
    return Calls()


@pytest.fixture
def ledger() -> Callable[..., list[dict[str, Any]]]:
    """``ledger(agent, kind=None)``: the agent's record payloads."""
    return records


def run_scenarios(script: str, work: Path) -> dict[str, Any]:
    """Run ``helpers/<script>`` in a child process (an audit hook can never be removed) and
    return the JSON object it prints: scenario name -> what happened."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "helpers" / script), str(work)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results: dict[str, Any] = json.loads(done.stdout)
    return results
