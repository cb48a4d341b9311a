"""Tools registered with an instance of a project's registry class (issue 20): a decorator
method of the instance (``@registry.action("...")``) or a method given the function
(``registry.add("read_file", read_file)``) stores it in ``self.actions``; the registry's
``execute(name, params)``, handed the name of the tool the model chose, runs
``self.actions[name]``: the dispatch, whose tools are what was stored there, in any module.
An instance that stores functions the model never names (``cache.put("today", today)``)
makes no tools."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import fix, scan

Found = Callable[[], set[tuple[str, int, str, str]]]


@pytest.fixture
def instances(data_project: Callable[[str], Path]) -> Path:
    return data_project("instances")


def test_what_an_instance_registers_is_run_by_its_dispatch(instances: Path, found: Found) -> None:
    assert {f for f in found() if f[2] in {"GK201", "GK202"}} == {
        ("bot/controller.py", 9, "GK201", "click"),
        ("bot/controller.py", 14, "GK201", "go_to_url"),
        ("bot/files.py", 1, "GK201", "read_file"),
        ("bot/registry.py", 18, "GK202", "self.actions[name]"),
    }


def test_a_registry_the_model_never_names_runs_no_tools(instances: Path, found: Found) -> None:
    agent = instances / "bot" / "agent.py"
    agent.write_text(agent.read_text().replace("call.function.name", '"click"'))
    assert {f for f in found() if f[2] in {"GK201", "GK202"}} == set()


def test_the_fix_gates_the_registered_tools_under_the_registering_decorator(
    instances: Path,
) -> None:
    result = CliRunner().invoke(fix, [".", "--write", "--no-dependency"])
    assert result.exit_code == 0, result.output
    controller = (instances / "bot" / "controller.py").read_text()
    assert '@registry.action("Go to a url")\n@guardkit.tool()\nasync def go_to_url(' in controller
    assert CliRunner().invoke(scan, [".", "--no-cache"]).exit_code == 0
    first = {p: p.read_text() for p in instances.rglob("*.py")}
    assert CliRunner().invoke(fix, [".", "--write", "--no-dependency"]).exit_code == 0
    assert {p: p.read_text() for p in instances.rglob("*.py")} == first
