"""The static pass on agent code in shapes it was not tuned on (issue 20): values the model
returns (tool names, reply text) followed through assignments, tuples, comprehensions and the
parameters of helpers in other modules; tool objects kept in attributes and listed through a
schema method; framework runner loops paced by a person through a helper or a thread are not
agent loops; a tool body that only uses a path or a file is not dispatch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import scan

DATA = Path(__file__).parent / "data" / "flows"
EXPECTED = {
    # class-based tools: instances in ``self.tools`` listed through ``to_dict()``, run through a
    # name->instance dict by an ``Any``-typed helper of another module
    ("crew/agent.py", 17, "GK102", "client.messages.create"),
    ("crew/dispatch.py", 6, "GK202", "registry[picked]"),
    ("crew/tools/notes.py", 10, "GK201", "SaveNoteTool.execute"),
    ("crew/tools/shell.py", 10, "GK201", "ShellTool.execute"),
    # the model's choices as tuples, unpacked in a generator handed to asyncio.gather
    ("desk/agent.py", 14, "GK202", "HANDLERS.get(fn_id)"),
    ("desk/agent.py", 19, "GK101", "client.chat.completions.create"),
    ("desk/agent.py", 20, "GK102", "client.chat.completions.create"),
    # the table it looks up (imported): functions, what lambdas call, what partials wrap
    ("desk/handlers.py", 5, "GK201", "_lookup"),
    ("desk/handlers.py", 9, "GK201", "_close"),
    ("desk/handlers.py", 13, "GK201", "_run"),
    # a name->lambda table of the module itself
    ("desk/inline.py", 6, "GK201", "refund"),
    ("desk/inline.py", 10, "GK201", "status"),
    ("desk/inline.py", 21, "GK102", "client.messages.create"),
    ("desk/inline.py", 27, "GK202", "TOOL_HANDLERS.get(block.name)"),
    # a computer-use loop: tool objects handed positionally to a collection whose schema
    # (``collection.to_params()``) is sent and whose ``run(name=..., tool_input=...)`` dispatches
    ("pilot/loop.py", 9, "GK101", "client.beta.messages.create"),
    ("pilot/loop.py", 10, "GK102", "client.beta.messages.create"),
    ("pilot/tools.py", 18, "GK201", "ScreenTool.__call__"),
    ("pilot/tools.py", 25, "GK201", "TerminalTool.__call__"),
    ("pilot/tools.py", 41, "GK202", "self.tool_map.get(name)"),
    # the model call in a helper of another module; an environment object run on the action
    # parsed out of the model's reply, in the loop that asked for it
    ("rover/environment.py", 8, "GK201", "Sandbox.execute"),
    ("rover/loop.py", 9, "GK101", "model.query"),
    ("rover/model.py", 7, "GK102", "_client.chat.completions.create"),
    # tools whose bodies only use paths and files (``Path(tool_name).read_text(...)``): no GK202
    ("scribe/server.py", 10, "GK201", "write_note"),
    ("scribe/server.py", 18, "GK201", "read_note"),
    ("scribe/server.py", 23, "GK102", "client.chat.completions.create"),
    # runner loops over what a person types (a helper, a thread): no GK101
    ("termbot/agent.py", 5, "GK201", "word_count"),
    ("termbot/agent.py", 17, "GK102", "Runner.run_sync"),
    ("termbot/web.py", 11, "GK102", "Runner.run"),
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "flows"
    shutil.copytree(DATA, target)
    monkeypatch.chdir(target)
    return target


def _found(*args: str) -> set[tuple[str, int, str, str]]:
    result = CliRunner().invoke(scan, [".", "--format", "json", *args])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    return {(f["path"], f["line"], f["rule"], f["symbol"]) for f in report["findings"]}


def test_model_values_are_followed_to_their_dispatch_and_tools(project: Path) -> None:
    assert _found("--no-cache") == EXPECTED


def test_a_warm_scan_reports_the_same(project: Path) -> None:
    assert _found() == EXPECTED
    assert _found() == EXPECTED
