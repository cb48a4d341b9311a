"""Serving one client over this process's stdin and stdout: the SDK's server, and the lane.

The SDK's ``stdio_server()`` reads stdin and writes stdout through worker threads and relays
every message through two more tasks; on stdio that is most of what a proxied call costs. When
both descriptors are pipes or sockets (how MCP clients start a server) the event loop reads and
writes them itself: each line read is parsed once, handed to the ``tools/call`` lane
(``lane.ToolLane``) or, like everything else, validated into the SDK's ``SessionMessage`` for
its ``Server``; the server's own messages go out as the SDK's stdio transport writes them. On
anything else (a terminal, a regular file, Windows) the SDK's ``stdio_server()`` serves as is.

Either way fd 0 and fd 1 are diverted while serving (to the null device and stderr), as the SDK
does: stray reads see EOF, stray prints miss the wire.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import stat
import sys
from typing import Any

import anyio
from mcp.server import InitializationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_PARAMS, PARSE_ERROR, jsonrpc_message_adapter
from pydantic import ValidationError
from pydantic_core import from_json, to_json

from .lane import Call, ToolLane

__all__ = ["serve_stdio"]

log = logging.getLogger("guardkit.mcp")

#: The longest integer a request may carry (Python's own limit for converting digits).
_DIGITS_MAX = 4300
#: Seconds the last answers may take to reach a client that has stopped sending.
_FLUSH_TIMEOUT = 1.0


async def serve_stdio(server: Server[Any], options: InitializationOptions, call: Call) -> None:
    """Serve ``server`` to the client on stdin/stdout until it disconnects."""
    if not _pipes(0, 1):
        async with stdio_server() as (read, write):
            await server.run(read, write, options)
        return
    wire_in, wire_out = _claim()
    wire = _Wire()
    lane = wire.lane = ToolLane(call, wire.send)  # in place before the first line is read
    try:
        async with anyio.create_task_group() as group:
            await wire.connect(wire_in, wire_out)
            group.start_soon(wire.pump)
            await server.run(wire.inbound, wire.outbound, options)
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await lane.aclose()
            await wire.aclose()
        _release(wire_in, wire_out)


def _pipes(*fds: int) -> bool:
    if sys.platform == "win32":
        return False
    try:
        modes = [os.fstat(fd).st_mode for fd in fds]
    except OSError:
        return False
    return all(stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) for mode in modes)


def _claim() -> tuple[int, int]:
    import fcntl

    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


def _release(wire_in: int, wire_out: int) -> None:
    sys.stdout.flush()
    for fd, wire in ((0, wire_in), (1, wire_out)):
        os.set_blocking(wire, True)  # the pipe may be shared with whoever started us
        os.dup2(wire, fd)
        os.close(wire)


class _Wire(asyncio.Protocol):
    """The client's pipes: lines in (to the lane or the SDK server), messages out."""

    def __init__(self) -> None:
        self.lane: ToolLane | None = None
        self._to_server, self.inbound = anyio.create_memory_object_stream[
            SessionMessage | Exception
        ](math.inf)
        self.outbound, self._from_server = anyio.create_memory_object_stream[SessionMessage](0)
        self._partial = b""
        self._ended = False
        self._reader: asyncio.ReadTransport | None = None
        self._writer: asyncio.WriteTransport | None = None
        self._flow = _Flow(self)

    async def connect(self, wire_in: int, wire_out: int) -> None:
        loop = asyncio.get_running_loop()
        # The transports own (and close) duplicates; the originals put fd 0 and fd 1 back.
        source = os.fdopen(os.dup(wire_in), "rb", buffering=0)
        sink = os.fdopen(os.dup(wire_out), "wb", buffering=0)
        self._reader, _ = await loop.connect_read_pipe(lambda: self, source)
        self._writer, _ = await loop.connect_write_pipe(lambda: self._flow, sink)

    async def aclose(self) -> None:
        """Close both pipes, once what was written has gone out (for a second at most)."""
        if self._reader is not None:
            self._reader.close()
        if self._writer is not None:
            with anyio.move_on_after(_FLUSH_TIMEOUT):
                while self._writer.get_write_buffer_size() and not self._writer.is_closing():
                    await anyio.sleep(0.01)
            self._writer.close()

    # -- in -----------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        lines = data.split(b"\n")
        if len(lines) == 1:
            self._partial += data
            return
        lines[0] = self._partial + lines[0]
        self._partial = lines.pop()
        for line in lines:
            self._line(line)

    def _line(self, line: bytes) -> None:
        # As the SDK's transport reads: UTF-8 with replacement, a bad line is an Exception item.
        text = line.decode("utf-8", errors="replace")
        try:
            message = from_json(text)
        except ValueError as exc:
            if not self._refuse(text, exc):
                self._deliver(exc)
            return
        if self.lane is not None and self.lane.take(message):
            return
        try:
            parsed = jsonrpc_message_adapter.validate_python(message, by_name=False)
        except ValidationError as exc:
            self._deliver(exc)
            return
        self._deliver(SessionMessage(parsed))

    def _refuse(self, text: str, exc: ValueError) -> bool:
        """Answer a request that cannot be represented (a 5000-digit number, a lone surrogate)
        with ``-32602`` for its id, or a line that is not JSON with ``-32700``: a client never
        waits for an answer that will not come. ``False``: leave it to the SDK server."""
        if not text.strip():
            return False
        try:
            loose = json.loads(text, parse_int=_small_int, parse_constant=str)
        except ValueError:
            self.send(_error_answer(None, PARSE_ERROR, f"Parse error: {exc}"))
            return True
        request_id = loose.get("id") if isinstance(loose, dict) else None
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return False  # a notification or a message without a usable id: nothing to answer
        self.send(
            _error_answer(
                request_id,
                INVALID_PARAMS,
                f"the request cannot be represented (nothing was done): {str(exc)[:200]}",
            )
        )
        return True

    def _deliver(self, item: SessionMessage | Exception) -> None:
        try:
            self._to_server.send_nowait(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("the SDK server stopped reading; dropped %r", item)

    def pause_reading(self) -> None:
        if self._reader is not None and not self._reader.is_closing():
            self._reader.pause_reading()

    def resume_reading(self) -> None:
        if self._reader is not None and not self._reader.is_closing():
            self._reader.resume_reading()

    def eof_received(self) -> bool:
        self._end()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _end(self) -> None:
        if not self._ended:
            self._ended = True
            self._to_server.close()

    # -- out ----------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Write one message (the lane's answers) at once."""
        self._write(to_json(message) + b"\n")

    async def pump(self) -> None:
        """Write the SDK server's messages, in order, as its stdio transport would."""
        async with self._from_server:
            async for item in self._from_server:
                if self.lane is not None:
                    self.lane.answered(item.message)
                json = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                self._write(json.encode("utf-8") + b"\n")
                await self._flow.drain()

    def _write(self, data: bytes) -> None:
        if self._writer is None or self._writer.is_closing():
            log.debug("the MCP client closed stdout; dropped a message")
            return
        self._writer.write(data)


def _small_int(digits: str) -> int | str:
    # Ids are small integers; a number too long to represent is kept as its digits.
    return int(digits) if len(digits) <= _DIGITS_MAX else digits


def _error_answer(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


class _Flow(asyncio.Protocol):
    """stdout's flow control: while the client doesn't read what it is sent (the pipe's buffer
    is over its high mark), ``drain`` waits and nothing more is read from it."""

    def __init__(self, wire: _Wire) -> None:
        self._wire = wire
        self._ready = asyncio.Event()
        self._ready.set()

    def pause_writing(self) -> None:
        self._ready.clear()
        self._wire.pause_reading()

    def resume_writing(self) -> None:
        self._ready.set()
        self._wire.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._ready.set()

    async def drain(self) -> None:
        await self._ready.wait()
