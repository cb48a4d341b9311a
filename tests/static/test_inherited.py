"""A tool class's run method inherited from a base between it and the tool interface (issue
20): the interface declares ``call`` as a stub, a base implements it (it parses the input and
ranks through its own hook ``score``), and the registered tool class overrides only the hook.
What runs for the model is the base's ``call``, reported once where it is defined; the hook is
a helper of the tool, not one the model can run. A base's concrete method that implements no
stub stays shared plumbing: its hooks are the tools (``run_async`` calling ``run_impl``)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

BASE = """\
import json

TOOLS = {}


def register(name):
    def add(cls):
        TOOLS[name] = cls
        return cls

    return add


class Tool:
    def call(self, params):
        raise NotImplementedError


class Finder(Tool):
    def call(self, params):
        query = json.loads(params)["query"]
        with open("index.txt") as f:
            lines = f.read().splitlines()
        ranked = sorted(lines, key=lambda line: self.score(query, line))
        return ranked[:5]

    def score(self, query, line):
        raise NotImplementedError
"""

KINDS = """\
from kit.base import Finder, Tool, register


@register("by_length")
class LengthFinder(Finder):
    def score(self, query, line):
        return abs(len(line) - len(query))


@register("by_words")
class WordFinder(Finder):
    def score(self, query, line):
        return -len(set(query.split()) & set(line.split()))


@register("shout")
class Shout(Tool):
    def call(self, params):
        return params.upper()
"""

AGENT = """\
from openai import OpenAI

from kit import kinds
from kit.base import TOOLS

client = OpenAI()


def step(messages, table):
    reply = client.chat.completions.create(model="m", messages=messages, tools=[])
    for tc in reply.choices[0].message.tool_calls or []:
        tool = table[tc.function.name]
        messages.append({"role": "tool", "content": str(tool.call(tc.function.arguments))})


def run(messages):
    table = {name: cls() for name, cls in TOOLS.items()}
    for _ in range(5):
        step(messages, table)
"""


@pytest.fixture
def kit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kit").mkdir()
    (tmp_path / "kit" / "__init__.py").write_text("")
    (tmp_path / "kit" / "base.py").write_text(BASE)
    (tmp_path / "kit" / "kinds.py").write_text(KINDS)
    (tmp_path / "kit" / "agent.py").write_text(AGENT)
    return tmp_path


def test_the_inherited_run_method_is_the_tool_and_the_overridden_hook_is_none(
    kit: Path, found: Found
) -> None:
    assert found() == {
        ("kit/agent.py", 10, "GK102", "client.chat.completions.create"),
        ("kit/agent.py", 13, "GK202", "table[tc.function.name]"),
        ("kit/base.py", 20, "GK201", "Finder.call"),
        ("kit/kinds.py", 18, "GK201", "Shout.call"),
    }


def test_a_class_handed_over_runs_the_method_it_inherits(kit: Path, found: Found) -> None:
    # the classes handed to the model as its tools (no run method called on them here): each
    # class's entry is what an instance runs, the base's call for a finder
    agent = kit / "kit" / "agent.py"
    agent.write_text(
        textwrap.dedent(
            """\
            from openai import OpenAI

            from kit.kinds import LengthFinder, Shout

            client = OpenAI()


            def ask(messages):
                tools = [LengthFinder, Shout]
                return client.chat.completions.create(model="m", messages=messages, tools=tools)
            """
        )
    )
    assert found() == {
        ("kit/agent.py", 10, "GK102", "client.chat.completions.create"),
        ("kit/base.py", 20, "GK201", "Finder.call"),
        ("kit/kinds.py", 18, "GK201", "Shout.call"),
    }
