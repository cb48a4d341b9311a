"""A loop bounded through a step object's methods (issue 20): ``budget.spend()`` steps
``budget.used`` when ``spend`` is ``self.used += 1``, and ``budget.exhausted()`` compares it
when it returns ``self.used >= self.allowed``; a loop that calls the first on every turn that
goes round and leaves when the second holds is bounded, wherever the class is defined, and so
is one that mixes a method and a counter it writes itself. The same calls on two objects, of
methods on two counters, of a stepper only some turns reach, or of a check that compares a
text or an infinite limit, or that leaves nothing, bound nothing."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

BUDGET = """\
class Budget:
    def __init__(self, allowed=20):
        self.used = 0
        self.allowed = allowed
        self.state = "open"

    def spend(self):
        self.used += 1

    def exhausted(self):
        return self.used >= self.allowed - 1

    def closed(self):
        return self.state == "closed"
"""

AGENT = """\
import anthropic

from bot.budget import Budget

client = anthropic.Anthropic()


class Agent:
    def __init__(self):
        self.budget = Budget()
        self.spare = Budget()

    def solve(self, messages):
        while True:
            if self.budget.exhausted():
                return None
            reply = client.messages.create(model="m", max_tokens=64, messages=messages)
            if reply.stop_reason == "end_turn":
                return reply
            messages.append(reply)
            self.budget.spend()
"""


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    monkeypatch.chdir(tmp_path)

    def files(**sources: str) -> None:
        (tmp_path / "bot").mkdir(exist_ok=True)
        (tmp_path / "bot" / "__init__.py").write_text("")
        for name, text in sources.items():
            (tmp_path / "bot" / f"{name}.py").write_text(textwrap.dedent(text))

    return files


def _loops(found: Found) -> set[tuple[str, int]]:
    return {(p, line) for p, line, rule, _ in found() if rule == "GK101"}


WHILE_NOT = AGENT.replace("while True:", "while not self.budget.exhausted():").replace(
    "            if self.budget.exhausted():\n                return None\n", ""
)
#: the counter stepped in the loop itself, compared by the method
INLINE_STEP = AGENT.replace("self.budget.spend()", "self.budget.used += 1")
#: the counter stepped by the method, compared in the loop itself
INLINE_TEST = AGENT.replace(
    "if self.budget.exhausted():", "if self.budget.used > self.budget.allowed:"
)


@pytest.mark.parametrize(
    "agent", [AGENT, WHILE_NOT, INLINE_STEP, INLINE_TEST], ids=["if", "while", "step", "test"]
)
def test_a_loop_that_steps_and_checks_a_step_object_is_bounded(
    write: Callable[..., None], found: Found, agent: str
) -> None:
    write(budget=BUDGET, agent=agent)
    assert _loops(found) == set()


def test_the_step_object_may_be_defined_in_the_loops_module(
    write: Callable[..., None], found: Found
) -> None:
    write(agent=AGENT.replace("from bot.budget import Budget\n", BUDGET))
    assert _loops(found) == set()


@pytest.mark.parametrize(
    ("budget", "agent"),
    [
        # the check is made on another object than the one stepped
        (BUDGET, AGENT.replace("self.budget.exhausted()", "self.spare.exhausted()")),
        # the check compares a text, not the counter
        (BUDGET, AGENT.replace("self.budget.exhausted()", "self.budget.closed()")),
        # only the turns that pass a test step the counter
        (
            BUDGET,
            AGENT.replace(
                "            self.budget.spend()",
                "            if messages:\n                self.budget.spend()",
            ),
        ),
        # the check leaves nothing: the loop goes on
        (
            BUDGET,
            AGENT.replace("                return None", "                print('over budget')"),
        ),
        # the limit is infinite
        (BUDGET.replace("allowed=20", 'allowed=float("inf")'), AGENT),
        # the method steps another counter than the one compared
        (BUDGET.replace("self.used += 1", "self.spent = self.spent + 1"), AGENT),
    ],
    ids=["other-object", "text", "some-turns", "no-exit", "infinite", "other-counter"],
)
def test_a_step_object_that_does_not_count_the_turns_bounds_nothing(
    write: Callable[..., None], found: Found, budget: str, agent: str
) -> None:
    write(budget=budget, agent=agent)
    assert _loops(found) == {("bot/agent.py", 14)}
