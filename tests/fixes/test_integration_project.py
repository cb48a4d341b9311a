"""``guardkit fix --write`` on a project whose agent, tools and server live in different modules:
the integration goes where the agent is built, the tools' module is not touched, the dependency
names the extras, and the policy skeleton lists the tools by the names their framework uses."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods import scan
from guardkit.codemods.cli import fix as fix_command
from guardkit.codemods.dependencies import add_dependency
from guardkit.codemods.testing import dedent

import guardkit

FILES = {
    "pyproject.toml": '[project]\nname = "shop"\ndependencies = [\n    "langchain>=1",\n]\n',
    "shop/__init__.py": "",
    "shop/tools.py": """
        from langchain_core.tools import tool


        @tool
        def refund(order_id: str) -> str:
            \"\"\"Refund an order.\"\"\"
            return order_id


        @tool("lookup_order")
        def lookup(order_id: str) -> str:
            \"\"\"Look an order up.\"\"\"
            return order_id


        TOOLS = [refund, lookup]
        """,
    "shop/graph.py": """
        from langchain.agents import create_agent

        from .tools import TOOLS

        graph = create_agent("openai:gpt-4o", tools=TOOLS)
        """,
    "shop/server.py": """
        from mcp.server.mcpserver import MCPServer

        app = MCPServer("shop")


        @app.tool()
        def cancel_order(order_id: str) -> str:
            return order_id
        """,
}


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text) if name.endswith(".py") else text)
    return tmp_path


def test_integrations_across_modules(shop: Path) -> None:
    tools_before = (shop / "shop" / "tools.py").read_text()
    result = CliRunner().invoke(fix_command, [str(shop), "--write"])
    assert result.exit_code == 0, result.output
    assert "changed 2 of 4 files" in result.output
    assert (shop / "shop" / "tools.py").read_text() == tools_before  # no decorators
    graph = (shop / "shop" / "graph.py").read_text()
    assert "from guardkit.plugins.langchain import GuardMiddleware\n" in graph
    assert 'create_agent("openai:gpt-4o", tools=TOOLS, middleware=[GuardMiddleware()])' in graph
    assert "guard_server(app)\n" in (shop / "shop" / "server.py").read_text()
    deps = tomllib.loads((shop / "pyproject.toml").read_text())["project"]["dependencies"]
    assert deps == ["langchain>=1", "guardkit[langchain,mcp]>=0.1"]
    policy = guardkit.load_policy((shop / "guardkit-policy.toml").read_text())
    assert set(policy.tools) == {"llm_turn", "refund", "lookup_order", "cancel_order"}
    refund = policy.tools["refund"].conditions
    assert refund is not None
    assert [r.effect for r in refund.rules] == ["requires_approval"]
    assert [f for r in scan(str(shop)) for f in r.findings] == []
    again = CliRunner().invoke(fix_command, [str(shop)])
    assert "would change 0 of 4 files" in again.output


def test_only_the_missing_extras_are_added(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "a"\ndependencies = ["guardkit[otel]>=0.1", "x"]\n'
    )
    assert add_dependency(tmp_path, {"langchain"}) == tmp_path / "pyproject.toml"
    data = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert data["project"]["dependencies"] == ["guardkit[langchain,otel]>=0.1", "x"]
    assert add_dependency(tmp_path, {"otel", "langchain"}) is None
    (tmp_path / "requirements.txt").write_text("httpx\nguardkit>=0.1\n")
    (tmp_path / "pyproject.toml").unlink()
    assert add_dependency(tmp_path, {"mcp"}) == tmp_path / "requirements.txt"
    assert (tmp_path / "requirements.txt").read_text() == "httpx\nguardkit[mcp]>=0.1\n"


def test_poetry_gets_the_extras_as_a_table_last(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.poetry.dependencies]\npython = "^3.11"\nx = "1"\n\n[tool.x]\na = 1\n'
    )
    add_dependency(tmp_path, {"pydantic-ai"})
    text = (tmp_path / "pyproject.toml").read_text()
    assert 'x = "1"\nguardkit = {version = ">=0.1", extras = ["pydantic-ai"]}\n\n[tool.x]' in text
    entry = tomllib.loads(text)["tool"]["poetry"]["dependencies"]["guardkit"]
    assert entry == {"version": ">=0.1", "extras": ["pydantic-ai"]}


def test_the_hosts_quote_style_is_kept(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'a'\ndependencies = [\n  'x == 1',\n]\n"
    )
    add_dependency(tmp_path, {"mcp"})
    assert "  'x == 1',\n  'guardkit[mcp]>=0.1',\n]" in (tmp_path / "pyproject.toml").read_text()


def test_an_adk_agent_in_one_module_is_guarded_at_the_runner_in_another(tmp_path: Path) -> None:
    """The tools go to the agent; the runner that runs it gets ``guard(runner)``."""
    files = {
        "ops/__init__.py": "",
        "ops/tools.py": '''
            def delete_repo(name: str) -> str:
                """Delete a repository."""
                return name
            ''',
        "ops/main.py": """
            from google.adk.agents import Agent
            from google.adk.runners import InMemoryRunner

            from ops.tools import delete_repo

            root_agent = Agent(name="ops", model="gemini-2.0-flash", tools=[delete_repo])
            runner = InMemoryRunner(agent=root_agent)
            """,
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text))
    tools_before = (tmp_path / "ops" / "tools.py").read_text()
    result = CliRunner().invoke(fix_command, [str(tmp_path), "--write"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "ops" / "tools.py").read_text() == tools_before  # no decorator
    main = (tmp_path / "ops" / "main.py").read_text()
    assert main.endswith("runner = InMemoryRunner(agent=root_agent)\nguard(runner)\n")
    assert "from guardkit.plugins.google_adk import guard\n" in main
    assert [f for r in scan(str(tmp_path)) for f in r.findings] == []
