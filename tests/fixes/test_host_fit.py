"""Fixes that fit the host: imports where its own isort/ruff settings put them (checked with
ruff itself), guardkit added to its dependencies, a policy skeleton, follow-ups reported."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods.cli import fix as fix_command
from guardkit.codemods.dependencies import add_dependency
from guardkit.codemods.fixer import fix_source
from guardkit.codemods.import_style import ImportStyle
from guardkit.codemods.policy_skeleton import is_destructive, render_policy
from guardkit.codemods.testing import dedent

import guardkit

RUFF = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
CROSSMODULE = Path(__file__).parents[1] / "static" / "data" / "crossmodule"
EXTRAS = '[project]\nname = "a"\ndependencies = [\n    "crewai[tools]>=0.1",  # [x]\n    "x",\n]\n'
MULTI_LINE = '[project]\nname = "a"\ndependencies = [\n    "httpx",  # keep\n]\n'


def _ruff_isort_passes(root: Path) -> str:
    done = subprocess.run(
        [RUFF, "check", "--select", "I", "--no-cache", str(root)],
        capture_output=True,
        text=True,
        check=False,
        cwd=root,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("settings", "imports"),
    [
        pytest.param(
            "",
            "import os\n\nimport anthropic\nfrom langchain_core.tools import tool\n\n"
            "from myapp import db\n",
            id="default",
        ),
        pytest.param(
            "[tool.ruff.lint.isort]\nforce-sort-within-sections = true\n",
            "import os\n\nfrom anthropic import Anthropic\n"
            "from langchain_core.tools import tool\nimport zlib_ng\n",
            id="force-sort-within-sections",
        ),
        pytest.param(
            "[tool.ruff.lint.isort]\nknown-first-party = ['helpers']\n",
            "import json\n\nfrom langchain_core.tools import tool\n\nfrom helpers import util\n",
            id="known-first-party",
        ),
        pytest.param(
            "[tool.ruff.lint.isort]\nfrom-first = true\n",
            "import os\n\nfrom langchain_core.tools import tool\nimport httpx\n",
            id="from-first",
        ),
        pytest.param(
            "[tool.ruff.lint.isort]\nextra-standard-library = ['typing_extensions']\n",
            "import json\nfrom typing_extensions import Literal\n\n"
            "from langchain_core.tools import tool\n",
            id="extra-standard-library",
        ),
        pytest.param(
            "[tool.ruff.lint.isort]\nlength-sort = true\n",
            "import os\n\nimport httpx\nimport zlib_ng\nfrom langchain_core.tools import tool\n",
            id="length-sort",
        ),
        pytest.param(
            "[tool.ruff.lint.isort]\nlength-sort-straight = true\n",
            "import os\n\nimport httpx\nimport zlib_ng\nfrom langchain_core.tools import tool\n",
            id="length-sort-straight",
        ),
    ],
)
def test_import_lands_where_the_hosts_ruff_wants_it(
    tmp_path: Path, settings: str, imports: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'host'\n{settings}")
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    code = imports + "\n\n@tool\ndef search(q: str) -> str:\n    return q\n"
    (tmp_path / "agent.py").write_text(code)
    _ruff_isort_passes(tmp_path)  # the host starts clean
    result = fix_source(code, "agent.py", style=ImportStyle.load(tmp_path))
    assert "@guardkit.tool()" in result.after
    (tmp_path / "agent.py").write_text(result.after)
    _ruff_isort_passes(tmp_path)


def test_isort_settings_are_read_from_tool_isort(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.isort]\nforce_sort_within_sections = true\nknown_first_party = ['core']\n"
    )
    style = ImportStyle.load(tmp_path)
    assert style.force_sort_within_sections
    assert "core" in style.first_party


def test_isort_standard_library_settings_are_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.isort]\nextra_standard_library = ['typing_extensions']\nlength_sort = true\n"
    )
    style = ImportStyle.load(tmp_path)
    assert "typing_extensions" in style.standard_library
    assert style.length_sort


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("import json\nimport os\n", id="stdlib-only"),
        pytest.param("from .local import thing\n", id="local-only"),
        pytest.param('"""A module."""\n', id="docstring-only"),
        pytest.param("", id="no-imports"),
    ],
)
def test_a_new_third_party_section_is_opened(tmp_path: Path, source: str) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'host'\n")
    code = source + ("\n" if source else "") + "TOOLS = {}\n\n\n"
    code += "def get_time(zone: str) -> str:\n    return zone\n\n\n"
    code += "TOOL_FUNCTIONS = {'get_time': get_time}\n"
    (tmp_path / "agent.py").write_text(code)
    _ruff_isort_passes(tmp_path)
    result = fix_source(code, "agent.py", style=ImportStyle.load(tmp_path))
    assert "@guardkit.tool()" in result.after
    (tmp_path / "agent.py").write_text(result.after)
    _ruff_isort_passes(tmp_path)


@pytest.mark.parametrize(
    ("files", "changed", "expected"),
    [
        pytest.param(
            {"pyproject.toml": MULTI_LINE},
            "pyproject.toml",
            ["httpx", "guardkit>=0.1"],
            id="multi-line",
        ),
        pytest.param(
            {"pyproject.toml": EXTRAS},
            "pyproject.toml",
            ["crewai[tools]>=0.1", "x", "guardkit>=0.1"],
            id="brackets-inside-strings",
        ),
        pytest.param(
            {"pyproject.toml": '[project]\nname = "a"\ndependencies = []\n'},
            "pyproject.toml",
            ["guardkit>=0.1"],
            id="empty",
        ),
        pytest.param(
            {"pyproject.toml": '[project]\nname = "a"\n\n[tool.x]\ny = 1\n'},
            "pyproject.toml",
            ["guardkit>=0.1"],
            id="no-key",
        ),
        pytest.param(
            {
                "pyproject.toml": '[project]\nname = "a"\ndynamic = ["dependencies"]\n',
                "requirements.txt": "httpx",
            },
            "requirements.txt",
            None,
            id="dynamic-falls-back-to-requirements",
        ),
        pytest.param(
            {"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.11"\n'},
            "pyproject.toml",
            None,
            id="poetry",
        ),
        pytest.param(
            {"pyproject.toml": '[project]\nname = "a"\ndependencies = ["guardkit>=0.1"]\n'},
            None,
            None,
            id="already-listed",
        ),
    ],
)
def test_dependency_is_added_once(
    tmp_path: Path, files: dict[str, str], changed: str | None, expected: list[str] | None
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    edited = add_dependency(tmp_path)
    assert (edited.name if edited else None) == changed
    assert add_dependency(tmp_path) is None  # a second run adds nothing
    if expected is not None:
        data = tomllib.loads((tmp_path / "pyproject.toml").read_text())
        assert data["project"]["dependencies"] == expected
    if changed == "requirements.txt":
        assert (tmp_path / "requirements.txt").read_text() == "httpx\nguardkit>=0.1\n"
    if "poetry" in files.get("pyproject.toml", ""):
        data = tomllib.loads((tmp_path / "pyproject.toml").read_text())
        assert data["tool"]["poetry"]["dependencies"]["guardkit"] == ">=0.1"
    if "keep" in files.get("pyproject.toml", ""):
        assert "# keep" in (tmp_path / "pyproject.toml").read_text()


def test_policy_skeleton_loads_and_holds_destructive_tools_for_approval() -> None:
    text = render_policy(["delete_file", "search", "sendEmail", "pay_invoice", "run_shell"], 12)
    policy = guardkit.load_policy(text)
    assert policy.tools["llm_turn"].max_calls == 12
    for name in ("delete_file", "sendEmail", "pay_invoice", "run_shell"):
        tool = policy.tools[name]
        # An approval rule to narrow, not requires_approval on every call for good.
        assert not tool.requires_approval
        assert tool.conditions is not None
        assert [r.effect for r in tool.conditions.rules] == ["requires_approval"]
    assert policy.tools["search"].conditions is None
    # Each suggested narrowing is itself a valid rule once uncommented.
    hints = [line.split("e.g. ", 1)[1] for line in text.splitlines() if "e.g. when" in line]
    assert len(hints) == 4
    for hint in hints:
        narrowed = text.replace("when = {}", hint, 1).replace("[tools.search]\ncost = 1", "")
        guardkit.load_policy(narrowed)
    with guardkit.Guard(":memory:") as guard:
        guard.create_agent("bot", policy)
        agent = guard.agent("bot")
        assert agent.request("search", {"q": "x"})["decision"] == "allowed"
        assert agent.request("delete_file", {"path": "/tmp/x"})["decision"] == "pending_approval"
    assert [n for n in ("run_shell", "pay_invoice", "list_files") if is_destructive(n)] == [
        "run_shell",
        "pay_invoice",
    ]


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    target = tmp_path / "shop_project"
    shutil.copytree(CROSSMODULE, target)
    return target


def test_fix_write_on_a_project(shop: Path) -> None:
    result = CliRunner().invoke(fix_command, [str(shop), "--write"])
    assert result.exit_code == 0, result.output
    assert "changed 6 of 10 files" in result.output
    deps = tomllib.loads((shop / "pyproject.toml").read_text())["project"]["dependencies"]
    assert deps == ["litellm", "guardkit>=0.1"]
    policy = guardkit.load_policy((shop / "guardkit-policy.toml").read_text())
    assert set(policy.tools) == {"llm_turn", "lookup_price", "cancel_order"}
    assert "GUARDKIT_AGENT" in result.output
    assert "GUARDKIT_POLICY=guardkit-policy.toml" in result.output
    _ruff_isort_passes(shop)
    for path in shop.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")
    again = CliRunner().invoke(fix_command, [str(shop)])
    assert again.exit_code == 0, again.output
    assert "would change 0 of 10 files" in again.output


def test_no_dependency_and_an_existing_policy_is_kept(shop: Path) -> None:
    (shop / "guardkit-policy.toml").write_text("budget = 1\n")
    result = CliRunner().invoke(fix_command, [str(shop), "--write", "--no-dependency"])
    assert result.exit_code == 0, result.output
    assert "guardkit" not in (shop / "pyproject.toml").read_text()
    assert (shop / "guardkit-policy.toml").read_text() == "budget = 1\n"
    assert "Kept the existing" in result.output


def test_follow_ups_are_printed(tmp_path: Path) -> None:
    (tmp_path / "agents_run.py").write_text(
        dedent(
            """
            from agents import Agent, Runner
            from smolagents import tool

            @tool
            def wipe(path: str) -> str:
                \"\"\"Wipe a path.

                Args:
                    path: the path.
                \"\"\"
                return path

            async def main(agent, hooks):
                return await Runner.run(agent, "go", max_turns=float("inf"), hooks=hooks)
            """
        )
    )
    result = CliRunner().invoke(fix_command, [str(tmp_path), "--write"])
    assert result.exit_code == 0, result.output
    assert "Follow-ups guardkit fix could not make (2):" in result.output
    assert "GK201 tool wipe" in result.output
    assert "GK102 model call Runner.run" in result.output
    assert "guardkit" not in (tmp_path / "agents_run.py").read_text()


def test_policy_skeleton_proposes_an_input_schema_from_the_signature() -> None:
    import ast

    from guardkit.codemods.policy_skeleton import input_schemas

    code = "def delete_file(path: str, force: bool = False, *, why=None) -> None: ...\n"
    text = render_policy(["delete_file"], 3, input_schemas(ast.parse(code)))
    proposed = [line for line in text.splitlines() if line.startswith("# input_schema = ")]
    assert len(proposed) == 1
    policy = guardkit.load_policy(text.replace(proposed[0], proposed[0][2:]))
    with guardkit.Guard(":memory:") as guard:
        guard.create_agent("bot", policy)
        agent = guard.agent("bot")
        good = {"path": "/tmp/x", "force": False, "why": None}
        assert agent.request("delete_file", good)["decision"] == "pending_approval"
        bad = agent.request("delete_file", {"path": 1, "force": False, "why": None})
        assert bad["reason"]["code"] == "invalid_input"
        assert agent.request("delete_file", {"path": "/x"})["reason"]["code"] == "invalid_input"
