"""A stdio upstream: the MCP server as a child process, read and written by the event loop.

Like the SDK's ``stdio_client`` (same environment, working directory, stderr and shutdown:
close stdin, wait, then end the process group), with one difference that matters on the hot
path: each line the server writes is parsed once, as it arrives, and either settles one of the
proxy's raw requests (``raw.RawRequests``) or goes to the SDK client session as the SDK's
``SessionMessage``; what the session sends is written as the SDK's transport writes it. The
SDK transport would relay every message through two more tasks and a per-request stream.

POSIX only (process groups); on Windows the proxy uses the SDK's ``stdio_client``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, cast

import anyio
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter
from pydantic import ValidationError
from pydantic_core import from_json, to_json

from .raw import RawRequests

__all__ = ["child_stdio"]

log = logging.getLogger("guardkit.mcp")

#: Seconds the server has to exit after its stdin closes, then after SIGTERM (as the SDK).
_GRACE = 2.0
_POLL = 0.01


@asynccontextmanager
async def child_stdio(
    params: StdioServerParameters, on_end: Callable[[], None]
) -> AsyncIterator[tuple[Any, Any, RawRequests]]:
    """Start the server; yield the SDK session's ``(read, write)`` streams and its raw lane.

    ``on_end`` runs when the server's stdout ends (it exited or crashed).
    """
    loop = asyncio.get_running_loop()
    child = _Child(params.encoding, params.encoding_error_handler, on_end)
    transport, _ = await loop.subprocess_exec(
        lambda: child,
        params.command,
        *params.args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=sys.stderr,
        env=get_default_environment() | (params.env or {}),
        cwd=params.cwd,
        start_new_session=True,
    )
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(child.pump)
            try:
                yield child.inbound, child.outbound, child.raw
            finally:
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(transport)
        child.end()


class _Child(asyncio.SubprocessProtocol):
    def __init__(self, encoding: str, errors: str, on_end: Callable[[], None]) -> None:
        self.raw = RawRequests(self.send)
        self._to_session, self.inbound = anyio.create_memory_object_stream[
            SessionMessage | Exception
        ](math.inf)
        self.outbound, self._from_session = anyio.create_memory_object_stream[SessionMessage](0)
        self._encoding = encoding
        self._errors = errors
        self._on_end = on_end
        self._stdin: asyncio.WriteTransport | None = None
        self._partial = b""
        self._ended = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Duck-typed: uvloop's transports don't derive from asyncio's classes.
        self._stdin = cast(asyncio.SubprocessTransport, transport).get_pipe_transport(0)  # type: ignore[assignment]

    # -- from the server ------------------------------------------------------------------

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        lines = data.split(b"\n")
        if len(lines) == 1:
            self._partial += data
            return
        lines[0] = self._partial + lines[0]
        self._partial = lines.pop()
        for line in lines:
            self._line(line)

    def _line(self, line: bytes) -> None:
        try:
            message = from_json(line.decode(self._encoding, self._errors))
            if self.raw.settle(message):
                return
            item: SessionMessage | Exception = SessionMessage(
                jsonrpc_message_adapter.validate_python(message, by_name=False)
            )
        except (ValueError, ValidationError) as exc:
            log.warning("the upstream MCP server wrote a line that is not JSON-RPC: %s", exc)
            item = exc
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._to_session.send_nowait(item)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        # stdout ended, or stdin can't be written (as the SDK's transport, the connection ends).
        self.end()

    def end(self) -> None:
        """The connection ended: fail what waits on it, close the session's stream."""
        if not self._ended:
            self._ended = True
            self.raw.close()
            self._to_session.close()
            self._on_end()

    # -- to the server --------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        data = to_json(message)  # UTF-8
        if self._encoding != "utf-8":
            data = data.decode().encode(self._encoding, self._errors)
        self._write(data + b"\n")

    async def pump(self) -> None:
        """Write the SDK session's messages, as its stdio transport would."""
        async with self._from_session:
            async for item in self._from_session:
                json = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    self._write(json.encode(self._encoding, self._errors) + b"\n")
                except ConnectionError:
                    self.end()  # as the SDK's transport: the session sees the connection end

    def _write(self, data: bytes) -> None:
        if self._ended or self._stdin is None or self._stdin.is_closing():
            raise ConnectionResetError("the upstream MCP server's stdin is closed")
        self._stdin.write(data)


async def _stop(transport: asyncio.SubprocessTransport) -> None:
    # The MCP shutdown sequence, as the SDK's stdio_client runs it.
    stdin = transport.get_pipe_transport(0)
    if stdin is not None:
        stdin.close()
    if not await _exited(transport):
        _signal_group(transport.get_pid(), signal.SIGTERM)
        if not await _exited(transport):
            _signal_group(transport.get_pid(), signal.SIGKILL)
            await _exited(transport)
    transport.close()


async def _exited(transport: asyncio.SubprocessTransport) -> bool:
    with anyio.move_on_after(_GRACE):
        while transport.get_returncode() is None:
            await anyio.sleep(_POLL)
    return transport.get_returncode() is not None


def _signal_group(pid: int, sig: int) -> None:
    # The server leads its own process group (start_new_session): end its children too.
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
