"""``guardkit mcp proxy`` on the wire: raw JSON-RPC lines where an SDK client would hide them.

The proxy answers a ``tools/call`` on an initialized handshake-era stdio connection itself
(``plugins/mcp/lane.py``) and leaves every other message to the SDK's server; these tests check
that the two answer exactly as the SDK server alone would, on pipes and on a terminal.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import StdioServerParameters, types

from .conftest import POLICY, Stack, local_stack, tag

RAW_UPSTREAM = str(Path(__file__).with_name("raw_upstream.py"))
INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "wire-test", "version": "1"},
}


class Wire:
    """The proxy of ``stack`` started by hand: JSON-RPC lines in on stdin, out on stdout.

    ``terminal=True`` makes stdin a pseudo-terminal instead of a pipe (line mode without echo,
    so that end-of-file can be typed).
    """

    def __init__(self, stack: Stack, *, terminal: bool = False) -> None:
        assert isinstance(stack.target, StdioServerParameters)
        target = stack.target
        self._pty = os.openpty() if terminal else None
        if self._pty is not None:
            attributes = termios.tcgetattr(self._pty[1])
            attributes[3] &= ~termios.ECHO
            termios.tcsetattr(self._pty[1], termios.TCSANOW, attributes)
        self.process = subprocess.Popen(
            [target.command, *target.args],
            stdin=self._pty[1] if self._pty is not None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=target.env,
            cwd=target.cwd,
        )
        self._buffer = b""
        #: The id of every message the proxy sent, in order; its responses by id.
        self.answered: list[Any] = []
        self._responses: dict[Any, dict[str, Any]] = {}

    def send(self, message: dict[str, Any] | str) -> None:
        line = (message if isinstance(message, str) else json.dumps(message)) + "\n"
        if self._pty is not None:
            os.write(self._pty[0], line.encode())
        else:
            assert self.process.stdin is not None
            self.process.stdin.write(line.encode())
            self.process.stdin.flush()

    def request(self, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return self.answer(request_id)

    def answer(self, request_id: int, timeout: float = 60) -> dict[str, Any]:
        """The response to ``request_id`` (answers may come in any order)."""
        deadline = time.monotonic() + timeout
        while True:
            for message in self._lines():
                self.answered.append(message.get("id"))
                if "method" not in message:
                    self._responses[message.get("id")] = message
            if request_id in self._responses:
                return self._responses.pop(request_id)
            left = deadline - time.monotonic()
            assert left > 0, f"no answer to {request_id}"
            assert self.process.stdout is not None
            ready, _, _ = select.select([self.process.stdout], [], [], left)
            if ready:
                chunk = os.read(self.process.stdout.fileno(), 1 << 16)
                assert chunk, f"the proxy exited ({self.process.wait()})"
                self._buffer += chunk

    def _lines(self) -> list[dict[str, Any]]:
        *lines, self._buffer = self._buffer.split(b"\n")
        return [json.loads(line) for line in lines]

    def handshake(self) -> None:
        assert "result" in self.request(0, "initialize", INITIALIZE)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> int:
        if self._pty is not None:
            os.write(self._pty[0], bytes([termios.tcgetattr(self._pty[1])[6][termios.VEOF][0]]))
        elif self.process.stdin is not None:
            self.process.stdin.close()
        try:
            return self.process.wait(30)
        finally:
            if self.process.stdout is not None:
                self.process.stdout.close()
            if self._pty is not None:
                os.close(self._pty[0])
                os.close(self._pty[1])


def call(request_id: int, name: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def outcome(stack: Stack, tool: str, marker: str) -> dict[str, Any]:
    (action,) = [
        r["action_id"]
        for r in stack.records("action_requested")
        if r["tool"] == tool and marker in str(r["input"])
    ]
    (found,) = [r for r in stack.records("outcome") if r["action_id"] == action]
    return found


@pytest.mark.parametrize("terminal", [False, True], ids=["pipes", "terminal"])
def test_a_call_before_the_handshake_gets_the_sdk_servers_answer(
    tmp_path: Path, terminal: bool
) -> None:
    stack, t = local_stack(tmp_path, POLICY), tag()
    wire = Wire(stack, terminal=terminal)
    try:
        early = wire.request(1, "tools/call", {"name": "echo", "arguments": {"text": t}})
        wire.handshake()
        later = wire.request(2, "tools/call", {"name": "echo", "arguments": {"text": t}})
    finally:
        assert wire.close() == 0
    assert early["error"]["code"] == types.INVALID_PARAMS
    assert later["result"]["content"] == [{"type": "text", "text": t}]
    assert stack.ran(f"echo {t}") == [f"echo {t}"]  # only the call after the handshake


def test_a_2026_envelope_on_a_handshake_connection_is_refused_as_the_sdk_does(
    tmp_path: Path,
) -> None:
    stack, t = local_stack(tmp_path, POLICY), tag()
    wire = Wire(stack)
    try:
        wire.handshake()
        wire.send(call(1, "echo", {"text": t}, **{"io.modelcontextprotocol/protocolVersion": "x"}))
        refused = wire.answer(1)
    finally:
        wire.close()
    assert refused["error"]["code"] == types.INVALID_REQUEST
    assert stack.ran(f"echo {t}") == []


def test_malformed_requests_are_answered_or_dropped_and_the_proxy_serves_on(
    tmp_path: Path,
) -> None:
    stack, t = local_stack(tmp_path, POLICY), tag()
    wire = Wire(stack)
    try:
        wire.handshake()
        wire.send("this is not JSON")
        wire.send('[{"jsonrpc": "2.0", "id": 7, "method": "ping"}]')
        no_name = wire.request(1, "tools/call", {"arguments": {"text": t}})
        listed = wire.request(2, "tools/call", {"name": "echo", "arguments": ["a", "list"]})
        fine = wire.request(3, "tools/call", {"name": "echo", "arguments": {"text": t}})
    finally:
        wire.close()
    assert no_name["error"]["code"] == types.INVALID_PARAMS
    assert listed["error"]["code"] == types.INVALID_PARAMS
    assert fine["result"]["content"] == [{"type": "text", "text": t}]
    assert 7 not in wire.answered


def test_a_cancelled_call_is_never_answered_and_its_outcome_is_a_failure(tmp_path: Path) -> None:
    stack = local_stack(tmp_path, POLICY)
    seconds, t = 1.5 + int(tag()[:6], 16) / 1e9, tag()
    wire = Wire(stack)
    try:
        wire.handshake()
        wire.send(call(1, "sleep", {"seconds": seconds}))
        time.sleep(0.5)  # the call is upstream by now
        cancel = {"requestId": 1, "reason": "the user changed their mind"}
        wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        after = wire.request(2, "tools/call", {"name": "echo", "arguments": {"text": t}})
        time.sleep(seconds)  # long enough for a late answer to 1 to show up
        wire.request(3, "ping", {})
    finally:
        wire.close()
    assert after["result"]["content"] == [{"type": "text", "text": t}]
    assert 1 not in wire.answered
    failed = outcome(stack, "sleep", str(seconds))
    assert (failed["status"], failed["detail"]) == ("failure", "cancelled by the client")


@pytest.mark.parametrize("kind", ["stdio-local", "http-remote"])
def test_a_large_call_and_result_cross_the_proxy_whole(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    stack = (
        local_stack(tmp_path, POLICY)
        if kind == "stdio-local"
        else request.getfixturevalue("http_stack")
    )
    text = tag() + "é" * 50_000 + "x" * 250_000  # pipe buffers many times over, both ways

    async def scenario() -> types.CallToolResult:
        async with stack.client() as client:
            return await client.call_tool("echo", {"text": text})

    result = anyio.run(scenario)
    assert not result.is_error
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == text


def test_an_upstream_that_answers_nonsense_fails_the_call_and_is_reported(
    tmp_path: Path,
) -> None:
    policy = {"budget": 100, "scar_limit": 100, "tools": {"bad": {"cost": 1}, "good": {"cost": 1}}}
    stack = local_stack(tmp_path, policy)
    assert isinstance(stack.target, StdioServerParameters)
    args = stack.target.args
    args[args.index("--") + 1 :] = [sys.executable, RAW_UPSTREAM]
    t = tag()

    async def scenario() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with stack.client(mode="legacy") as client:
            return (
                await client.call_tool("bad", {"tag": t}),
                await client.call_tool("good", {"tag": t}),
            )

    bad, good = anyio.run(scenario)
    assert bad.is_error
    assert isinstance(bad.content[0], types.TextContent)
    assert bad.content[0].text.startswith("Error: the tool's server failed: ValidationError")
    assert outcome(stack, "bad", t)["status"] == "failure"
    assert not good.is_error  # the line that wasn't JSON-RPC cost nothing
    assert outcome(stack, "good", t)["status"] == "success"


def test_a_client_that_reads_its_answers_late_gets_every_one(tmp_path: Path) -> None:
    stack, t = local_stack(tmp_path, POLICY), tag()
    texts = [f"{t}-{n}-" + "x" * 200_000 for n in range(10)]  # megabytes of answers unread
    wire = Wire(stack)
    try:
        wire.handshake()
        # Written from a thread: while stdout is full the proxy stops reading stdin.
        writer = threading.Thread(
            target=lambda: [wire.send(call(n, "echo", {"text": s})) for n, s in enumerate(texts)]
        )
        writer.start()
        time.sleep(1)
        answers = [wire.answer(n) for n in range(len(texts))]
        writer.join()
    finally:
        wire.close()
    assert [a["result"]["content"][0]["text"] for a in answers] == texts
