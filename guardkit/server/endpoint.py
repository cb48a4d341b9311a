"""The wrapper every route runs in: authenticate, check the role, run, map errors to JSON.

Errors leave as ``{"error": message, "code": code}`` with the error's status; anything
unexpected is logged with its traceback on the server and answered with a bare 500 ``internal``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from guardkit.errors import GuardError, InvalidInput, TooManyWaits
from guardkit.server.auth import Access, Caller
from guardkit.server.bodies import BODIES
from guardkit.server.state import ServerState
from guardkit.server.wire import error_response, header, json_response, read_body, validate

__all__ = ["Ctx", "endpoint"]

log = logging.getLogger("guardkit.server")


@dataclass(frozen=True, slots=True)
class Ctx:
    request: Request
    state: ServerState
    caller: Caller | None

    @property
    def agent_id(self) -> str:
        return str(self.request.path_params["agent_id"])

    @property
    def action_id(self) -> str:
        return str(self.request.path_params["action_id"])

    async def body(self, schema: str, *, empty_ok: bool = False) -> dict[str, Any]:
        raw = await read_body(self.request, self.state.limits.max_body)
        return validate(raw, BODIES[schema], empty_ok=empty_ok)

    def query_int(self, name: str) -> int | None:
        text = self.request.query_params.get(name)
        if text is None or text == "":
            return None
        try:
            return int(text)
        except ValueError:
            raise InvalidInput(f"query parameter {name!r} must be an integer") from None


Handler = Callable[[Ctx], Awaitable[Any]]


def endpoint(access: Access | None, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A Starlette endpoint around ``handler``; ``access=None`` means no token is needed."""

    async def run(request: Request) -> Response:
        state: ServerState = request.app.state.guardkit
        try:
            caller = None
            if access is not None:
                caller = state.tokens.identify(header(request, b"authorization"))
                access.check(caller, request.path_params.get("agent_id"))
            request.scope["guardkit.role"] = caller.role.value if caller else "none"
            result = await handler(Ctx(request, state, caller))
        except GuardError as exc:
            response = error_response(exc.status, exc.code, exc.message)
            if isinstance(exc, TooManyWaits):
                response.headers["retry-after"] = str(max(1, math.ceil(exc.retry_after)))
            return response
        except Exception:
            log.exception("internal error on %s %s", request.method, request.url.path)
            return error_response(500, "internal", "internal error")
        return result if isinstance(result, Response) else json_response(result)

    run.__name__ = handler.__name__
    return run
