"""``guardkit mcp wrap``: a client's whole MCP configuration behind the proxy, reversibly.

Sample configurations in each client's shape (Claude Desktop / Cursor ``mcpServers``, VS Code
``servers`` with ``inputs``, VS Code ``settings.json``'s ``mcp.servers``), the CLI on real files,
and one end-to-end run: a configuration naming our own upstream server is wrapped, then started
the way a client starts it, and a call goes through the proxy into the ledger.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

pytest.importorskip("mcp")

from guardkit.plugins.mcp.wrap import (
    BACKUP_SUFFIX,
    WrapError,
    WrapOptions,
    unwrap_config,
    wrap_config,
)
from mcp import Client, StdioServerParameters

from guardkit import Guard, load_policy
from guardkit.cli import main

UPSTREAM = str(Path(__file__).with_name("upstream_server.py"))

CLAUDE: dict[str, Any] = {
    "globalShortcut": "Ctrl+Space",
    "mcpServers": {
        "files": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/reports"],
            "env": {"DEBUG": "1"},
        },
        "git": {"command": "uvx", "args": ["mcp-server-git"], "disabled": True},
        "search": {"url": "https://search.example/mcp"},
    },
}
VSCODE: dict[str, Any] = {
    "inputs": [{"type": "promptString", "id": "token", "password": True}],
    "servers": {
        "db": {"type": "stdio", "command": "python", "args": ["db_server.py"]},
        "remote": {"type": "http", "url": "http://127.0.0.1:9000/mcp"},
    },
}


def options(tmp_path: Path, **kwargs: Any) -> WrapOptions:
    return WrapOptions(
        guardkit=("/opt/py/bin/python", "-m", "guardkit"),
        db=str(tmp_path / "guard.db"),
        policy_dir=str(tmp_path / "policies"),
        **kwargs,
    )


def test_every_stdio_and_http_server_goes_behind_the_proxy(tmp_path: Path) -> None:
    plan = wrap_config(CLAUDE, options(tmp_path))
    servers = plan.config["mcpServers"]
    assert plan.actions == {"files": "wrapped", "git": "wrapped", "search": "wrapped"}
    files = servers["files"]
    assert files["command"] == "/opt/py/bin/python"
    assert files["args"] == [
        "-m", "guardkit", "mcp", "proxy",
        "--agent", "mcp-files",
        "--policy", str(tmp_path / "policies" / "files.toml"),
        "--db", str(tmp_path / "guard.db"),
        "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/reports",
    ]  # fmt: skip
    assert files["env"] == {"DEBUG": "1"}
    assert servers["git"]["disabled"] is True
    assert servers["search"]["args"][-2:] == ["--upstream", "https://search.example/mcp"]
    assert "url" not in servers["search"]
    assert plan.config["globalShortcut"] == "Ctrl+Space"
    assert CLAUDE["mcpServers"]["files"]["command"] == "npx"  # the input is not touched


def test_a_second_wrap_changes_nothing(tmp_path: Path) -> None:
    once = wrap_config(CLAUDE, options(tmp_path))
    twice = wrap_config(once.config, options(tmp_path))
    assert twice.config == once.config
    assert set(twice.actions.values()) == {"already"}
    assert not twice.changed


def test_vscode_servers_become_stdio_and_inputs_are_kept(tmp_path: Path) -> None:
    plan = wrap_config(VSCODE, options(tmp_path, shared="ide"))
    servers = plan.config["servers"]
    assert {s["type"] for s in servers.values()} == {"stdio"}
    assert servers["remote"]["args"][-2:] == ["--upstream", "http://127.0.0.1:9000/mcp"]
    assert plan.config["inputs"] == VSCODE["inputs"]
    for name, entry in servers.items():  # one shared agent under one policy, tools namespaced
        args = entry["args"]
        assert args[args.index("--agent") + 1] == "ide"
        assert args[args.index("--policy") + 1] == str(tmp_path / "policies" / "ide.toml")
        assert args[args.index("--server-name") + 1] == name
    assert "--server-name" not in wrap_config(VSCODE, options(tmp_path)).config["servers"]["db"]
    settings = {"editor.tabSize": 4, "mcp": {"servers": VSCODE["servers"]}}
    assert set(wrap_config(settings, options(tmp_path)).actions) == {"db", "remote"}


def test_unwrap_restores_every_server_from_the_backup_or_the_proxy_arguments(
    tmp_path: Path,
) -> None:
    wrapped = wrap_config(CLAUDE, options(tmp_path)).config
    assert unwrap_config(wrapped, CLAUDE).config == CLAUDE
    # Without a backup the proxy's own arguments say what the server was.
    restored = unwrap_config(wrapped, None).config["mcpServers"]
    assert restored["files"] == CLAUDE["mcpServers"]["files"]
    assert restored["search"] == {"url": "https://search.example/mcp"}
    vscode = unwrap_config(wrap_config(VSCODE, options(tmp_path)).config, None).config
    assert vscode == VSCODE


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer t"}}, "headers"),
        ({"type": "sse", "url": "https://x.example/sse"}, "not 'sse'"),
        ({"command": "", "args": []}, "non-empty string"),
        ({"command": "srv", "args": "--flag"}, "list of strings"),
        ({"note": "nothing to start"}, "--skip bad"),
    ],
)
def test_a_server_the_proxy_cannot_front_is_refused_by_name(
    tmp_path: Path, entry: dict[str, Any], says: str
) -> None:
    config = {"mcpServers": {"ok": {"command": "srv"}, "bad": entry}}
    with pytest.raises(WrapError, match="'bad'") as refused:
        wrap_config(config, options(tmp_path))
    assert says in str(refused.value)
    plan = wrap_config(config, options(tmp_path), skip=["bad"])
    assert plan.actions == {"ok": "wrapped", "bad": "unchanged"}
    assert plan.config["mcpServers"]["bad"] == entry


def test_configurations_without_servers_or_with_unknown_skips_are_refused(tmp_path: Path) -> None:
    with pytest.raises(WrapError, match="mcpServers"):
        wrap_config({"theme": "dark"}, options(tmp_path))
    with pytest.raises(WrapError, match="--skip names no server"):
        wrap_config(CLAUDE, options(tmp_path), skip=["nope"])


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(main, ["mcp", "wrap", *args], catch_exceptions=False)


def test_cli_wraps_keeps_a_backup_then_changes_nothing_then_undoes(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    original = json.dumps(CLAUDE, indent=2) + "\n"
    config.write_text(original)
    common = ["--dir", str(tmp_path / "gk"), "--no-list-tools"]
    first = _invoke(str(config), *common)
    assert first.exit_code == 0, first.output
    assert "files: behind guardkit mcp proxy" in first.output
    backup = config.with_name(config.name + BACKUP_SUFFIX)
    assert backup.read_text() == original
    wrapped = config.read_text()
    for server in ("files", "git", "search"):  # a skeleton per server, readable as a policy
        policy = tmp_path / "gk" / f"{server}.toml"
        assert policy.exists()
        assert load_policy(policy).tools == {}
    second = _invoke(str(config), *common)
    assert second.exit_code == 0
    assert "nothing to change" in second.output
    assert config.read_text() == wrapped
    assert backup.read_text() == original
    undone = _invoke(str(config), "--undo")
    assert undone.exit_code == 0
    assert config.read_text() == original
    assert not backup.exists()
    assert "nothing to change" in _invoke(str(config), "--undo").output


def test_cli_wraps_a_server_added_later_and_undo_restores_both(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"a": {"command": "srv-a"}}}, indent=4))
    common = ["--dir", str(tmp_path / "gk"), "--no-list-tools"]
    assert _invoke(str(config), *common).exit_code == 0
    data = json.loads(config.read_text())
    data["mcpServers"]["b"] = {"command": "srv-b", "args": ["--x"]}
    config.write_text(json.dumps(data, indent=4))
    again = _invoke(str(config), *common)
    assert "a: already behind" in again.output
    assert "b: behind guardkit mcp proxy" in again.output
    assert config.read_text().startswith('{\n    "mcpServers"')  # the file's indentation kept
    assert _invoke(str(config), "--undo").exit_code == 0
    assert json.loads(config.read_text()) == {
        "mcpServers": {"a": {"command": "srv-a"}, "b": {"command": "srv-b", "args": ["--x"]}}
    }


def test_cli_refuses_and_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    text = '{\n  // a comment\n  "servers": {}\n}\n'
    config.write_text(text)
    result = CliRunner().invoke(main, ["mcp", "wrap", str(config)])
    assert result.exit_code == 1
    assert "not plain JSON" in result.output
    assert "remove comments" in result.output
    headers = {"mcpServers": {"r": {"url": "https://x.example/mcp", "headers": {"A": "b"}}}}
    config.write_text(json.dumps(headers))
    result = CliRunner().invoke(main, ["mcp", "wrap", str(config), "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "--skip r" in result.output
    assert json.loads(config.read_text()) == headers
    assert list(tmp_path.iterdir()) == [config]


def test_dry_run_prints_the_new_configuration_and_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(CLAUDE))
    result = _invoke(str(config), "--dry-run", "--dir", str(tmp_path / "gk"))
    assert result.exit_code == 0
    assert "files: would be behind guardkit mcp proxy" in result.output
    assert json.loads(config.read_text()) == CLAUDE
    assert not (tmp_path / "gk").exists()


def test_a_wrapped_configuration_runs_every_call_through_the_guard(tmp_path: Path) -> None:
    """The client's view: start the entry ``wrap`` wrote; the tools come through the proxy,
    the skeleton named them (``delete`` behind an approval), and a call lands in the ledger."""
    runs = tmp_path / "runs.txt"
    config = tmp_path / "claude_desktop_config.json"
    entry = {"command": sys.executable, "args": [UPSTREAM], "env": {"MCP_RUNS": str(runs)}}
    config.write_text(json.dumps({"mcpServers": {"notes": entry}}, indent=2))
    guardkit = f"{shlex.quote(sys.executable)} -m guardkit"
    result = _invoke(str(config), "--dir", str(tmp_path / "gk"), "--guardkit", guardkit)
    assert result.exit_code == 0, result.output
    policy = load_policy(tmp_path / "gk" / "notes.toml")
    assert {"echo", "delete", "secret"} <= set(policy.tools)
    assert policy.tools["delete"].requires_approval
    assert not policy.tools["echo"].requires_approval
    wrapped = json.loads(config.read_text())["mcpServers"]["notes"]

    async def call() -> tuple[list[str], str]:
        params = StdioServerParameters(
            command=wrapped["command"], args=wrapped["args"], env=wrapped["env"]
        )
        async with Client(params) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            answer = await client.call_tool("echo", {"text": "hello"})
            return listed, answer.content[0].text  # type: ignore[union-attr]

    listed, text = anyio.run(call)
    assert "echo" in listed
    assert text == "hello"
    assert runs.read_text().splitlines() == ["echo hello"]
    with Guard(str(tmp_path / "gk" / "guard.db")) as guard:
        status = guard.agent("mcp-notes").status()
        records = guard.log("mcp-notes")["records"]
    assert status["spent"] == 1
    requested = [r["payload"] for r in records if r["kind"] == "action_requested"]
    called = [p for p in requested if p["tool"] != "guardkit.mcp_pin"]  # the rest: pin events
    assert [(p["tool"], p["input"]["text"]) for p in called] == [("echo", "hello")]
    assert "echo" in {p["input"]["name"] for p in requested if p["tool"] == "guardkit.mcp_pin"}
    outcomes = [r["payload"]["status"] for r in records if r["kind"] == "outcome"]
    assert outcomes == ["success"]


def test_a_shared_agent_fronts_each_server_under_its_own_namespace(tmp_path: Path) -> None:
    """``--shared-agent``: one agent, one policy naming ``server.tool``; a call through the
    wrapped entry is requested under its server's name."""
    runs = tmp_path / "runs.txt"
    config = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": [UPSTREAM], "env": {"MCP_RUNS": str(runs)}}
    config.write_text(json.dumps({"mcpServers": {"notes": entry}}))
    guardkit = f"{shlex.quote(sys.executable)} -m guardkit"
    args = ["--dir", str(tmp_path / "gk"), "--guardkit", guardkit, "--shared-agent", "desk"]
    result = _invoke(str(config), *args)
    assert result.exit_code == 0, result.output
    policy = load_policy(tmp_path / "gk" / "desk.toml")
    assert {"notes.echo", "notes.delete"} <= set(policy.tools)
    assert policy.tools["notes.delete"].requires_approval
    wrapped = json.loads(config.read_text())["mcpServers"]["notes"]

    async def call() -> str:
        params = StdioServerParameters(
            command=wrapped["command"], args=wrapped["args"], env=wrapped["env"]
        )
        async with Client(params) as client:
            answer = await client.call_tool("echo", {"text": "hi"})
            return answer.content[0].text  # type: ignore[union-attr]

    assert anyio.run(call) == "hi"
    with Guard(str(tmp_path / "gk" / "guard.db")) as guard:
        records = guard.log("desk")["records"]
    tools = [r["payload"]["tool"] for r in records if r["kind"] == "action_requested"]
    assert [tool for tool in tools if tool != "guardkit.mcp_pin"] == ["notes.echo"]
