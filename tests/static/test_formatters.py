"""Functions that only build a value (issue 20): handed part of what the model wrote, a
function whose body makes a dict, a formatted string or a parse of its parameters and returns
it formats the reply, it runs nothing. A chain on the model's action kind whose branches only
translate the action into another provider's items is no dispatch; one whose branches click
and type is. In a branch on the chosen tool's name that does the work itself (``rg`` run on
an escaped pattern), the escaping helper is no tool: the branch is, its chain the dispatch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from guardkit.codemods.scanner import scan_source

Found = Callable[[], set[tuple[str, int, str, str]]]

ITEMS = """\
import json


def click_item(x, y, ref):
    return {"kind": "pointer", "ref": ref, "event": {"name": "click", "at": [x, y]}}


def text_item(text, ref):
    return {"kind": "keys", "ref": ref, "event": {"name": "text", "value": text}}


def note_item(text, ref):
    label = text.strip()[:40]
    return json.dumps({"ref": ref, "note": f"model said: {label}"})
"""

CHAIN = """\
import json

from openai import OpenAI

from {source} import click_item, note_item, text_item

client = OpenAI()


def translate(messages, tools):
    reply = client.chat.completions.create(model="m", messages=messages, tools=tools)
    out = []
    for call in reply.choices[0].message.tool_calls:
        args = json.loads(call.function.arguments)
        kind = args.get("action")
        if kind == "click":
            x, y = args.get("coordinate", [0, 0])
            out.append(click_item(x, y, call.id))
        elif kind == "type":
            out.append(text_item(args.get("text", ""), call.id))
        elif kind == "note":
            out.append(note_item(args.get("text", ""), call.id))
    return out
"""

ACTING = """\
import pyautogui


def click_item(x, y, ref):
    pyautogui.click(x, y)
    return {"ref": ref}


def text_item(text, ref):
    pyautogui.write(text)
    return {"ref": ref}


def note_item(text, ref):
    return {"ref": ref, "note": text}
"""


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, items: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "desk").mkdir()
    (tmp_path / "desk" / "__init__.py").write_text("")
    (tmp_path / "desk" / "items.py").write_text(items)
    (tmp_path / "desk" / "loop.py").write_text(CHAIN.format(source="desk.items"))


MODEL_CALL = ("desk/loop.py", 11, "GK102", "client.chat.completions.create")


def test_a_chain_that_only_builds_items_from_the_action_is_no_dispatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    _project(tmp_path, monkeypatch, ITEMS)
    assert found() == {MODEL_CALL}


def test_a_chain_whose_branches_act_on_the_action_is_a_dispatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    # the same chain over functions that click and type: they are its tools; the one that
    # only builds a value is none
    _project(tmp_path, monkeypatch, ACTING)
    assert found() == {
        MODEL_CALL,
        ("desk/loop.py", 16, "GK202", "if kind == ..."),
        ("desk/items.py", 4, "GK201", "click_item"),
        ("desk/items.py", 9, "GK201", "text_item"),
    }


def test_builders_of_the_same_module_are_no_tools_either() -> None:
    imported = "from {source} import click_item, note_item, text_item\n"
    code = ITEMS + "\n\n" + CHAIN.replace(imported, "")
    findings = scan_source(code, "agent.py").findings
    assert {f.rule for f in findings} == {"GK102"}


INLINE = """\
import json
import subprocess

import anthropic

client = anthropic.Anthropic()


def quoted(text):
    return json.dumps(text.strip())


def forecast(city):
    return json.dumps({"city": city, "sky": "clear"})


def handle(block):
    name = block.name
    args = block.input
    if name == "grep":
        needle = quoted(args["pattern"])
        return subprocess.run(["grep", "-r", needle, "."], capture_output=True).stdout
    elif name == "forecast":
        return forecast(args["city"])
    return "unknown tool"


def loop(messages):
    for _ in range(8):
        reply = client.messages.create(model="m", max_tokens=512, messages=messages, tools=[])
        for block in reply.content:
            if block.type == "tool_use":
                messages.append({"role": "user", "content": handle(block)})
"""


def test_a_builder_in_a_branch_that_does_the_work_is_no_tool() -> None:
    # ``grep`` runs in its branch (the dispatch, at the branch); ``quoted`` only escapes its
    # pattern. ``forecast`` only builds a value too, but its branch does nothing else: the
    # model runs it, a tool
    findings = scan_source(INLINE, "agent.py").findings
    assert {(f.rule, f.line, f.symbol) for f in findings if f.rule != "GK102"} == {
        ("GK202", 20, "if name == ..."),
        ("GK201", 13, "forecast"),
        ("GK202", 24, "forecast"),
    }
