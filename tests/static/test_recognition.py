"""Recognition by flow across modules, on a fixture project written in the shapes real agent
code has: a low-level MCP server whose if-chain runs functions re-exported by another package,
tool handler classes looked up by name through a typed registry, operations behind a dispatch
helper that a LangChain tool forwards to (and a command table no tool reaches), bound methods
handed to an assistant and overridden in a subclass in another module (under a namespace
subpackage), and an agent loop using a client another module built."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import scan
from guardkit.codemods.modules import module_name

DATA = Path(__file__).parent / "data" / "registries"
EXPECTED = {
    ("agent/loop.py", 7, "GK101", "client.chat.completions.create"),
    ("agent/loop.py", 8, "GK102", "client.chat.completions.create"),
    ("debugger/assistant.py", 11, "GK102", "litellm.completion"),
    ("debugger/dialogs/base.py", 7, "GK201", "Dialog.llm_run"),
    ("debugger/dialogs/base.py", 10, "GK201", "Dialog.llm_source"),
    ("debugger/gdb.py", 7, "GK201", "GdbDialog.llm_run"),
    ("notes/handlers/search.py", 1, "GK201", "handle_search"),
    ("notes/handlers/write.py", 5, "GK201", "handle_append"),
    ("notes/server.py", 11, "GK202", "call_tool"),
    ("payments/operations.py", 4, "GK201", "refund"),
    ("payments/operations.py", 8, "GK201", "list_charges"),
    ("payments/tool.py", 10, "GK201", "PaymentsTool._run"),
    ("vault/server.py", 22, "GK202", "call_tool"),
    ("vault/tools.py", 18, "GK201", "DeleteNote.run"),
    ("vault/tools.py", 27, "GK201", "ListNotes.run"),
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "registries"
    shutil.copytree(DATA, target)
    monkeypatch.chdir(target)
    return target


def _found(*args: str) -> set[tuple[str, int, str, str]]:
    result = CliRunner().invoke(scan, [".", "--format", "json", *args])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    return {(f["path"], f["line"], f["rule"], f["symbol"]) for f in report["findings"]}


def test_tools_and_dispatch_are_found_by_flow_across_modules(project: Path) -> None:
    # not the abstract Handler.run, not the CLI's command table, not the helpers
    assert _found("--no-cache") == EXPECTED


def test_a_warm_scan_reports_the_same(project: Path) -> None:
    assert _found() == EXPECTED
    assert _found() == EXPECTED


def test_a_folder_without_init_inside_a_package_is_a_namespace_subpackage() -> None:
    path = DATA / "debugger" / "dialogs" / "base.py"
    assert module_name(str(path)) == "debugger.dialogs.base"
    assert module_name(str(DATA / "agent" / "loop.py")) == "agent.loop"
