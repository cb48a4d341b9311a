"""Raw JSON-RPC requests to the upstream, beside the SDK session that shares its connection.

The proxy forwards every ``tools/call`` to a stdio upstream this way: the client's params go out
as they came and the upstream's result comes back as the dict it sent, without the SDK client
session's typed request, per-request stream and double result validation (the proxy validates
the result once, for the client's protocol version, before it answers). The SDK session keeps
the rest of the connection: the handshake, notifications and every other request.

The transport hands every message it reads to ``settle`` first; answers to these requests
carry string ids (``guardkit-N``) that the SDK's dispatcher, whose ids are integers, never
mints.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Mapping
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT, ErrorData

__all__ = ["RawRequests"]

log = logging.getLogger("guardkit.mcp")

_CLOSED = ErrorData(code=CONNECTION_CLOSED, message="Connection closed")
_PREFIX = "guardkit-"
#: Writes one message to the upstream at once (raises ``ConnectionError`` once it is gone).
Send = Callable[[dict[str, Any]], None]


class RawRequests:
    """Requests written straight to one upstream connection, answered by id."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._waiting: dict[str, asyncio.Future[Mapping[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._closed = False

    async def request(
        self, method: str, params: Mapping[str, Any], timeout: float | None
    ) -> dict[str, Any]:
        """Send one request and return its raw result (raises ``MCPError`` as the SDK does)."""
        request_id = f"{_PREFIX}{next(self._ids)}"
        reply = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        try:
            self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            if timeout is None:
                answer = await reply
            else:
                with anyio.fail_after(timeout):
                    answer = await reply
        except TimeoutError:
            self._cancel(request_id, f"timed out after {timeout}s")
            raise MCPError(code=REQUEST_TIMEOUT, message=f"Request {method!r} timed out") from None
        except anyio.get_cancelled_exc_class():
            self._cancel(request_id, "caller cancelled")
            raise
        finally:
            del self._waiting[request_id]
        error = answer.get("error")
        if error is not None:
            raise MCPError.from_error_data(ErrorData.model_validate(error))
        result = answer.get("result")
        if not isinstance(result, dict):
            raise MCPError(code=CONNECTION_CLOSED, message="Malformed response from the server")
        return result

    def settle(self, message: Any) -> bool:
        """Hand a response to the request waiting for it; ``False`` if it isn't one of ours."""
        if not isinstance(message, dict) or "method" in message:
            return False
        request_id = message.get("id")
        if not isinstance(request_id, str) or not request_id.startswith(_PREFIX):
            return False
        reply = self._waiting.get(request_id)
        if reply is not None and not reply.done():
            reply.set_result(message)
        return True  # a late answer (timed out, cancelled) is ours too: dropped here

    def close(self) -> None:
        """The connection ended: every waiting request fails with ``Connection closed``."""
        self._closed = True
        for reply in self._waiting.values():
            if not reply.done():
                reply.set_result({"error": _CLOSED.model_dump()})

    def _write(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise MCPError.from_error_data(_CLOSED)
        try:
            self._send(message)
        except ConnectionError:
            raise MCPError.from_error_data(_CLOSED) from None

    def _cancel(self, request_id: str, reason: str) -> None:
        # As the SDK does for its own requests: tell the upstream to stop working on it.
        try:
            self._write(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": request_id, "reason": reason},
                }
            )
        except MCPError:
            log.debug("upstream gone before %s could be cancelled", request_id)
