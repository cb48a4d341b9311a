"""After ``guardkit fix``, a denial never crashes an agent loop (issue 26, item 1).

A plain OpenAI-style agent (a ``while True:`` loop, a ``TOOLS = {name: fn}`` dict dispatched on
``tc.function.name``), with and without a ``try`` around the call, sync and async, goes through
the real CLI in subprocesses: ``guardkit fix --write``, ``guardkit scan``, then a run with the
SDK client replaced by a scripted one and a policy that denies the money transfer. The run ends
normally and the model reads the denial as the tool's result. Where fix cannot hand the call
to the guard (a call that is not ``F(**args)``), the re-scan reports GK302 at that call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
POLICY = """
budget = 100

[tools.llm_turn]
cost = 1

[tools.read_file]
cost = 0
"""

AGENT = """
import json
{imports}

client = {client}


{define}read_file(path: str) -> str:
    return "contents of " + path


{define}transfer_money(to: str, amount_cents: int) -> str:
    return f"sent {{amount_cents}} to {{to}}"


TOOLS = {{"read_file": read_file, "transfer_money": transfer_money}}
SCHEMAS = [{{"type": "function", "function": {{"name": n, "parameters": {{}}}}}} for n in TOOLS]


{define}main(task: str) -> list:
    messages = [{{"role": "user", "content": task}}]
    while True:
        reply = {wait}client.chat.completions.create(model="m", messages=messages, tools=SCHEMAS)
        msg = reply.choices[0].message
        messages.append({{"role": "assistant", "content": msg.content}})
        if not msg.tool_calls:
            return messages
        for tc in msg.tool_calls:
            fn = TOOLS[tc.function.name]
            args = json.loads(tc.function.arguments)
{dispatch}
            messages.append({{"role": "tool", "tool_call_id": tc.id, "content": result}})
"""
PLAIN = "            result = {wait}fn(**args)"
GUARDED = """            try:
                result = {wait}fn(**args)
            except Exception as exc:
                result = f"error: {{exc}}"
"""

HARNESS = """
import asyncio
import inspect
import json

import openai.types.chat

import agent


def reply(*calls):
    message = {"role": "assistant", "content": None if calls else "Paid nothing."}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)
        ]
    return openai.types.chat.ChatCompletion.model_validate({
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
    })


class Scripted:
    def __init__(self, replies, is_async):
        self.replies, self.is_async = replies, is_async
        self.chat = self.completions = self

    def create(self, **kwargs):
        answer = self.replies.pop(0)
        if not self.is_async:
            return answer
        async def later():
            return answer
        return later()


agent.client = Scripted(
    [reply(("read_file", {"path": "a.txt"}),
           ("transfer_money", {"to": "mallory", "amount_cents": 10_000})),
     reply()],
    is_async=inspect.iscoroutinefunction(agent.main),
)
result = agent.main("pay the invoice")
if inspect.iscoroutine(result):
    result = asyncio.run(result)
print(json.dumps([m["content"] for m in result if m["role"] == "tool"]))
"""


def _write_agent(root: Path, *, is_async: bool, caught: bool, dispatch: str | None = None) -> None:
    wait = "await " if is_async else ""
    body = dispatch or (GUARDED if caught else PLAIN)
    source = AGENT.format(
        imports="from openai import AsyncOpenAI" if is_async else "from openai import OpenAI",
        client="AsyncOpenAI()" if is_async else "OpenAI()",
        define="async def " if is_async else "def ",
        wait=wait,
        dispatch=body.format(wait=wait).rstrip("\n"),
    )
    (root / "agent.py").write_text(textwrap.dedent(source).lstrip())
    (root / "harness.py").write_text(HARNESS.lstrip())
    (root / "policy.toml").write_text(POLICY.lstrip())


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "guardkit"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GUARDKIT_", "OTEL_"))}
    env.update(
        GUARDKIT_AGENT="bot",
        GUARDKIT_DB=str(root / "guard.db"),
        GUARDKIT_POLICY=str(root / "policy.toml"),
        OPENAI_API_KEY="sk-test",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("caught", [False, True], ids=["no-try", "try"])
def test_after_fix_a_denial_is_the_tools_result(tmp_path: Path, is_async: bool, caught: bool):
    _write_agent(tmp_path, is_async=is_async, caught=caught)
    fixed = _cli("fix", "--write", "--no-dependency", ".", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    expected = "await guardkit.acall_tool(" if is_async else "guardkit.call_tool("
    assert expected in (tmp_path / "agent.py").read_text()
    rescan = _cli("scan", "--no-cache", ".", cwd=tmp_path)
    assert rescan.returncode == 0, rescan.stdout
    assert "Found 0 findings" in rescan.stdout

    run = subprocess.run(
        [sys.executable, "harness.py"],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    read, transfer = json.loads(run.stdout)
    assert read == "contents of a.txt"
    assert transfer.startswith("Denied by the policy guard: tool 'transfer_money' is not allowed.")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_where_fix_cannot_hand_the_call_over_the_rescan_reports_gk302(
    tmp_path: Path, is_async: bool
) -> None:
    # a call fix cannot reproduce exactly (not ``F(**args)``) of tools the fix guards
    dispatch = "            result = {wait}fn(*args.values())\n"
    _write_agent(tmp_path, is_async=is_async, caught=False, dispatch=dispatch)
    fixed = _cli("fix", "--write", "--no-dependency", ".", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "GK302" in fixed.stdout + fixed.stderr  # a follow-up of the fix itself
    rescan = _cli("scan", "--no-cache", "--select", "GK302", ".", cwd=tmp_path)
    assert rescan.returncode == 1
    line = next(
        n
        for n, text in enumerate((tmp_path / "agent.py").read_text().splitlines(), 1)
        if "fn(*args.values())" in text
    )
    assert f"agent.py:{line}:" in rescan.stdout
