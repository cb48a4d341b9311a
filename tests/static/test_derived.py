"""Tool classes a framework knows by their base, reached through the project's own base
(issue 20): ``class Search(ProjectTool)`` with ``ProjectTool(BaseTool)`` is a LangChain tool,
its ``_run`` the tool (the module that defines it imports no framework); and a LlamaIndex tool
spec's tools are the methods its ``spec_functions`` names (``("buy", "abuy")``: both), not its
other methods."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]


@pytest.fixture
def derived(data_project: Callable[[str], Path]) -> Path:
    return data_project("derived")


def test_tool_classes_through_a_project_base_and_a_tool_specs_functions(
    derived: Path, found: Found
) -> None:
    assert {f for f in found() if f[2] == "GK201"} == {
        ("pkg/tools.py", 8, "GK201", "Search._run"),
        ("pkg/spec.py", 7, "GK201", "StockSpec.get_price"),
        ("pkg/spec.py", 10, "GK201", "StockSpec.buy"),
        ("pkg/spec.py", 13, "GK201", "StockSpec.abuy"),
    }
