"""The proxy's lane for ``tools/call`` on a connection it serves over stdio.

Every message a client sends reaches the SDK's ``Server`` as usual, except a ``tools/call`` on
a handshake-era connection that has been initialized: that one is taken as it is read, handled
as its own task (``call``: the guard, the upstream, the report) and answered straight onto the
wire. Through the SDK server the same call would also pass its stream relays, middleware chain,
per-request session and a second validation and dump of the result: on stdio, as much time as
the call itself.

What the SDK server does for such a call, the lane does too: the request is validated against
the connection's protocol version (``INVALID_PARAMS`` if it doesn't fit), the result is shaped
for that version (``call`` returns it so), a failure in the proxy becomes a JSON-RPC error, and
a ``notifications/cancelled`` for a call in flight cancels it and leaves it unanswered. Anything
the lane isn't sure of (before the handshake, a 2026-era envelope) goes to the SDK server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeGuard

from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.types import PROTOCOL_VERSION_META_KEY, ErrorData, RequestId
from mcp_types.methods import validate_client_request
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

__all__ = ["Call", "ToolLane"]

log = logging.getLogger("guardkit.mcp")

#: ``(params, protocol_version) -> result`` already shaped for that version.
Call = Callable[[Mapping[str, Any], str], Awaitable[dict[str, Any]]]
#: Sends one JSON-RPC message (a dict) to the client.
Send = Callable[[dict[str, Any]], None]


class ToolLane:
    """Takes ``tools/call`` requests off one connection; see the module docstring.

    ``take`` sees every message the client sends, ``answered`` every one the SDK server sends
    back; each call runs as its own task (an asyncio task: a quarter of what an anyio task
    group's costs to start, on the path of every call) and is answered with ``send``.
    """

    def __init__(self, call: Call, send: Send) -> None:
        self._call = call
        self._send = send
        #: The connection's protocol version once its ``initialize`` was answered.
        self._version: str | None = None
        self._initialize: RequestId | None = None
        self._running: dict[RequestId, asyncio.Task[None]] = {}

    def take(self, message: Any) -> bool:
        """Whether the lane handles this client message (then the SDK server never sees it)."""
        if not isinstance(message, dict):
            return False
        method = message.get("method")
        if method == "tools/call" and self._version is not None:
            request_id, params = message.get("id"), message.get("params")
            if not _is_id(request_id) or not isinstance(params, dict) or _has_envelope(params):
                return False  # the SDK server answers what it must refuse
            key = coerce_request_id(request_id)
            if key in self._running:
                return False  # a duplicate id: the SDK server decides
            task = asyncio.get_running_loop().create_task(
                self._serve(request_id, params, self._version)
            )
            self._running[key] = task
            task.add_done_callback(lambda _: self._running.pop(key, None))
            return True
        if method == "initialize":
            self._initialize = message.get("id")
        elif method == "notifications/cancelled" and isinstance(message.get("params"), dict):
            cancelled = message["params"].get("requestId")
            running = self._running.get(coerce_request_id(cancelled)) if _is_id(cancelled) else None
            if running is not None:
                running.cancel()
                return True
        return False

    def answered(self, message: Any) -> None:
        """See what the SDK server sends: the ``initialize`` result opens the lane."""
        if self._initialize is not None and getattr(message, "id", None) == self._initialize:
            result = getattr(message, "result", None) or {}
            if result.get("protocolVersion") in HANDSHAKE_PROTOCOL_VERSIONS:
                self._version = result["protocolVersion"]

    async def aclose(self) -> None:
        """The client went away: stop the calls in flight (as the SDK server does)."""
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _serve(self, request_id: RequestId, params: dict[str, Any], version: str) -> None:
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        try:
            validate_client_request("tools/call", version, params)
            answer["result"] = await self._call(params, version)
        except asyncio.CancelledError:
            return  # a cancelled request is never answered
        except Exception as exc:  # noqa: BLE001 - the one exception-to-wire boundary
            answer["error"] = _error(exc).model_dump(mode="json", exclude_none=True)
        self._send(answer)


def _is_id(value: Any) -> TypeGuard[RequestId]:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _has_envelope(params: Mapping[str, Any]) -> bool:
    meta = params.get("_meta")
    return isinstance(meta, Mapping) and PROTOCOL_VERSION_META_KEY in meta


def _error(exc: Exception) -> ErrorData:
    error = handler_exception_to_error_data(exc)
    if error is None:
        log.exception("tools/call failed in the proxy")
        # What the SDK server answers for a handler that raised, on a handshake-era connection.
        error = ErrorData(code=0, message=str(exc))
    return error
