"""The proxy's connection to its upstream MCP server: opened at start, reopened after it dies.

One connection at a time, in its own task (anyio scopes must be left by the task that entered
them). A stdio server that exits, or an HTTP session that ends, marks the connection dead when
its stream ends; the next request opens a new one (a new subprocess), so one crash costs only
the calls that were in flight. The upstream is spoken to in the handshake era (``initialize``),
which every MCP server, in any language and of any spec revision, understands.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.abc
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.session import IncomingMessage
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    CONNECTION_CLOSED,
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    Implementation,
    ServerCapabilities,
    ServerNotification,
)
from mcp.types import Request as McpRequest
from pydantic import BaseModel

from .child import child_stdio
from .raw import RawRequests

__all__ = ["DEFAULT_START_TIMEOUT", "Target", "Upstream", "describe"]

log = logging.getLogger("guardkit.mcp")

#: What the proxy can stand in front of: a command to run (stdio), a streamable-HTTP URL, or a
#: server object in this process (tests, docs).
Target = StdioServerParameters | str | Server[Any] | MCPServer
ResultT = TypeVar("ResultT", bound=BaseModel)
Notify = Callable[[ServerNotification], Awaitable[None]]
#: Seconds an upstream may take to start and answer ``initialize`` by default.
DEFAULT_START_TIMEOUT = 30.0
#: The prefix of the ``_meta`` keys MCP reserves for the protocol itself.
_RESERVED = "io.modelcontextprotocol/"


@dataclass(eq=False)
class _Live:
    """One open connection."""

    client: Client | None = None
    #: ``tools/call`` outside the SDK session (a stdio upstream; otherwise ``None``).
    raw: RawRequests | None = None
    dead: bool = False
    stop: anyio.Event = field(default_factory=anyio.Event)

    def end(self) -> None:
        self.dead = True


class _Watched:
    """A transport's read stream that marks its connection dead when the stream ends."""

    def __init__(self, inner: Any, live: _Live) -> None:
        self._inner = inner
        self._live = live

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._live.end()
            raise
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Watched:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@asynccontextmanager
async def _watched(transport: AbstractAsyncContextManager[Any], live: _Live) -> AsyncIterator[Any]:
    async with transport as (read, write):
        yield _Watched(read, live), write


@asynccontextmanager
async def _child(target: StdioServerParameters, live: _Live) -> AsyncIterator[Any]:
    async with child_stdio(target, live.end) as (read, write, raw):
        live.raw = raw
        yield read, write


class Upstream:
    """The upstream server, reconnected on demand; use as ``async with Upstream(target):``."""

    def __init__(
        self,
        target: Target,
        *,
        call_timeout: float | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        notify: Notify | None = None,
    ) -> None:
        self.target = target
        #: Seconds the upstream may take to start and answer ``initialize``.
        self.start_timeout = start_timeout
        #: Seconds one request may take upstream before it fails (``None``: no limit).
        self.call_timeout = call_timeout
        self._notify = notify
        self._live: _Live | None = None
        self._lock = anyio.Lock()
        self._group: anyio.abc.TaskGroup | None = None
        #: What the upstream said it serves when first connected, and who it said it is.
        self.capabilities = ServerCapabilities()
        self.server_info: Implementation | None = None
        #: The ``instructions`` of its ``initialize`` result (what it tells the model).
        self.instructions: str | None = None

    async def __aenter__(self) -> Upstream:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        try:
            # Connect now: a server that can't start fails the proxy at once, not its first call;
            # one that never answers ``initialize`` fails it after the call timeout.
            with anyio.fail_after(self.start_timeout):
                client = await self.client()
        except TimeoutError as exc:
            await self._close()
            raise ConnectionError(
                f"the upstream MCP server {describe(self.target)} did not answer initialize "
                f"within {self.start_timeout}s; check that the command after -- (or --upstream) "
                "is an MCP server, or raise --start-timeout"
            ) from exc
        except Exception as exc:
            await self._close()
            raise ConnectionError(
                f"could not start the upstream MCP server {describe(self.target)}: "
                f"{_leaf(exc)}; check the command after -- (or --upstream)"
            ) from exc
        except BaseException:
            await self._close()
            raise
        self.capabilities = client.server_capabilities
        self.server_info = getattr(client, "server_info", None)
        self.instructions = getattr(client, "instructions", None)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._close()

    async def _close(self) -> None:
        if self._live is not None:
            self._live.stop.set()
        assert self._group is not None
        await self._group.__aexit__(None, None, None)

    async def client(self) -> Client:
        """The open connection, opening a new one if the last one died."""
        live = await self._open()
        assert live.client is not None
        return live.client

    async def _open(self) -> _Live:
        live = self._live
        if live is not None and not live.dead:
            return live  # the common case, without the lock's checkpoints
        async with self._lock:
            live = self._live
            if live is None or live.dead:
                if live is not None:
                    log.warning("upstream MCP server went away; starting it again")
                    live.stop.set()
                live = _Live()
                assert self._group is not None
                await self._group.start(self._run, live)
                self._live = live
            return live

    def _connection(self, live: _Live) -> Client:
        target = self.target
        if isinstance(target, StdioServerParameters):
            transport: Any = (
                _watched(stdio_client(target), live)
                if sys.platform == "win32"
                else _child(target, live)
            )
        elif isinstance(target, str):
            transport = _watched(streamable_http_client(target), live)
        else:
            transport = target
        return Client(transport, mode="legacy", message_handler=self._on_message, cache=None)

    async def _run(self, live: _Live, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = False
        try:
            async with self._connection(live) as client:
                live.client = client
                started = True
                task_status.started()
                await live.stop.wait()
        except Exception:
            if not started:
                raise
            # Closing a connection whose server already crashed may complain; nothing to save.
            log.debug("upstream connection closed with an error", exc_info=True)
        finally:
            live.dead = True

    async def _on_message(self, message: IncomingMessage) -> None:
        if self._notify is not None and not isinstance(message, Exception):
            await self._notify(message)

    async def call_tool(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Forward one ``tools/call``'s params; the upstream's result, unvalidated (a dict)."""
        live = await self._open()
        if live.raw is None:  # an HTTP or in-process server: through the SDK session
            request = CallToolRequest(params=CallToolRequestParams.model_validate(params))
            result = await self.request(request, CallToolResult)
            return result.model_dump(by_alias=True, mode="json", exclude_none=True)
        meta = params.get("_meta")
        if isinstance(meta, Mapping):
            params = {k: v for k, v in params.items() if k != "_meta"}
            if kept := _kept_meta(meta):
                params["_meta"] = kept
        try:
            return await live.raw.request("tools/call", params, self.call_timeout)
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED:
                live.dead = True
            raise

    async def request(self, request: McpRequest[Any, Any], result_type: type[ResultT]) -> ResultT:
        """Send ``request`` upstream and return its typed result (raises ``MCPError``)."""
        live = await self._open()
        assert live.client is not None
        params = getattr(request, "params", None)
        if params is not None and params.meta:
            params = params.model_copy(update={"meta": _kept_meta(params.meta)})
            request = request.model_copy(update={"params": params})
        try:
            return await live.client.session.send_request(
                request, result_type, request_read_timeout_seconds=self.call_timeout
            )
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED:
                live.dead = True
            raise


def _kept_meta(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    # A 2026-era client's requests carry its protocol envelope in ``_meta`` (version, client info
    # and capabilities); the upstream connection has its own era and refuses a foreign envelope.
    # The rest of ``_meta`` (a progress token, the client's own keys) goes through.
    kept = {k: v for k, v in meta.items() if not k.startswith(_RESERVED)}
    return kept or None


def describe(target: Target) -> str:
    """The upstream in words: its command line, its URL, or its server class."""
    if isinstance(target, StdioServerParameters):
        return " ".join([target.command, *target.args])
    return target if isinstance(target, str) else type(target).__name__


def _leaf(exc: BaseException) -> str:
    # anyio wraps a failed start in exception groups: name the first real error.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
