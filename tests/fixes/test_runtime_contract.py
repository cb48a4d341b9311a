"""The code the codemods insert runs against guardkit's real runtime (the names they rely on:
``guardkit.model_turn()`` as a context manager that raises ``guardkit.TurnDenied`` when the
turn is denied, ``guardkit.tool()``, ``guardkit.current_agent``)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from guardkit.codemods.analysis.catalog import DEFAULT_CATALOG
from guardkit.codemods.config import Config
from guardkit.codemods.fixer import fix_source
from guardkit.codemods.testing import dedent

import guardkit

AGENT = """
import fakeai

client = fakeai.Client()


def search(q):
    return f"found {q}"


def wipe(q):
    return "wiped"


TOOLS = {"search": search, "wipe": wipe}


def run(calls):
    while True:
        calls.append(client.chat.completions.create(model="m"))


def ask():
    return client.chat.completions.create(model="m")
"""


class _Completions:
    def create(self, **kwargs: Any) -> str:
        return "reply"


class _Client:
    def __init__(self) -> None:
        self.chat = types.SimpleNamespace(completions=_Completions())


@pytest.fixture
def fixed(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setitem(sys.modules, "fakeai", types.SimpleNamespace(Client=_Client))
    catalog = DEFAULT_CATALOG.extended(clients={"fakeai.Client": "openai"})
    result = fix_source(dedent(AGENT), "agent.py", Config(catalog=catalog, max_turns=5))
    assert result.applied == ("BoundModelLoops", "GateModelCalls", "AddToolGuard")
    namespace: dict[str, Any] = {"__name__": "fixed_agent"}
    exec(compile(result.after, "agent.py", "exec"), namespace)
    return namespace


def _agent(turns: int) -> Any:
    guard = guardkit.Guard(":memory:")
    policy = {
        "budget": 100,
        "tools": {"llm_turn": {"cost": 1, "max_calls": turns}, "search": {"cost": 1}},
    }
    guard.create_agent("bot", policy)
    return guard.agent("bot")


def test_gate_stops_the_loop_when_the_turn_budget_is_spent(fixed: dict[str, Any]) -> None:
    calls: list[str] = []
    with guardkit.use_agent(_agent(turns=3)), pytest.raises(guardkit.TurnDenied):
        fixed["run"](calls)
    assert calls == ["reply"] * 3


def test_inserted_counter_bounds_the_loop_even_when_the_guard_allows(fixed: dict[str, Any]) -> None:
    calls: list[str] = []
    with guardkit.use_agent(_agent(turns=100)):
        fixed["run"](calls)
    assert len(calls) == 5  # max_turns


def test_gate_outside_a_loop_raises_turn_denied(fixed: dict[str, Any]) -> None:
    with guardkit.use_agent(_agent(turns=1)):
        assert fixed["ask"]() == "reply"
        with pytest.raises(guardkit.TurnDenied):
            fixed["ask"]()


def test_inserted_tool_guard_asks_the_current_agent(fixed: dict[str, Any]) -> None:
    with guardkit.use_agent(_agent(turns=1)):
        assert fixed["TOOLS"]["search"]("x") == "found x"
        with pytest.raises(guardkit.ToolDenied):
            fixed["TOOLS"]["wipe"]("x")
