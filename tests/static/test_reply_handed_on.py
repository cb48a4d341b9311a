"""What the model returned, handed to another module (issue 20): the parsed reply (or its tool
name) given to an executor object or a function of another module is followed there, in a
package or in a flat layout of scripts beside each other. There, a lookup by the name it holds
is a dispatch, and a chain on the action it names that runs project code is one too. A name
cut into parts (``toolkit, api = name.split(".")``, also behind a conditional) or read with
``.get("name")`` is still the model's choice."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

AGENT = """\
import json
import subprocess

from openai import OpenAI

from {dot}executor import Executor

client = OpenAI()


class Shell:
    name = "shell"

    def __call__(self, params):
        return subprocess.run(params["cmd"], shell=True, capture_output=True).stdout


class ReAct:
    def __init__(self, max_turn=5):
        self.actions = Executor([Shell()])
        self.max_turn = max_turn

    def think(self, history):
        reply = client.chat.completions.create(model="m", messages=history)
        return json.loads(reply.choices[0].message.content)

    def forward(self, question):
        history = [{{"role": "user", "content": question}}]
        for _ in range(self.max_turn):
            step = self.think(history)
            if "answer" in step:
                return step["answer"]
            history.append({{"role": "user", "content": str(self.actions(step))}})
"""

EXECUTOR = """\
class Executor:
    def __init__(self, actions):
        self.actions = {a.name: a for a in actions}

    def __call__(self, step):
        name = step.get("name")
        return self.actions[name](step["parameters"])

    def describe(self, step):
        return f"{step.get('name')}: {len(self.actions)} actions"
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, code in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))


def _judged(found: Found) -> set[tuple[str, int, str]]:
    return {(path, line, rule) for path, line, rule, _ in found() if rule != "GK102"}


@pytest.mark.parametrize("layout", ["package", "flat"])
def test_the_reply_handed_to_an_executor_of_another_module_selects_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found, layout: str
) -> None:
    monkeypatch.chdir(tmp_path)
    if layout == "package":
        files = {"bot/__init__.py": "", "bot/agent.py": AGENT.format(dot=".")}
        files["bot/executor.py"] = EXECUTOR
        where = "bot/"
    else:
        files = {"agent.py": AGENT.format(dot=""), "executor.py": EXECUTOR}
        where = ""
    _write(tmp_path, files)
    assert _judged(found) == {
        (f"{where}agent.py", 14, "GK201"),  # Shell.__call__
        (f"{where}executor.py", 7, "GK202"),  # self.actions[name](...)
    }


OPERATOR = """\
import subprocess


class Operator:
    def perform(self, step: dict) -> str:
        kind = step["action"]
        if kind == "shell":
            return self.shell(step["command"])
        elif kind == "write":
            return self.write(step["path"], step["text"])
        return "unknown action"

    def explain(self, step: dict) -> str:
        kind = step["action"]
        if kind == "shell":
            return "runs a command"
        elif kind == "write":
            return "writes a file"
        return "?"

    def shell(self, command: str) -> str:
        return subprocess.run(command, shell=True, capture_output=True, text=True).stdout

    def write(self, path: str, text: str) -> str:
        with open(path, "w") as f:
            f.write(text)
        return "ok"
"""

DRIVER = """\
import json

from openai import OpenAI

from operator_actions import Operator

client = OpenAI()


def run(task: str) -> None:
    operator = Operator()
    history = [{"role": "user", "content": task}]
    for _ in range(10):
        reply = client.chat.completions.create(model="m", messages=history)
        step = json.loads(reply.choices[0].message.content)
        print(operator.explain(step))
        history.append({"role": "user", "content": operator.perform(step)})
"""


def test_a_chain_on_the_action_in_another_module_is_the_dispatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, {"driver.py": DRIVER, "operator_actions.py": OPERATOR})
    assert _judged(found) == {
        ("operator_actions.py", 7, "GK202"),  # the chain in perform, not the one in explain
        ("operator_actions.py", 21, "GK201"),  # Operator.shell
        ("operator_actions.py", 24, "GK201"),  # Operator.write
    }


SPLIT = """\
import json

from openai import OpenAI

client = OpenAI()


def calculate(expression: str) -> str:
    return str(eval(expression))


TABLE = {"calc": calculate}


def react(question: str) -> None:
    history = [{"role": "user", "content": question}]
    for _ in range(5):
        reply = client.chat.completions.create(model="m", messages=history)
        step = json.loads(reply.choices[0].message.content)
        wanted = step.get("name")
        {cut}
        history.append({"role": "user", "content": str(TABLE[tool](**step["parameters"]))})
"""


@pytest.mark.parametrize(
    "cut",
    [
        'tool, _api = wanted.split(".") if "." in wanted else (wanted, "run")',
        'tool, _, _api = wanted.partition(".")',
        'tool = wanted.rsplit(".", 1)[0] if "." in wanted else wanted',
    ],
)
def test_a_name_cut_into_parts_is_still_the_models_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found, cut: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.py").write_text(SPLIT.replace("{cut}", cut))
    assert _judged(found) == {("agent.py", 8, "GK201"), ("agent.py", 22, "GK202")}
