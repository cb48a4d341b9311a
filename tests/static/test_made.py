"""Tools a module makes of its functions the way frameworks let it (issue 20): a list bound to a
name first (``tools = [add, delete_file]`` then ``create_react_agent(model, tools=tools)``), a
project helper that hands its ``tools`` parameter over (what its callers pass are the tools), a
tool decorator applied by hand (``tool(shell)``, ``function_tool(calendar)``), a tool
constructor given its callable by position or by any of its keywords
(``FunctionTool.from_defaults(async_fn=fetch)``), a nested ``def`` made a tool where it is
built, a function imported from another module (reported where it is defined), and what the
callers of a helper pass when it makes tools of its parameter's elements (``[tool(f) for f in
functions]``). A table
built by a comprehension over a tool list (``{f.__name__: f for f in TOOLS}``) or written by a
class as a literal of its bound methods and functions (``self.handlers = {"search":
self.search, "shell": run_shell}``) and looked up with the model's choice runs those; so does
``getattr(toolbox, name)`` on an instance of a project class: its public methods."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import fix, scan

Found = Callable[[], set[tuple[str, int, str, str]]]


@pytest.fixture
def made(data_project: Callable[[str], Path]) -> Path:
    return data_project("made")


def _tools(found: Found, path: str) -> set[tuple[int, str]]:
    return {(f[1], f[3]) for f in found() if f[0] == path and f[2] == "GK201"}


def test_a_list_bound_to_a_name_hands_its_functions_over(made: Path, found: Found) -> None:
    assert _tools(found, "app/react.py") == {(4, "add"), (9, "delete_file")}


def test_what_callers_pass_a_helper_that_hands_its_parameter_over_are_tools(
    made: Path, found: Found
) -> None:
    assert _tools(found, "app/main.py") == {(4, "search"), (9, "send_mail")}


def test_a_helper_no_caller_passes_tools_makes_none(made: Path, found: Found) -> None:
    main = made / "app" / "main.py"
    main.write_text(main.read_text().replace('    build_agent("openai:gpt-4o", NOTES_TOOLS)\n', ""))
    assert _tools(found, "app/main.py") == {(9, "send_mail")}


def test_a_tool_made_by_a_decorator_applied_by_hand_or_a_constructor_is_reported_at_its_def(
    made: Path, found: Found
) -> None:
    assert _tools(found, "app/made.py") == {
        (9, "shell"),
        (14, "fetch"),
        (19, "calendar"),
        (24, "archive"),
        (37, "forward"),
        (47, "summarise"),
    }
    assert _tools(found, "app/funcs.py") == {(1, "transfer")}


def test_a_table_comprehension_over_a_tool_list_runs_its_elements(
    made: Path, found: Found
) -> None:
    assert _tools(found, "app/tables.py") == {(8, "get_weather"), (12, "send_email")}


def test_a_table_a_class_writes_of_its_bound_methods_runs_them(made: Path, found: Found) -> None:
    assert _tools(found, "app/handlers.py") == {(8, "run_shell"), (17, "Assistant.search")}


def test_getattr_on_an_instance_of_a_project_class_runs_its_public_methods(
    made: Path, found: Found
) -> None:
    assert _tools(found, "app/toolbox.py") == {(8, "Toolbox.read_file"), (12, "Toolbox.list_dir")}


def test_the_fix_gates_every_made_tool_once_and_a_second_run_changes_nothing(made: Path) -> None:
    result = CliRunner().invoke(fix, [".", "--write", "--no-dependency"])
    assert result.exit_code == 0, result.output
    first = {p: p.read_text() for p in made.rglob("*.py")}
    assert first[made / "app" / "made.py"].count("@guardkit.tool()") == 6
    assert CliRunner().invoke(scan, [".", "--no-cache"]).exit_code == 0
    assert CliRunner().invoke(fix, [".", "--write", "--no-dependency"]).exit_code == 0
    assert {p: p.read_text() for p in made.rglob("*.py")} == first
