"""What the model returned, through an annotated assignment, picks a callee; and what a
dispatch picked by the reply can reach are tools (issue 20): ``data: dict = json.loads(reply)``
carries the reply as ``data = ...`` does, and ``getattr(backend, name)`` with ``name`` parsed out
of the reply runs every public method of ``backend``'s class, as it does when ``name`` is a tool
call's name."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

LLM = """\
from openai import OpenAI

client = OpenAI()


def ask(messages):
    reply = client.chat.completions.create(model="m", messages=messages)
    return reply.choices[0].message.content
"""

AGENT = """\
import json
import re

from llm import ask


class Search:
    def find_class(self, name):
        return f"class {name}"

    def find_method(self, name):
        return f"def {name}"

    def _cache(self):
        return {}


def parse_call(text):
    match = re.match(r"(\\w+)\\((.*)\\)", text)
    return match.group(1), match.group(2).split(",")


class Agent:
    def __init__(self):
        self.search = Search()

    def run(self, task):
        messages = [{"role": "user", "content": task}]
        for _ in range(5):
            plan: dict = json.loads(ask(messages))
            for text in plan.get("calls", []):
                name, args = parse_call(text)
                found = getattr(self.search, name)(*args)
                messages.append({"role": "user", "content": found})
"""


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "llm.py").write_text(LLM)
    path = tmp_path / "agent.py"
    path.write_text(textwrap.dedent(AGENT))
    return path


def _found(found: Found) -> set[tuple[str, str]]:
    return {(rule, symbol) for _, _, rule, symbol in found() if rule in {"GK201", "GK202"}}


def test_an_annotated_parse_of_the_reply_selects_the_callee_and_its_tools(
    agent: Path, found: Found
) -> None:
    assert _found(found) == {
        ("GK202", "getattr(self.search, name)"),
        ("GK201", "Search.find_class"),
        ("GK201", "Search.find_method"),
    }


def test_without_the_annotation_the_same(agent: Path, found: Found) -> None:
    agent.write_text(agent.read_text().replace("plan: dict = ", "plan = "))
    assert ("GK201", "Search.find_class") in _found(found)


def test_a_name_the_program_chose_selects_nothing(agent: Path, found: Found) -> None:
    agent.write_text(
        agent.read_text().replace("getattr(self.search, name)", "self.search.find_class")
    )
    assert _found(found) == set()
