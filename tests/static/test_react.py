"""A ReAct agent reads its action out of the model's text with a regular expression (issue 20):
``[ACTION.match(line) for line in reply.split("\\n")]`` then ``.groups()`` gives the action's
name and input, and ``known_actions[action](action_input)`` runs the one the model wrote. The
comprehension's elements are the model's words as much as the reply is; a comprehension over
something else (the module's own list of names) picks nothing."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

REACT = """\
import re

from openai import OpenAI

client = OpenAI()
ACTION = re.compile(r"^Action: (\\w+): (.*)$")


def wikipedia(query):
    return query


def calculate(expression):
    return str(len(expression))


known_actions = {"wikipedia": wikipedia, "calculate": calculate}


def query(question, max_turns=5):
    messages = [{"role": "user", "content": question}]
    for _ in range(max_turns):
        reply = client.chat.completions.create(model="gpt-4o", messages=messages)
        text = reply.choices[0].message.content
        actions = [ACTION.match(line) for line in text.split("\\n") if ACTION.match(line)]
        if not actions:
            return text
        action, action_input = actions[0].groups()
        observation = known_actions[action](action_input)
        messages.append({"role": "user", "content": f"Observation: {observation}"})
"""


@pytest.fixture
def react(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "react.py").write_text(textwrap.dedent(REACT))
    return tmp_path / "react.py"


def _rules(found: Found) -> set[tuple[int, str, str]]:
    return {(f[1], f[2], f[3]) for f in found() if f[2] in {"GK201", "GK202"}}


def test_the_action_a_regular_expression_reads_from_the_reply_picks_the_tool(
    react: Path, found: Found
) -> None:
    assert _rules(found) == {
        (9, "GK201", "wikipedia"),
        (13, "GK201", "calculate"),
        (29, "GK202", "known_actions[action]"),
    }


def test_a_comprehension_over_the_modules_own_names_picks_nothing(
    react: Path, found: Found
) -> None:
    react.write_text(
        react.read_text().replace(
            'for line in text.split("\\n") if ACTION.match(line)]',
            "for line in sorted(known_actions)]",
        )
    )
    assert _rules(found) == set()
