"""``guardkit mcp proxy`` between the SDK's client and a real upstream server, end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import StdioServerParameters, types
from mcp.shared.exceptions import MCPError

from .conftest import POLICY, Stack, local_stack, remote_agent, tag

DENIED = "Denied by the policy guard"


def action_for(stack: Stack, tool: str, marker: str) -> str:
    (found,) = [
        r["action_id"]
        for r in stack.records("action_requested")
        if r["tool"] == tool and marker in str(r["input"])
    ]
    return str(found)


def outcome_of(stack: Stack, action_id: str) -> dict[str, Any]:
    (found,) = [r for r in stack.records("outcome") if r["action_id"] == action_id]
    return found


def text(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


def list_then_call(
    stack: Stack, name: str, arguments: dict[str, Any]
) -> tuple[list[str], types.CallToolResult]:
    """The tool names the client is shown, and the result of one call."""

    async def scenario() -> tuple[list[str], types.CallToolResult]:
        async with stack.client() as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            return listed, await client.call_tool(name, arguments)

    return anyio.run(scenario)


def test_allowed_call_runs_once_and_is_reported(stack: Stack) -> None:
    t = tag()

    async def scenario() -> types.CallToolResult:
        async with stack.client() as client:
            return await client.call_tool("echo", {"text": t})

    result = anyio.run(scenario)
    assert not result.is_error
    assert text(result) == t
    assert stack.ran(f"echo {t}") == [f"echo {t}"]
    assert outcome_of(stack, action_for(stack, "echo", t))["status"] == "success"


def test_denied_call_never_reaches_upstream_and_the_client_reads_why(stack: Stack) -> None:
    t = tag()

    listed, result = list_then_call(stack, "secret", {"tag": t})
    assert "echo" in listed
    assert "secret" not in listed  # absent from the policy: hidden by default
    assert result.is_error
    assert text(result).startswith(DENIED)
    assert "Do not retry" in text(result)
    assert result.structured_content is not None
    assert result.structured_content["code"] == "tool_not_allowed"
    assert stack.ran(f"secret {t}") == []


def test_pending_call_waits_for_an_approval_from_another_process(stack: Stack) -> None:
    path = f"/srv/{tag()}.txt"
    approved: list[str] = []

    async def scenario() -> types.CallToolResult:
        async with stack.client() as client, anyio.create_task_group() as group:

            async def approve() -> None:
                approved.append(
                    await anyio.to_thread.run_sync(stack.decide_when_pending, path, "approve")
                )

            group.start_soon(approve)
            return await client.call_tool("delete", {"path": path})

    result = anyio.run(scenario)
    assert not result.is_error
    assert text(result) == f"deleted {path}"
    assert stack.ran(f"delete {path}") == [f"delete {path}"]
    assert outcome_of(stack, approved[0])["status"] == "success"


def test_rejected_call_never_runs(stack: Stack) -> None:
    path = f"/srv/{tag()}.txt"

    async def scenario() -> types.CallToolResult:
        async with stack.client() as client, anyio.create_task_group() as group:

            async def reject() -> None:
                await anyio.to_thread.run_sync(
                    stack.decide_when_pending, path, "reject", "--reason", "not on a Friday"
                )

            group.start_soon(reject)
            return await client.call_tool("delete", {"path": path})

    result = anyio.run(scenario)
    assert result.is_error
    assert text(result).startswith(DENIED)
    assert "not on a Friday" in text(result)
    assert stack.ran(f"delete {path}") == []


def test_an_error_result_is_a_failure_outcome(stack: Stack) -> None:
    t = tag()

    async def scenario() -> types.CallToolResult:
        async with stack.client() as client:
            return await client.call_tool("broken", {"tag": t})

    result = anyio.run(scenario)
    assert result.is_error
    assert "disk full" in text(result)  # the upstream's own error, passed through
    outcome = outcome_of(stack, action_for(stack, "broken", t))
    assert outcome["status"] == "failure"
    assert "disk full" in outcome["detail"]


def test_malformed_arguments_are_refused_before_the_guard_and_never_crash_it(
    stack: Stack,
) -> None:
    t = tag()

    async def scenario() -> tuple[types.CallToolResult, MCPError, types.CallToolResult]:
        async with stack.client() as client:
            wrong = await client.call_tool("echo", {"text": 5, "note": t})
            with pytest.raises(MCPError) as raw:
                # Not even a JSON object: the SDK's own validation answers, the proxy lives on.
                await client.session._dispatcher.send_raw_request(
                    "tools/call", {"name": "echo", "arguments": ["not", "an", "object"]}
                )
            return wrong, raw.value, await client.call_tool("echo", {"text": t})

    wrong, raw, after = anyio.run(scenario)
    assert wrong.is_error
    assert "invalid arguments for echo" in text(wrong)
    assert "Nothing was done" in text(wrong)
    assert raw.error.code == types.INVALID_PARAMS
    assert text(after) == t
    assert stack.ran(f"echo {t}") == [f"echo {t}"]
    (requested,) = [r for r in stack.records("action_requested") if t in str(r["input"])]
    assert requested["action_id"] == action_for(stack, "echo", t)
    assert requested["input"]["text"] == t
    assert set(requested["input"]) == {"text", "_guardkit"}  # and which upstream ran it
    assert "upstream" in requested["input"]["_guardkit"]


def test_resources_and_prompts_pass_through_untouched(stack: Stack) -> None:
    async def scenario() -> tuple[Any, ...]:
        async with stack.client() as client:
            return (
                await client.list_resources(),
                await client.read_resource("notes://today"),
                await client.list_prompts(),
                await client.get_prompt("review", {"topic": "the proxy"}),
            )

    resources, read, prompts, prompt = anyio.run(scenario)
    assert [str(r.uri) for r in resources.resources] == ["notes://today"]
    assert read.contents[0].text == "buy milk"
    assert [p.name for p in prompts.prompts] == ["review"]
    assert prompt.messages[0].content.text == "Please review the proxy."
    assert stack.records("action_requested") == [] or all(
        r["tool"] not in ("notes://today", "review") for r in stack.records("action_requested")
    )


def test_tools_list_changed_passes_through(stack: Stack) -> None:
    t = tag()
    seen: list[str] = []

    async def scenario() -> None:
        changed = anyio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                seen.append(message.method)
                changed.set()

        async with stack.client(mode="legacy", message_handler=on_message) as client:
            await client.list_tools()
            await client.call_tool("grow", {"tag": t})
            with anyio.fail_after(20):
                await changed.wait()

    anyio.run(scenario)
    assert seen == ["notifications/tools/list_changed"]


def test_tools_list_changed_reaches_a_2026_era_listen_stream(stack: Stack) -> None:
    t = tag()

    async def scenario() -> Any:
        async with stack.client() as client, client.listen(tools_list_changed=True) as events:
            assert client.protocol_version == "2026-07-28"
            await client.call_tool("grow", {"tag": t})
            with anyio.fail_after(20):
                return await events.__anext__()

    event = anyio.run(scenario)
    assert type(event).__name__ == "ToolsListChanged"


def test_upstream_killed_mid_call_fails_that_call_and_the_next_one_works(tmp_path: Path) -> None:
    stack = local_stack(tmp_path, POLICY)
    t = tag()

    async def scenario() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with stack.client() as client:
            return await client.call_tool("crash", {"tag": t}), await client.call_tool(
                "echo", {"text": t}
            )

    crashed, after = anyio.run(scenario)
    assert crashed.is_error
    assert "Connection closed" in text(crashed)
    assert outcome_of(stack, action_for(stack, "crash", t))["status"] == "failure"
    assert text(after) == t
    assert stack.ran(f"echo {t}") == [f"echo {t}"]


def test_a_hung_upstream_call_times_out_and_the_proxy_keeps_serving(tmp_path: Path) -> None:
    stack = local_stack(tmp_path, POLICY, "--call-timeout", "0.3")
    t = tag()

    async def scenario() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with stack.client() as client:
            return await client.call_tool("sleep", {"seconds": 1.5}), await client.call_tool(
                "echo", {"text": t}
            )

    hung, after = anyio.run(scenario)
    assert hung.is_error
    assert "timed out" in text(hung)
    assert outcome_of(stack, action_for(stack, "sleep", "1.5"))["status"] == "failure"
    assert text(after) == t


def test_unlisted_deny_lists_every_tool_and_denies_the_unlisted(tmp_path: Path) -> None:
    stack = local_stack(tmp_path, POLICY, "--unlisted", "deny")
    t = tag()

    listed, result = list_then_call(stack, "secret", {"tag": t})
    assert "secret" in listed
    assert result.is_error
    assert text(result).startswith(DENIED)
    assert stack.ran(f"secret {t}") == []


def remote_stdio_stack(tmp_path: Path, guard: tuple[str, Path], policy: dict[str, Any]) -> Stack:
    """A proxy over stdio that asks a guard server (an ``AgentClient``), upstream over stdio."""
    stack = local_stack(tmp_path, policy)
    agent_id, token = remote_agent(guard, policy)
    assert isinstance(stack.target, StdioServerParameters)
    args = list(stack.target.args)
    args[args.index("--agent") + 1] = agent_id
    args[args.index("--db") : args.index("--db") + 2] = ["--guard", guard[0], "--token", token]
    stack.target = stack.target.model_copy(update={"args": args})
    stack.agent_id, stack.db, stack.kind = agent_id, guard[1], "stdio-remote"
    return stack


@pytest.fixture(params=["stdio-local", "stdio-remote"])
def own_stack(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A stack with an agent of its own, built from a policy the test gives."""

    def build(policy: dict[str, Any]) -> Stack:
        if request.param == "stdio-local":
            return local_stack(tmp_path, policy)
        return remote_stdio_stack(tmp_path, request.getfixturevalue("guard_server"), policy)

    return build


def test_fifty_concurrent_calls_on_one_budget_never_overspend(own_stack: Any) -> None:
    stack: Stack = own_stack({"budget": 20, "scar_limit": 1_000, "tools": {"count": {"cost": 1}}})
    t = tag()

    async def scenario() -> list[types.CallToolResult]:
        results: list[types.CallToolResult] = []
        async with stack.client() as client, anyio.create_task_group() as group:

            async def one(n: int) -> None:
                results.append(await client.call_tool("count", {"tag": f"{t}-{n}"}))

            for n in range(50):
                group.start_soon(one, n)
        return results

    results = anyio.run(scenario)
    ran = stack.ran(f"count {t}")
    assert len(results) == 50
    assert len(ran) == 20
    assert sum(not r.is_error for r in results) == 20
    assert all(text(r).startswith(DENIED) for r in results if r.is_error)


def test_a_terminated_agent_is_refused_and_told_to_stop(own_stack: Any) -> None:
    stack: Stack = own_stack(POLICY)
    t = tag()

    async def scenario() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with stack.client() as client:
            before = await client.call_tool("echo", {"text": t})
            await anyio.to_thread.run_sync(
                lambda: stack.cli("terminate", stack.agent_id, "--reason", "runaway", "--by", "bob")
            )
            return before, await client.call_tool("echo", {"text": t + "-after"})

    before, after = anyio.run(scenario)
    assert text(before) == t
    assert after.is_error
    assert text(after).startswith(DENIED)
    assert after.structured_content is not None
    assert after.structured_content["terminated"] is True
    assert stack.ran(f"echo {t}-after") == []


@pytest.mark.parametrize(
    "command", [[sys.executable, "-c", "raise SystemExit(4)"], ["/nonexistent/mcp-server"]]
)
def test_an_upstream_that_does_not_start_fails_the_proxy_clearly(tmp_path: Path, command) -> None:
    stack = local_stack(tmp_path, POLICY)
    assert isinstance(stack.target, StdioServerParameters)
    args = stack.target.args
    args[args.index("--") + 1 :] = command
    done = subprocess.run(
        [sys.executable, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "could not start the upstream MCP server" in done.stderr
    assert "Traceback" not in done.stderr
