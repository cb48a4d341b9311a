"""Tools a project's own agent class is built with (issue 20): ``Agent("ops", [lookup,
restart])`` where ``Agent.__init__`` turns ``helpers`` into ``self.table`` and dispatches
``self.table[call.function.name]``, and ``Worker(functions=[search])`` where a pydantic model
maps its ``functions`` field in ``model_post_init``: the dispatch runs what callers pass there,
in any module (here two example scripts, both named ``main.py``, outside the package). What
is passed to another parameter (``notes=[greeting]``) is no tool, and a function of one
example is not flagged in the other because it has the same name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import fix, scan
from guardkit.codemods.modules import unique_names

Found = Callable[[], set[tuple[str, int, str, str]]]
EXPECTED = {
    ("crew/agent.py", 16, "GK102", "client.chat.completions.create"),
    ("crew/agent.py", 19, "GK202", "self.table[call.function.name]"),
    ("crew/worker.py", 19, "GK102", "client.chat.completions.create"),
    ("crew/worker.py", 22, "GK202", "self._by_name.get(call.function.name)"),
    ("examples/one/main.py", 4, "GK201", "lookup"),
    ("examples/one/main.py", 8, "GK201", "restart"),
    ("examples/two/main.py", 4, "GK201", "search"),
}


@pytest.fixture
def built(data_project: Callable[[str], Path]) -> Path:
    return data_project("built")


def test_the_tools_are_what_callers_build_the_agent_with(built: Path, found: Found) -> None:
    assert found() == EXPECTED


def test_a_positional_argument_counts_by_the_constructors_parameters(
    built: Path, found: Found
) -> None:
    main = built / "examples" / "one" / "main.py"
    main.write_text(
        main.read_text().replace(
            'Agent("ops", [lookup, restart], notes=[greeting])',
            'Agent("ops", [greeting], [lookup, restart])',
        )
    )
    one = {s for p, _, r, s in found() if p == "examples/one/main.py" and r == "GK201"}
    assert one == {"greeting"}


def test_the_fix_guards_each_dispatch_and_its_tools_once(built: Path) -> None:
    result = CliRunner().invoke(fix, [".", "--write", "--no-dependency"])
    assert result.exit_code == 0, result.output
    agent = (built / "crew" / "agent.py").read_text()
    assert "guardkit.call_tool(" in agent
    assert "call.function.name" in agent
    assert "@guardkit.tool()\ndef lookup(" in (built / "examples" / "one" / "main.py").read_text()
    assert CliRunner().invoke(scan, [".", "--no-cache"]).exit_code == 0


def _unique(tmp_path: Path, files: dict[str, str]) -> dict[str, str]:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    plain = {str(tmp_path / rel): Path(rel).stem for rel in files}
    named = unique_names(plain, lambda path: Path(path).read_bytes())
    return {str(Path(p).relative_to(tmp_path)): n for p, n in named.items()}


def test_scripts_sharing_a_name_are_told_apart_unless_a_sibling_imports_one(
    tmp_path: Path,
) -> None:
    names = _unique(
        tmp_path,
        {
            "a/main.py": "print(1)\n",
            "b/main.py": "print(2)\n",
            "c/main.py": "app = 1\n",
            "c/worker.py": "from main import app\n",
            "c/helper.py": "x = 1\n",
        },
    )
    assert names["a/main.py"] != names["b/main.py"]
    assert names["a/main.py"].startswith("main@")
    assert "." not in names["a/main.py"]
    assert names["c/main.py"] == "main"  # its sibling worker.py imports it as ``main``
    assert names["c/worker.py"] == "worker"
    assert names["c/helper.py"] == "helper"
