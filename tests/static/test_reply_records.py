"""What the model returned, kept in records of the app's own (issue 20): an object built from
parts of the reply by keyword (``ToolUse(action=calls[0][0], payload=...)``) holds them, a
default (``item.get("action") or {}``) keeps them, a method name spelled from the model's word
(``getattr(self, f"{kind}_runner")``) is the model's pick, and the ``type`` of the action a
computer-use model wrote (``click``) is its choice, while the ``type`` of the response item
around it is the provider's protocol."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

RECORD = """\
import re
from dataclasses import dataclass

import anthropic

client = anthropic.Anthropic()


@dataclass
class ToolUse:
    action: str
    payload: dict


def create_note(notes: dict, args: dict) -> str:
    notes[args["title"]] = args["body"]
    return "ok"


def drop_note(notes: dict, args: dict) -> str:
    return str(notes.pop(args["title"], None))


def handle(use: ToolUse, notes: dict) -> str:
    wanted = use.action
    if wanted == "create_note":
        return create_note(notes, use.payload)
    elif wanted == "drop_note":
        return drop_note(notes, use.payload)
    return "unknown"


def drive(notes: dict, messages: list) -> str:
    reply = client.messages.create(model="m", max_tokens=512, messages=messages)
    found = re.findall(r"<call name=\\"(\\w+)\\">(.*?)</call>", reply.content[0].text)
    if not found:
        return "no call"
    use = ToolUse(action=found[0][0], payload={"raw": found[0][1]})
    return handle(use, notes)
"""


def _judged(found: Found) -> set[tuple[int, str]]:
    return {(line, rule) for _, line, rule, _ in found() if rule != "GK102"}


def test_a_record_built_from_the_reply_by_keyword_holds_the_models_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.py").write_text(RECORD)
    assert _judged(found) == {(15, "GK201"), (20, "GK201"), (26, "GK202")}


SPELLED = """\
import json
import subprocess

import openai

client = openai.OpenAI()


class Bot:
    def note_runner(self, call: dict) -> str:
        return str(call)

    def shell_runner(self, call: dict) -> str:
        return subprocess.run(call["cmd"], shell=True, capture_output=True).stdout

    def loop(self, history: list) -> None:
        for _ in range(5):
            reply = client.chat.completions.create(model="m", messages=history)
            parsed = json.loads(reply.choices[0].message.content)
            kind = parsed["kind"]
            runner = getattr(self, {key}, None)
            history.append({{"role": "user", "content": str(runner(parsed["call"]))}})
"""


@pytest.mark.parametrize("key", ['f"{kind}_runner"', 'kind + "_runner"'])
def test_a_method_name_spelled_from_the_models_word_is_its_pick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found, key: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bot.py").write_text(SPELLED.format(key=key))
    assert _judged(found) == {(10, "GK201"), (13, "GK201"), (22, "GK202")}


COMPUTER = """\
import openai

client = openai.OpenAI()


class Screen:
    def screenshot(self) -> bytes:
        return b""

    def click(self, x: int, y: int) -> None:
        print("click", x, y)

    def scroll(self, dy: int) -> None:
        print("scroll", dy)


def handle(item: dict, screen: Screen) -> list:
    if item.get("type") != "computer_call":
        return []
    action = item.get("action") or {}
    kind = action.get("type")
    args = {k: v for k, v in action.items() if k != "type"}
    getattr(screen, kind)(**args)
    return [{"type": "computer_call_output", "output": screen.screenshot()}]


def observe(event: dict, screen: Screen) -> None:
    getattr(screen, event.get("type", "screenshot"))()


def run(items: list) -> None:
    screen = Screen()
    for _ in range(20):
        response = client.responses.create(model="m", input=items, tools=[])
        output = [o.model_dump() for o in response.output]
        for item in output:
            observe(item, screen)
            items += handle(item, screen)
"""


def test_the_type_of_a_computer_action_is_the_models_choice_not_the_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "computer.py").write_text(COMPUTER)
    assert (23, "GK202") in _judged(found)
    assert (28, "GK202") not in _judged(found)
