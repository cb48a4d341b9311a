"""Two ``guardkit mcp proxy`` processes in front of two servers, guarding ONE agent (one ledger,
one agent id), each with its own ``--server-name`` (issue 24, item 7): the hostile server's
``write_note`` never gets the trusted server's rule, and the ledger tells which server ran each
call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import types

from .conftest import UPSTREAM, local_stack

HOSTILE = str(Path(__file__).with_name("hostile_upstream.py"))
AGENT = "shared-bot"
POLICY: dict[str, Any] = {
    "budget": 100,
    "scar_limit": 100,
    "tools": {"trusted.write_note": {"cost": 1}, "hostile.read_file": {"cost": 1}},
}


def test_two_servers_behind_one_agent_keep_their_own_rules(tmp_path: Path) -> None:
    hostile_runs = tmp_path / "hostile-runs.txt"
    trusted = local_stack(
        tmp_path, POLICY, "--server-name", "trusted", upstream=UPSTREAM, agent_id=AGENT
    )
    hostile = local_stack(
        tmp_path, POLICY, "--server-name", "hostile", upstream=HOSTILE, agent_id=AGENT,
        env={"HOSTILE_NO_TWINS": "1", "MCP_RUNS": str(hostile_runs)},
    )  # fmt: skip
    assert trusted.db == hostile.db

    async def scenario() -> tuple[list[str], list[str], list[types.CallToolResult]]:
        async with trusted.client() as mine, hostile.client() as theirs:
            shown = [tool.name for tool in (await mine.list_tools()).tools]
            other = [tool.name for tool in (await theirs.list_tools()).tools]
            results = [
                await mine.call_tool("write_note", {"text": "from-trusted"}),
                await theirs.call_tool("write_note", {"text": "evil"}),
                await theirs.call_tool("read_file", {"path": "notes.txt"}),
            ]
            return shown, other, results

    shown, other, (wrote, refused, read) = anyio.run(scenario)
    assert shown == ["write_note"]
    assert other == ["read_file"]  # its write_note is hidden: no rule names hostile.write_note
    assert not wrote.is_error
    assert refused.is_error
    assert refused.structured_content is not None
    assert refused.structured_content["code"] == "tool_not_allowed"
    assert not read.is_error
    assert trusted.ran("write_note") == ["write_note from-trusted"]
    assert "write_note" not in hostile_runs.read_text()

    requested = {r["tool"]: r["input"]["_guardkit"] for r in trusted.records("action_requested")}
    assert sorted(requested) == ["hostile.read_file", "hostile.write_note", "trusted.write_note"]
    assert requested["trusted.write_note"]["upstream"]["server_name"] == "trusted"
    assert requested["trusted.write_note"]["upstream"]["server_info"]["name"] == "upstream"
    assert UPSTREAM in requested["trusted.write_note"]["upstream"]["target"]
    assert requested["hostile.write_note"]["upstream"]["server_name"] == "hostile"
    assert requested["hostile.write_note"]["upstream"]["server_info"] == {
        "name": "hostile",
        "version": "6.6.6",
    }
    (denied,) = trusted.records("action_denied")
    assert denied["reason"] == {"code": "tool_not_allowed", "tool": "hostile.write_note"}
    outcomes = {r["action_id"]: r["status"] for r in trusted.records("outcome")}
    assert sorted(outcomes.values()) == ["success", "success"]

    # One pin file, one agent, each server's tools pinned in its own namespace.
    pins = json.loads((tmp_path / "guard.db.mcp-pins.json").read_text())
    servers = pins["agents"][AGENT]["servers"]
    assert sorted(servers["trusted"]["tools"]) == ["write_note"]
    assert sorted(servers["hostile"]["tools"]) == ["read_file"]
