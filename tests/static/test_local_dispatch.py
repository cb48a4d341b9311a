"""Dispatch written inside one method (issue 20): a name-to-callable table that is a local
literal of the method that looks the model's choice up (bound methods, functions, what a
lambda or a ``partial`` calls) holds the tools; the tool's input stays the input through a
helper that cleans it (``parsed = self.clean_args(tool_args)``); a project helper that asks
the model run on a thread (``asyncio.to_thread(self.ask, ...)``) returns the model's reply; a
chain on a message's ``role`` is the chat protocol's, not the model's choice."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

LOCAL_TABLE = """\
import functools
import json
import shutil

from openai import OpenAI

client = OpenAI()


def write_note(owner, text: str) -> str:
    return text


def move(source: str, target: str) -> str:
    return shutil.move(source, target)


class Worker:
    def plan(self, steps: list) -> str:
        return ",".join(steps)

    def summary(self) -> str:
        return "not a tool"

    def go(self, goal: str) -> None:
        handlers = {
            "plan": self.plan,
            "note": lambda **kw: write_note(self, **kw),
            "move": functools.partial(move, "/tmp"),
        }
        for _ in range(3):
            reply = client.chat.completions.create(model="m", messages=[], tools=[])
            for call in reply.choices[0].message.tool_calls or []:
                args = json.loads(call.function.arguments)
                handlers[call.function.name](**args)
"""

CLEANED = """\
import json

from openai import OpenAI

client = OpenAI()


class Search:
    name = "search"

    def execute(self, args):
        return f"results for {args['q']}"


class Shell:
    name = "shell"

    def execute(self, args):
        return f"ran {args['cmd']}"


class Executor:
    def __init__(self, tools):
        self.tools = tools

    def run(self, tool_name, tool_args):
        tools = {t.name: t for t in self.tools}
        if tool_name in tools:
            parsed = self.clean(tool_args)
            return tools[tool_name].execute(parsed)
        return "unknown"

    def rehearse(self, tool_name, tool_args):
        tools = {t.name: t for t in self.tools}
        label = "dry run"
        return tools[tool_name].execute(label)

    def clean(self, args):
        return {k: v for k, v in args.items() if v is not None}


def step(messages):
    reply = client.chat.completions.create(model="m", messages=messages)
    data = json.loads(reply.choices[0].message.content)
    return Executor([Search(), Shell()]).run(data["tool"]["name"], data["tool"]["args"])
"""

THREADED = """\
import asyncio
import json

from openai import OpenAI

client = OpenAI()


class Notebook:
    def __init__(self):
        self.rows = {}

    async def reconcile(self, facts):
        text = await asyncio.to_thread(self.ask, [{"role": "user", "content": str(facts)}])
        for item in json.loads(text).get("memory", []):
            op = item.get("event")
            if op == "ADD":
                self.create(item["text"])
            elif op == "DELETE":
                self.delete(item["id"])

    def ask(self, messages):
        reply = client.chat.completions.create(model="m", messages=messages)
        return reply.choices[0].message.content

    def create(self, text):
        self.rows[len(self.rows)] = text

    def delete(self, row):
        self.rows.pop(row, None)
"""

ROLES = """\
import json

from openai import OpenAI

client = OpenAI()


class Post:
    def __init__(self):
        self.parts = []

    def set_message(self, text):
        self.parts.append(("message", text))

    def attach(self, text, kind):
        self.parts.append((kind, text))


def ask(messages):
    message = client.chat.completions.create(model="m", messages=messages).choices[0].message
    if message.tool_calls:
        return {"role": "function", "content": json.dumps([c.id for c in message.tool_calls])}
    return {"role": "assistant", "content": message.content}


def record(messages):
    post = Post()
    reply = ask(messages)
    if reply["role"] == "assistant":
        post.set_message(reply["content"])
    elif reply["role"] == "function":
        post.attach(reply["content"], "function")
    return post
"""


def _judged(found: Found) -> set[tuple[int, str]]:
    return {(line, rule) for _, line, rule, _ in found() if rule in {"GK201", "GK202"}}


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (LOCAL_TABLE, {(10, "GK201"), (14, "GK201"), (19, "GK201"), (35, "GK202")}),
        (CLEANED, {(11, "GK201"), (18, "GK201"), (30, "GK202")}),
        (THREADED, {(17, "GK202"), (26, "GK201"), (29, "GK201")}),
    ],
    ids=["local-table", "cleaned-input", "helper-on-a-thread"],
)
def test_the_dispatch_and_its_tools(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    found: Found,
    code: str,
    expected: set[tuple[int, str]],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.py").write_text(code)
    assert _judged(found) == expected


def test_a_chain_on_a_messages_role_is_no_dispatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.py").write_text(ROLES)
    assert _judged(found) == set()


UPDATED = """\
import json

from openai import OpenAI

client = OpenAI()


class Pad:
    def write(self, path: str, text: str) -> str:
        return path

    def read(self, path: str) -> str:
        return path

    def wipe(self) -> None:
        return None


class Bot:
    def __init__(self):
        self.pad = Pad()
        self.actions = {"Bot.ask": self.ask}
        self.actions.update({f"Pad.{m}": getattr(self.pad, m) for m in ["write", "read"]})
        self.actions.update({"Bot.done": self.done})

    def ask(self, question: str) -> str:
        return question

    def done(self) -> str:
        return "done"

    def act(self, goal: str) -> None:
        reply = client.chat.completions.create(model="m", messages=[])
        for cmd in json.loads(reply.choices[0].message.content):
            self.actions[cmd["command_name"]](**cmd["args"])
"""


def test_entries_added_to_a_table_by_update_are_its_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bot.py").write_text(UPDATED)
    assert _judged(found) == {
        (9, "GK201"),  # Pad.write
        (12, "GK201"),  # Pad.read, not Pad.wipe
        (26, "GK201"),  # Bot.ask
        (29, "GK201"),  # Bot.done
        (35, "GK202"),
    }
