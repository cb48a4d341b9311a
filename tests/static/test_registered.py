"""Tools a project's own decorator registers (issue 20): ``@tool`` storing each function in
``TOOLS`` (here, in another module than the tools and the loop) makes them members of
``TOOLS``, so ``TOOLS[call.function.name](...)`` runs them; a decorator defined in a class body
that records each method's name in ``ACTIONS`` makes the methods what
``getattr(self, name)`` runs once ``name in ACTIONS`` is checked. A decorator that registers
into a list nobody dispatches from (``@route``) makes no tool, and a method nothing registers
(``screenshot``) is none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import fix, scan

Found = Callable[[], set[tuple[str, int, str, str]]]
EXPECTED = {
    ("desk/agent.py", 16, "GK201", "Desk.type_text"),
    ("desk/agent.py", 20, "GK201", "Desk.press"),
    ("desk/agent.py", 28, "GK202", "getattr(self, name)"),
    ("desk/agent.py", 34, "GK102", "client.messages.create"),
    ("helpers/files.py", 7, "GK201", "read_file"),
    ("helpers/files.py", 13, "GK201", "remove_file"),
    ("helpers/loop.py", 13, "GK102", "client.chat.completions.create"),
    ("helpers/loop.py", 18, "GK202", "TOOLS[call.function.name]"),
}


@pytest.fixture
def registered(data_project: Callable[[str], Path]) -> Path:
    return data_project("registered")


def test_registered_functions_and_methods_are_the_tools(registered: Path, found: Found) -> None:
    assert found() == EXPECTED


def test_an_unchecked_getattr_reaches_no_registered_method(registered: Path, found: Found) -> None:
    agent = registered / "desk" / "agent.py"
    text = agent.read_text()
    check = "        if name in ACTIONS:\n            return getattr(self, name)(**arguments)\n"
    assert check in text
    agent.write_text(text.replace(check, "        return getattr(self, name)(**arguments)\n"))
    desk = {(r, s) for p, _, r, s in found() if p == "desk/agent.py"}
    assert ("GK201", "Desk.type_text") not in desk
    assert ("GK202", "getattr(self, name)") in desk


def test_the_fix_guards_what_the_registry_holds(registered: Path) -> None:
    result = CliRunner().invoke(fix, [".", "--write", "--no-dependency"])
    assert result.exit_code == 0, result.output
    files = (registered / "helpers" / "files.py").read_text()
    # below the registering decorator: the registry holds the guarded function
    assert "@tool\n@guardkit.tool()\ndef read_file(path):" in files
    assert "@route\ndef index():" in files
    desk = (registered / "desk" / "agent.py").read_text()
    assert '    @action("Press one key")\n    @guardkit.tool()\n    def press' in desk
    assert "def screenshot(self):\n        return" in desk
    policy = (registered / "guardkit-policy.toml").read_text()
    assert {"[tools.press]", "[tools.read_file]", "[tools.type_text]"} <= set(policy.split("\n"))
    rescan = CliRunner().invoke(scan, [".", "--no-cache"])
    assert rescan.exit_code == 0, rescan.output


CLASS_REGISTRY = """\
import json

from openai import OpenAI

client = OpenAI()


class Runner:
    _handlers: dict = {}

    @classmethod
    def register(cls, kind, fn):
        cls._handlers[kind] = fn

    @staticmethod
    def run(kind, target):
        return Runner._handlers[kind](target)


def press(target):
    return "pressed " + target


def write(target):
    return "wrote " + target


def log(target):
    return target


Runner.register("press", press)
Runner.register("write", write)


def step(goal: str) -> None:
    for _ in range(5):
        reply = client.chat.completions.create(model="m", messages=[])
        for item in json.loads(reply.choices[0].message.content)["actions"]:
            Runner.run(item["action"], item["target"])
"""


def test_what_a_class_method_registers_in_the_class_table_is_run_by_its_dispatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runner.py").write_text(CLASS_REGISTRY)
    assert {(line, rule) for _, line, rule, _ in found() if rule in {"GK201", "GK202"}} == {
        (17, "GK202"),
        (20, "GK201"),
        (24, "GK201"),
    }
