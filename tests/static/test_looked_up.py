"""What the model returned, through an annotated assignment, picks a callee; and what a
dispatch picked by the reply can reach are tools (issue 20): ``data: dict = json.loads(reply)``
carries the reply as ``data = ...`` does, and ``getattr(backend, name)`` with ``name`` parsed out
of the reply runs every public method of ``backend``'s class, as it does when ``name`` is a tool
call's name. A getter of a table (``self.get_capability(name)`` returning
``self._capabilities.get(name)``, ``find_tool(name)`` returning the element its test picks)
returns that table's entries; an instance there runs its ``__call__``."""

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


Write = Callable[[str], Path]


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Write:
    """A project (the cwd) with ``llm.py`` asking the model; writes ``agent.py``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "llm.py").write_text(LLM)

    def agent(source: str) -> Path:
        path = tmp_path / "agent.py"
        path.write_text(textwrap.dedent(source))
        return path

    return agent


@pytest.fixture
def agent(write: Write) -> Path:
    return write(AGENT)


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


TABLES = """\
import json
import subprocess

from llm import client


class Capability:
    def __call__(self, **kwargs):
        raise NotImplementedError


class RunCommand(Capability):
    def __call__(self, command):
        return subprocess.run(command, shell=True, capture_output=True, text=True).stdout


def read_file(path):
    with open(path) as handle:
        return handle.read()


def write_file(path, text):
    with open(path, "w") as handle:
        return handle.write(text)


FILE_TOOLS = [write_file]


def find_tool(name):
    for tool in FILE_TOOLS:
        if tool.__name__ == name:
            return tool
    return None


class Agent:
    def __init__(self):
        self._capabilities = {"run_command": RunCommand()}
        self.add_capability("read_file", read_file)

    def add_capability(self, name, capability):
        self._capabilities[name] = capability

    def get_capability(self, name):
        return self._capabilities.get(name)

    def step(self, messages):
        reply = client.chat.completions.create(model="m", messages=messages, tools=[])
        for call in reply.choices[0].message.tool_calls or []:
            arguments = json.loads(call.function.arguments)
            if call.function.name == "write_file":
                out = find_tool(call.function.name)(**arguments)
            else:
                out = self.get_capability(call.function.name)(**arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": out})
"""


@pytest.fixture
def tables(write: Write) -> Path:
    return write(TABLES)


def test_a_getter_of_a_table_returns_its_entries_instances_run_their_call(
    tables: Path, found: Found
) -> None:
    assert _found(found) == {
        ("GK202", "self.get_capability(call.function.name)"),
        ("GK202", "find_tool(call.function.name)"),
        ("GK201", "RunCommand.__call__"),
        ("GK201", "read_file"),
        ("GK201", "write_file"),
    }


def test_a_getter_of_what_its_parameter_does_not_pick_returns_no_entry(
    tables: Path, found: Found
) -> None:
    tables.write_text(
        tables.read_text()
        .replace("return self._capabilities.get(name)", "return self._capabilities.get('x')")
        .replace("if tool.__name__ == name:", "if tool.__name__:")
    )
    assert {s for r, s in _found(found) if r == "GK201"} == set()


DESCRIBED = """\
import json

from llm import client


class Tool:
    name = "base"

    def invoke(self, params):
        raise NotImplementedError

    def one_liner(self, params):
        return f"{self.name}({params})"


class Pods(Tool):
    name = "pods"

    def invoke(self, params):
        return "pod list"

    def one_liner(self, params):
        return f"list pods in {params.get('namespace')}"


TOOLS = {tool.name: tool for tool in [Pods()]}


def step(messages):
    reply = client.chat.completions.create(model="m", messages=messages, tools=[])
    for call in reply.choices[0].message.tool_calls or []:
        params = json.loads(call.function.arguments)
        tool = TOOLS.get(call.function.name)
        print("running", tool.one_liner(params))
        messages.append({"role": "tool", "content": tool.invoke(params)})
"""


def test_a_method_that_describes_the_looked_up_tool_is_no_tool(write: Write, found: Found) -> None:
    write(DESCRIBED)
    assert {(p, line, r, s) for p, line, r, s in found() if r in {"GK201", "GK202"}} == {
        ("agent.py", 19, "GK201", "Pods.invoke"),
        ("agent.py", 35, "GK202", "TOOLS.get(call.function.name)"),
    }


HELPER = """\
import json

from llm import client


def search(query):
    return f"results for {query}"


def shell(command):
    import subprocess

    return subprocess.run(command, shell=True).returncode


class Agent:
    def __init__(self):
        self.tools = {"search": search, "shell": shell}

    def _run_tool(self, tool_name, tool_params, note):
        tool = self.tools.get(tool_name)
        print(note)
        return tool(tool_params)

    def step(self, messages):
        reply = client.chat.completions.create(model="m", messages=messages, tools=[])
        for call in reply.choices[0].message.tool_calls or []:
            arguments = json.loads(call.function.arguments)
            out = self._run_tool(call.function.name, arguments, "running")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": out})
"""


def test_the_input_handed_beside_the_chosen_name_is_the_tools_input(
    write: Write, found: Found
) -> None:
    agent = write(HELPER)
    assert _found(found) == {
        ("GK202", "self.tools.get(tool_name)"),
        ("GK201", "search"),
        ("GK201", "shell"),
    }
    # the helper given a note it wrote itself, not the model's input, runs nothing it chose
    agent.write_text(HELPER.replace("return tool(tool_params)", "return tool(note)"))
    assert _found(found) == set()


LOADED = """\
import importlib
import json

from llm import ask


class Tool:
    def __init__(self, name, args):
        self.name, self.args = name, args

    def execute(self, **kwargs):
        raise NotImplementedError


class Shell(Tool):
    def execute(self, command="", **kwargs):
        import subprocess

        return subprocess.run(command, shell=True).returncode


class Agent:
    def get_tool(self, name, args):
        module = importlib.import_module(f"tools.{name}")
        return module.TOOL(name=name, args=args)

    def step(self, messages):
        request = json.loads(ask(messages))
        tool = self.get_tool(name=request["tool_name"], args=request["tool_args"])
        return tool.execute(**request["tool_args"])
"""


def test_a_helper_that_loads_the_tool_the_name_picks_is_a_lookup_whatever_its_position(
    write: Write, found: Found
) -> None:
    agent = write(LOADED)
    expected = ("GK202", "self.get_tool(name=request['tool_name'], args=request['tool_args'])")
    assert expected in _found(found)
    assert ("GK201", "Shell.execute") in _found(found)
    # a helper that only records the name picks nothing with it
    agent.write_text(
        LOADED.replace(
            'importlib.import_module(f"tools.{name}")', 'importlib.import_module("tools")'
        )
    )
    assert {r for r, _ in _found(found)} == set()


NAMESPACE_TOOLS = """\
import os
import subprocess


def run_shell(command: str) -> str:
    return subprocess.run(command, shell=True, capture_output=True, text=True).stdout


def remove(path: str) -> str:
    os.remove(path)
    return "ok"


def _quote(text: str) -> str:
    return repr(text)


class Kit:
    @staticmethod
    def copy(source: str, target: str) -> str:
        return subprocess.run(["cp", source, target], capture_output=True, text=True).stdout

    @staticmethod
    def _check(path: str) -> bool:
        return os.path.exists(path)
"""

NAMESPACE_AGENT = """\
import json

from openai import OpenAI

from . import actions
from .actions import Kit

client = OpenAI()


def turn(messages: list) -> None:
    for _ in range(5):
        reply = client.chat.completions.create(model="m", messages=messages, tools=[])
        for call in reply.choices[0].message.tool_calls or []:
            found = getattr({owner}, call.function.name)
            result = found(**json.loads(call.function.arguments))
            messages.append({{"role": "tool", "content": str(result)}})
"""


@pytest.mark.parametrize(
    ("owner", "tools"),
    [
        ("actions", {("app/actions.py", 5), ("app/actions.py", 9)}),
        ("Kit", {("app/actions.py", 20)}),
    ],
)
def test_a_project_module_or_class_looked_up_by_the_chosen_name_runs_its_public_functions(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    found: Found,
    owner: str,
    tools: set[tuple[str, int]],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "actions.py").write_text(NAMESPACE_TOOLS)
    (tmp_path / "app" / "agent.py").write_text(NAMESPACE_AGENT.format(owner=owner))
    got = found()
    assert {(path, line) for path, line, rule, _ in got if rule == "GK201"} == tools
    assert {(path, line) for path, line, rule, _ in got if rule == "GK202"} == {
        ("app/agent.py", 16)
    }
