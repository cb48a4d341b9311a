"""What the model returns, followed where a catalogue has no entry (issue 20).

``browse``: a script-style agent whose helpers are nested functions; the model writes one text
command per turn and a chain of prefix and membership tests (``startswith``, ``in``) runs it.
The chain is the dispatch; what its branches run on a project object are the tools, the
constant-argument ``SCROLL`` branch included. ``plan``: a model helper on a class in one
module, called on a parameter typed ``Any`` in another module that imports nothing of the
model: the call is resolved by the method's name, so the loop around it is a model loop and the
``step["type"]`` chain over the plan the model wrote (a key of parsed JSON, not a response's
type tag) is a dispatch. A chain after a ``return`` never runs and is none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]


@pytest.fixture
def commands(data_project: Callable[[str], Path]) -> Path:
    return data_project("commands")


def test_a_prefix_chain_on_the_models_text_is_the_dispatch(commands: Path, found: Found) -> None:
    browse = {(line, r, s) for p, line, r, s in found() if p.startswith("browse/")}
    assert {f for f in browse if f[1] in {"GK201", "GK202"}} == {
        (19, "GK202", "if command.startswith('SCROLL') ..."),
        (8, "GK201", "Page.scroll"),  # run with a constant: the model's SCROLL chose it
        (11, "GK201", "Page.click"),
        (14, "GK201", "Page.type"),
    }


def test_helpers_defined_under_main_are_the_scripts_own(commands: Path, found: Found) -> None:
    pilot = commands / "browse" / "pilot.py"
    text = pilot.read_text()
    # the same script with its helpers defined under ``if __name__ == "__main__":``
    body = text[text.index("def main(goal: str) -> None:") :]
    script = body.replace(
        "def main(goal: str) -> None:\n", 'if __name__ == "__main__":\n    goal = "book"\n'
    )
    pilot.write_text(text[: text.index("def main(goal: str) -> None:")] + script)
    found_here = {(line, r) for p, line, r, _ in found() if p == "browse/pilot.py"}
    assert (20, "GK202") in found_here  # one line down: the `goal` line


def test_a_method_called_on_an_untyped_value_is_resolved_by_its_name(
    commands: Path, found: Found
) -> None:
    plan = {(p, line, r, s) for p, line, r, s in found() if p.startswith("plan/")}
    assert ("plan/builder.py", 13, "GK101", "convo.send_plan") in plan
    assert {f for f in plan if f[2] in {"GK201", "GK202"}} == {
        ("plan/builder.py", 21, "GK202", "if step['type'] == ..."),
        ("plan/workspace.py", 9, "GK201", "Workspace.run"),
        ("plan/workspace.py", 12, "GK201", "Workspace.save"),
    }  # not approve/reject: their chain sits after a return


def test_a_name_builtin_types_share_is_not_resolved(commands: Path, found: Found) -> None:
    for name in ("convo.py", "builder.py"):
        path = commands / "plan" / name
        path.write_text(path.read_text().replace("send_plan", "update"))
    assert not {(p, r) for p, _, r, _ in found() if p == "plan/builder.py" and r == "GK101"}


def test_a_name_three_unrelated_classes_define_is_not_resolved(
    commands: Path, found: Found
) -> None:
    extra = "\n".join(
        f"class Other{n}:\n    def send_plan(self, prompt: str) -> dict:\n        return {{}}\n"
        for n in range(2)
    )
    (commands / "plan" / "others.py").write_text(extra)
    assert not {(p, r) for p, _, r, _ in found() if p == "plan/builder.py" and r == "GK101"}


def test_a_dispatch_on_an_untyped_registry_runs_every_implementation_of_the_method(
    commands: Path, found: Found
) -> None:
    # ``self.registry[block.name].run(**block.input)`` over tools registered at run time by a
    # script: the element's kind is unknown, so the tools are the project's ``run`` methods
    # (``run`` is a thread's too, but a table entry the model picked is no thread); the
    # abstract base's stub is none, and the tool modules are analysed for it
    kit = {(p, line, r, s) for p, line, r, s in found() if p.startswith("kit/")}
    assert {f for f in kit if f[2] in {"GK201", "GK202"}} == {
        ("kit/agent.py", 21, "GK202", "self.registry[block.name]"),
        ("kit/tools/files.py", 9, "GK201", "ReadFile.run"),
        ("kit/tools/shell.py", 9, "GK201", "Shell.run"),
    }


def test_a_project_decorators_wrapper_runs_the_model_helper_it_decorates(
    commands: Path, found: Found
) -> None:
    llm = commands / "plan" / "llm.py"
    assert ("plan/llm.py", 11, "GK101", "func") in found()
    # the same decorator over string helpers only: its loop calls no model
    llm.write_text(llm.read_text().replace("@keep_trying\ndef complete", "def complete"))
    assert not {(p, r) for p, _, r, _ in found() if p == "plan/llm.py" and r == "GK101"}


def test_the_models_code_run_in_a_namespace_of_tools_is_a_dispatch(
    commands: Path, found: Found
) -> None:
    agent = commands / "coder" / "agent.py"
    text = agent.read_text()
    # without the ``match`` below it: the namespace's functions are the eval's tools
    agent.write_text(text[: text.index("    verb, _, rest")])
    coder = {(p, line, r, s) for p, line, r, s in found() if p.startswith("coder/")}
    assert {f for f in coder if f[2] in {"GK201", "GK202"}} == {
        ("coder/agent.py", 16, "GK202", "eval(code.strip(), ...)"),  # not calculate's eval
        ("coder/files.py", 4, "GK201", "read_file"),
        ("coder/files.py", 9, "GK201", "list_dir"),
    }


def test_a_match_on_the_models_command_is_a_dispatch(commands: Path, found: Found) -> None:
    agent = commands / "coder" / "agent.py"
    agent.write_text(agent.read_text().replace("str(run_code(text))", "text"))
    coder = {(p, line, r, s) for p, line, r, s in found() if p.startswith("coder/")}
    assert {f for f in coder if f[2] in {"GK201", "GK202"}} == {
        ("coder/agent.py", 28, "GK202", "match verb"),
        ("coder/files.py", 4, "GK201", "read_file"),
        ("coder/files.py", 9, "GK201", "list_dir"),
    }


@pytest.mark.parametrize(
    "pick",
    [
        "        for tool in self.registry.values():\n"
        "            if tool.name == name:\n"
        "                return tool.run(**payload)\n",
        "        tool = next(t for t in self.registry.values() if t.name == name)\n"
        "        return tool.run(**payload)\n",
    ],
)
def test_the_element_whose_name_is_the_models_choice_is_dispatched(
    commands: Path, found: Found, pick: str
) -> None:
    # the registry searched for the tool the model named, in a helper handed the name
    agent = commands / "kit" / "agent.py"
    helper = f"    def call(self, name: str, payload: dict) -> str:\n{pick}\n"
    agent.write_text(
        agent.read_text()
        .replace(
            "self.registry[block.name].run(**block.input)", "self.call(block.name, block.input)"
        )
        .replace("    def step(self", helper + "    def step(self")
    )
    kit = {(p, r, s) for p, _, r, s in found() if p.startswith("kit/") and r != "GK102"}
    assert kit == {
        ("kit/agent.py", "GK202", "t.name == name" if "next(" in pick else "tool.name == name"),
        ("kit/tools/files.py", "GK201", "ReadFile.run"),
        ("kit/tools/shell.py", "GK201", "Shell.run"),
    }


def test_a_decorator_named_for_a_tool_registers_one_whatever_the_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: Found
) -> None:
    # a framework outside the catalog: its file imports no model SDK either
    monkeypatch.chdir(tmp_path)
    (tmp_path / "server.py").write_text(
        "from agentapp import App, tool_options\n\n"
        "app = App('ops')\n\n\n"
        "@app.async_tool\n"
        "async def restart(service: str) -> str:\n"
        "    return service\n\n\n"
        "@tool_options\n"  # adds --tool options to a command: not a tool
        "def cli(tools: list[str]) -> None:\n"
        "    print(tools)\n"
    )
    assert {(p, line, r, s) for p, line, r, s in found()} == {
        ("server.py", 7, "GK201", "restart"),  # on the def line
    }
