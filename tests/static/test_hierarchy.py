"""Tool classes reached through their base class (issue 20): a registry keeps instances in a
``dict[str, Tool]`` and runs ``tool.execute(**params)`` on the one the model named, a manager
finds ``next(t for t in tools if t.name == name)`` typed by its abstract base and runs the
base's template method ``run_async``, which calls each subclass's ``run_impl``. The tools are
the concrete subclasses' implementations, not the base's shared method (``Tool.check``,
``LLMTool.run_async``) and not the registry whose ``run`` is handed the model's tool call (it
is the dispatch). The name reaches the manager's method in another module through
``manager.run_tool(use.name, use.input)``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]
EXPECTED = {
    ("bot/provider.py", 6, "GK102", "litellm.acompletion"),
    ("bot/tools/files.py", 9, "GK201", "ReadTool.execute"),
    ("bot/tools/files.py", 16, "GK201", "WriteTool.execute"),
    ("bot/tools/registry.py", 21, "GK202", "self._tools.get(name)"),
    ("desk/agent.py", 14, "GK102", "client.messages.create"),
    ("desk/manager.py", 13, "GK202", "self.get_tool(name)"),
    ("desk/tools.py", 25, "GK201", "ShellTool.run_impl"),
    ("desk/tools.py", 35, "GK201", "NoteTool.run_impl"),
}


@pytest.fixture
def hierarchy(data_project: Callable[[str], Path]) -> Path:
    return data_project("hierarchy")


def test_tools_are_the_subclasses_a_base_typed_dispatch_runs(hierarchy: Path, found: Found) -> None:
    assert found() == EXPECTED


def test_a_concrete_base_method_is_the_tool_when_nothing_is_abstract(
    hierarchy: Path, found: Found
) -> None:
    # without the stub, Tool is no abstract base: the method the registry runs on the
    # looked-up tool (Tool.execute, not the Tool.check it validates the input with first) is
    # a tool, and so are the subclasses' overrides of it
    base = hierarchy / "bot" / "tools" / "base.py"
    base.write_text(
        base.read_text()
        .replace("from abc import ABC, abstractmethod\n", "")
        .replace("class Tool(ABC):", "class Tool:")
        .replace("    @abstractmethod\n", "")
        .replace("        raise NotImplementedError", "        return None")
    )
    seen = {(p, r, s) for p, _, r, s in found() if r == "GK201"}
    assert ("bot/tools/base.py", "GK201", "Tool.execute") in seen
    assert ("bot/tools/files.py", "GK201", "ReadTool.execute") in seen
    assert ("bot/tools/base.py", "GK201", "Tool.check") not in seen
