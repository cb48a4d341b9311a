"""The ASGI application: Lineage's routes, the OpenAPI document, the console, access log.

``create_app(state)`` builds it over an opened ``ServerState``; the lifespan starts the
long-poll watcher and, on shutdown, lets the group-commit writer finish every queued decision
before the store is closed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from guardkit.server.console import console_routes
from guardkit.server.openapi import openapi_document
from guardkit.server.routes import api_routes
from guardkit.server.state import ServerState
from guardkit.server.wire import error_response, json_response

__all__ = ["create_app"]

access_log = logging.getLogger("guardkit.server.access")

_SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


class AccessLog:
    """One structured line per request: method, path, status, role, duration; never a token."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        logged = False

        async def send_wrapper(message: Message) -> None:
            nonlocal status, logged
            if message["type"] == "http.response.start":
                status = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], *_SECURITY_HEADERS]
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                # Logged before the last byte leaves, so the line exists once a client has it.
                logged = True
                _log(scope, status, started)
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            if not logged:
                _log(scope, status, started)


def _log(scope: Scope, status: int, started: float) -> None:
    if access_log.isEnabledFor(logging.INFO):
        access_log.info(
            json.dumps(
                {
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "role": scope.get("guardkit.role", "none"),
                    "ms": round((time.perf_counter() - started) * 1000, 3),
                    "client": (scope.get("client") or ("", 0))[0],
                }
            )
        )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "bad_request")
    return error_response(exc.status_code, code, str(exc.detail))


async def _openapi(request: Request) -> Response:
    return json_response(openapi_document())


def create_app(state: ServerState) -> Starlette:
    """The guard server over ``state`` (see ``ServerState.open``)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        state.watch.start()
        if state.notifier is not None:
            state.notifier.start()
        try:
            yield {}
        finally:
            state.watch.stop()
            state.close()

    routes = [*api_routes(), Route("/openapi.json", _openapi, methods=["GET"]), *console_routes()]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[Middleware(AccessLog)],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.guardkit = state
    return app
