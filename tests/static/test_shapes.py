"""Model calls recognised by what they return (issue: recall on agent code the catalogue does
not know): a tool choice read out of a value (``r.message.tool_calls``, ``r.choices[0].message``,
``tool_use`` content blocks) makes the call that produced it a model call, whatever client made
it, so its dispatch, tools, loops and retry recursion are found; tables bound by ``:=`` and
nested beside their tools; AG2 ``functions=`` and ``register_function``; scripts that share a
module name (``main.py`` in each example folder)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import scan

DATA = Path(__file__).parent / "data" / "shapes"
EXPECTED = {
    # an in-house generator whose reply is read as ``reply.message.tool_calls``; the table is
    # bound with ``:=`` (``if handler := TOOLS.get(call.function.name):``)
    ("lab/local_agent.py", 6, "GK201", "lookup"),
    ("lab/local_agent.py", 10, "GK201", "remove"),
    ("lab/local_agent.py", 19, "GK101", "generator.respond"),
    ("lab/local_agent.py", 20, "GK102", "generator.respond"),
    ("lab/local_agent.py", 25, "GK202", "TOOLS"),
    # ``for block in result.content: if block.type == "tool_use"``; ``show`` reads one response's
    # text and an unrelated ``.name`` in loops: neither is a model call nor a model loop
    ("lab/blocks.py", 6, "GK201", "measure"),
    ("lab/blocks.py", 14, "GK102", "session.send"),
    ("lab/blocks.py", 17, "GK202", "TOOL_HANDLERS"),
    # ``response.choices[0].message`` of an unknown client, retried by recursion on any error
    ("lab/retry.py", 9, "GK101", "client.complete"),
    ("lab/retry.py", 11, "GK102", "client.complete"),
    # tools nested in ``main()`` beside the table that dispatches them (a bounded loop)
    ("desk/main.py", 7, "GK201", "main.open_page"),
    ("desk/main.py", 10, "GK201", "main.find_text"),
    ("desk/main.py", 16, "GK102", "client.chat"),
    ("desk/main.py", 21, "GK202", "available"),
    # AG2: ``ConversableAgent(functions=[...])`` from a sibling module of a ``main.py`` that
    # shares its name with another folder's, and ``register_function(f, caller=..., ...)``
    ("team_a/actions.py", 1, "GK201", "refund_order"),
    ("team_a/actions.py", 5, "GK201", "order_status"),
    ("team_b/main.py", 4, "GK201", "wipe_cache"),
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "shapes"
    shutil.copytree(DATA, target)
    monkeypatch.chdir(target)
    return target


def _found(*args: str) -> set[tuple[str, int, str, str]]:
    result = CliRunner().invoke(scan, [".", "--format", "json", *args])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    return {(f["path"], f["line"], f["rule"], f["symbol"]) for f in report["findings"]}


def test_model_calls_are_recognised_by_the_tool_choice_read_out_of_them(project: Path) -> None:
    assert _found("--no-cache") == EXPECTED


def test_a_warm_scan_reports_the_same(project: Path) -> None:
    assert _found() == EXPECTED
    assert _found() == EXPECTED
