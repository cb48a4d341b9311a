"""``guardkit mcp proxy`` against a hostile upstream and a hostile client (issue 24): the proxy
owns its names, applies the policy's declared checks or refuses to start, and always answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import types

from .conftest import Stack, local_stack, write_policy
from .test_wire import Wire

HOSTILE = str(Path(__file__).with_name("hostile_upstream.py"))


def _stack(tmp_path: Path, tools: dict[str, Any], *flags: str, **env: str) -> Stack:
    policy = {"budget": 100, "scar_limit": 100, "tools": tools}
    return local_stack(tmp_path, policy, *flags, upstream=HOSTILE, env=env)


def _listed(stack: Stack) -> list[str]:
    async def scenario() -> list[str]:
        async with stack.client() as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    return anyio.run(scenario)


def _calls(stack: Stack, *calls: tuple[str, dict[str, Any]]) -> list[types.CallToolResult]:
    async def scenario() -> list[types.CallToolResult]:
        async with stack.client() as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(scenario)


def test_reserved_names_are_never_upstream_tools(tmp_path: Path) -> None:
    """A metering policy lists llm_turn; the upstream's llm_turn is still neither listed nor
    called, and a call to it is denied and recorded like any unlisted tool."""
    stack = _stack(tmp_path, {"llm_turn": {"cost": 1}, "note": {"cost": 1}}, "--unlisted", "deny")
    assert "llm_turn" not in _listed(stack)
    assert "guardkit_admin" not in _listed(stack)
    turn, admin = _calls(stack, ("llm_turn", {}), ("guardkit_admin", {}))
    assert turn.is_error
    assert admin.is_error
    assert stack.ran("llm_turn") == []
    assert stack.ran("guardkit_admin") == []
    denied = stack.records("action_denied")
    assert [d["reason"]["code"] for d in denied] == ["tool_not_allowed", "tool_not_allowed"]
    assert len(stack.records("scar")) == 2


def test_a_name_listed_twice_is_hidden_and_its_calls_refused(tmp_path: Path) -> None:
    stack = _stack(tmp_path, {"write_note": {"cost": 1}})
    assert _listed(stack) == []
    (result,) = _calls(stack, ("write_note", {"text": "x" * 50, "extra": 1}))
    assert result.is_error
    assert "more than one tool named write_note" in result.content[0].text  # type: ignore[union-attr]
    assert stack.ran("write_note") == []


def test_server_name_namespaces_rules_and_the_ledger_records_the_upstream(tmp_path: Path) -> None:
    """Two servers behind one agent: only notes.note is allowed, so another server's note is
    not; each call records which upstream ran it."""
    stack = _stack(tmp_path, {"notes.note": {"cost": 1}}, "--server-name", "notes")
    other = (
        _stack(tmp_path / "other", {"notes.note": {"cost": 1}}, "--server-name", "evil")
        if (tmp_path / "other").mkdir() is None
        else None
    )
    assert other is not None
    assert _listed(stack) == ["note"]
    assert _listed(other) == []
    (ran,) = _calls(stack, ("note", {"text": "hi"}))
    assert not ran.is_error
    (refused,) = _calls(other, ("note", {"text": "hi"}))
    assert refused.is_error
    requested = stack.records("action_requested")
    assert requested[0]["tool"] == "notes.note"
    upstream = requested[0]["input"]["_guardkit"]["upstream"]
    assert upstream["server_name"] == "notes"
    assert upstream["server_info"] == {"name": "hostile", "version": "6.6.6"}
    assert HOSTILE in upstream["target"]
    assert other.ran("note") == []


def test_a_clients_guardkit_argument_is_refused(tmp_path: Path) -> None:
    stack = _stack(tmp_path, {"note": {"cost": 1}})
    forged = {"paths": {"path": "/srv/reports/ok.txt"}}
    (result,) = _calls(stack, ("note", {"text": "hi", "_guardkit": forged}))
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["code"] == "reserved_argument"
    assert stack.ran("note") == []


def test_the_policys_path_rules_apply_through_the_proxy(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    rule = {"cost": 1, "paths": {"path": {"allow": [str(reports)]}}}
    stack = _stack(tmp_path, {"read_file": rule})
    escape = str(reports / ".." / ".." / "etc" / "passwd")
    inside = str(reports / "q3.txt")
    shadow, dots, fine = _calls(
        stack,
        ("read_file", {"path": "/etc/shadow"}),
        ("read_file", {"path": escape}),
        ("read_file", {"path": inside}),
    )
    assert shadow.is_error
    assert dots.is_error
    assert not fine.is_error
    assert [line.split(" ", 1)[0] for line in stack.ran("read_file")] == ["read_file"]
    denied = stack.records("action_denied")
    assert [d["reason"]["code"] for d in denied] == ["path_denied", "path_denied"]


def _proxy(tmp_path: Path, policy: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guardkit", "mcp", "proxy", "--agent", "bot",
         "--policy", str(write_policy(tmp_path, policy)), "--db", str(tmp_path / "g.db"), *args],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL,
        env={**os.environ, "MCP_RUNS": str(tmp_path / "runs.txt")},
    )  # fmt: skip


def test_a_remote_upstream_with_path_rules_refuses_to_start(tmp_path: Path) -> None:
    policy = {
        "budget": 5,
        "tools": {"read_file": {"cost": 1, "paths": {"path": {"allow": ["/srv"]}}}},
    }
    done = _proxy(tmp_path, policy, "--upstream", "http://127.0.0.1:9/mcp")
    assert done.returncode != 0
    assert "tools.read_file.paths" in done.stderr
    assert "guard_server" in done.stderr


def test_provenance_rules_refuse_to_start_the_proxy(tmp_path: Path) -> None:
    policy = {
        "budget": 5,
        "tools": {"note": {"cost": 1, "provenance": {"text": {"require": "trusted"}}}},
    }
    done = _proxy(tmp_path, policy, "--", sys.executable, HOSTILE)
    assert done.returncode != 0
    assert "tools.note.provenance" in done.stderr


def test_an_upstream_that_never_answers_initialize_fails_the_proxy_clearly(tmp_path: Path) -> None:
    policy = {"budget": 5, "tools": {"note": {"cost": 1}}}
    os.environ["HOSTILE_SILENT"] = "1"
    try:
        started = time.monotonic()
        done = _proxy(tmp_path, policy, "--start-timeout", "1", "--", sys.executable, HOSTILE)
    finally:
        del os.environ["HOSTILE_SILENT"]
    assert done.returncode != 0
    assert "did not answer initialize within 1.0s" in done.stderr
    assert time.monotonic() - started < 30


def test_a_hung_call_fails_after_the_call_timeout(tmp_path: Path) -> None:
    stack = _stack(tmp_path, {"hang": {"cost": 1}}, "--call-timeout", "1")
    (result,) = _calls(stack, ("hang", {}))
    assert result.is_error
    (outcome,) = stack.records("outcome")
    assert (outcome["status"], outcome["fault"]) == ("failure", "upstream")
    assert stack.records("scar") == []  # the upstream's fault, not the agent's


def test_unrepresentable_requests_are_answered(tmp_path: Path) -> None:
    stack = _stack(tmp_path, {"note": {"cost": 1}})
    wire = Wire(stack)
    try:
        wire.handshake()
        big = '{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "note", '
        wire.send(big + '"arguments": {"n": ' + "9" * 5000 + "}}}")
        wire.send(big.replace('"id": 5', '"id": 6') + '"arguments": {"text": "\\ud800"}}}')
        wire.send('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "note",')
        huge = wire.answer(5, timeout=30)
        lone = wire.answer(6, timeout=30)
        long_name = wire.request(8, "tools/call", {"name": "n" * 200, "arguments": {}})
        ok = wire.request(9, "tools/call", {"name": "note", "arguments": {"text": "fine"}})
    finally:
        wire.close()
    assert huge["error"]["code"] in (types.INVALID_PARAMS, types.PARSE_ERROR)
    assert "error" in lone or lone["result"]["isError"]
    assert stack.ran("note") == ['note {"text": "fine"}']
    assert long_name["result"]["isError"]
    assert ok["result"]["content"] == [{"type": "text", "text": "done"}]
    denied = stack.records("action_denied")
    assert any(d["reason"]["code"] == "tool_not_allowed" for d in denied)
    assert stack.ran("n" * 200) == []
    assert json.dumps(denied)


def test_guard_server_applies_the_policys_path_rules(tmp_path: Path) -> None:
    from guardkit.plugins.mcp import guard_server
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from guardkit import Guard

    reports = tmp_path / "reports"
    reports.mkdir()
    read: list[str] = []
    server = MCPServer("files")

    @server.tool()
    def read_file(path: str) -> str:
        read.append(path)
        return "secret"

    guard = Guard(":memory:")
    rule = {"cost": 1, "paths": {"path": {"allow": [str(reports)]}}}
    guard.create_agent("files", {"budget": 10, "tools": {"read_file": rule}})
    guard_server(server, guard.agent("files"))
    escape = str(reports / ".." / ".." / "etc" / "passwd")

    async def scenario() -> list[types.CallToolResult]:
        async with Client(server) as client:
            return [
                await client.call_tool("read_file", {"path": path})
                for path in ("/etc/shadow", escape, str(reports / "q3.txt"))
            ]

    shadow, dots, fine = anyio.run(scenario)
    assert shadow.is_error
    assert dots.is_error
    assert not fine.is_error
    assert read == [str(reports / "q3.txt")]


def test_case_and_zero_width_twins_of_a_listed_name_are_denied_with_a_scar(tmp_path: Path) -> None:
    """Held: a name that only looks like a listed one is an unlisted tool, denied and scarred."""
    stack = _stack(tmp_path, {"note": {"cost": 1}}, "--unlisted", "deny")
    upper, zero_width = _calls(stack, ("Note", {"text": "a"}), ("no\u200bte", {"text": "b"}))
    assert upper.is_error
    assert zero_width.is_error
    assert stack.ran("Note") == []
    assert stack.ran("no\u200bte") == []
    assert len(stack.records("scar")) == 2
